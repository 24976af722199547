"""A Firestore workload's captured requests (``backends._capture``) as the accesses the store sees.

``Commit`` carries the writes: a document set (``update`` without a precondition, merged or not:
an upsert), created (``current_document.exists = false``), updated (``exists = true``),
changed by field transforms alone (an increment, a server timestamp) or deleted. Every
written field is indexed unless the database exempts it (single-field indexes are Firestore's
default, [index overview](https://firebase.google.com/docs/firestore/query-data/index-overview)):
each scalar value is one entry of that field's index, an array one entry per element, a map
one per subfield; a server timestamp is the request's time. ``BatchGetDocuments`` and
``GetDocument`` read documents; ``RunQuery`` is a query (many documents, not one).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from keyramp.backends._capture import CapturedAccess, index_entry, value_text

__all__ = ["decode"]

_SERVICE = "/google.firestore.v1.Firestore/"


def _key(name: str, namespace: str) -> str:
    """A document's key: its path under ``documents/``, the cell's collection left out (its ids are the keys
    keyramp's own preload and reads use)."""
    path = name.split("/documents/", 1)[-1]
    return path[len(namespace) + 1:] if path.startswith(namespace + "/") else path


def _scalar(value: Any) -> Any:
    """A ``Value``'s Python value (proto-plus), for the scalar kinds an index orders."""
    kind = value._pb.WhichOneof("value_type")
    if kind == "timestamp_value":
        ts = value._pb.timestamp_value
        return datetime.fromtimestamp(ts.seconds + ts.nanos / 1e9, UTC)
    if kind in ("integer_value", "double_value", "string_value", "boolean_value", "bytes_value"):
        return getattr(value._pb, kind)
    return None


def _entries(field: str, value: Any) -> Iterator[tuple[str, str]]:
    """(field path, value text) of every index entry one field's value makes."""
    kind = value._pb.WhichOneof("value_type")
    if kind == "map_value":
        for name, sub in value.map_value.fields.items():
            yield from _entries(f"{field}.{name}", sub)
    elif kind == "array_value":
        for item in value.array_value.values:
            text = value_text(_scalar(item))
            if text is not None:
                yield field, text
    else:
        text = value_text(_scalar(value))
        if text is not None:
            yield field, text


def _write(write: Any, namespace: str, now: datetime) -> CapturedAccess | None:
    pb = write._pb
    which = pb.WhichOneof("operation")  # the proto's oneof, not a keyramp operation
    if which == "delete":
        return CapturedAccess(kind="delete", key=_key(write.delete, namespace))
    if which == "transform":  # a transform alone (older clients)
        return CapturedAccess(kind="transform", key=_key(write.transform.document, namespace))
    if which != "update":
        return None
    doc = write.update
    key = _key(doc.name, namespace)
    index = [index_entry(f, text, key) for name, value in doc.fields.items() for f, text in _entries(name, value)]
    stamp = value_text(now)
    for t in write.update_transforms:
        if t._pb.WhichOneof("transform_type") == "set_to_server_value" and stamp is not None:
            index.append(index_entry(t.field_path, stamp, key))
    precondition = pb.current_document
    if precondition.HasField("exists"):
        kind = "write" if precondition.exists else "insert"
    elif not doc.fields and len(write.update_transforms):
        kind = "transform"  # set(..., merge=True) of transforms only: an increment in place
    else:
        kind = "upsert"  # set(), merged or not: creates the document or overwrites it
    return CapturedAccess(kind=kind, key=key, index=tuple(index))


def decode(calls: Sequence[tuple[str, Any]], namespace: str) -> list[CapturedAccess]:
    """The documents ``calls`` (one operation's requests) wrote and read, in order."""
    out: list[CapturedAccess] = []
    now = datetime.fromtimestamp(time.time(), UTC)
    for method, request in calls:
        name = method.removeprefix(_SERVICE)
        if name == "Commit":
            out.extend(a for a in (_write(w, namespace, now) for w in request.writes) if a is not None)
        elif name == "BatchGetDocuments":
            out.extend(CapturedAccess(kind="read", key=_key(d, namespace)) for d in request.documents)
        elif name == "GetDocument":
            out.append(CapturedAccess(kind="read", key=_key(request.name, namespace)))
        elif name in ("RunQuery", "RunAggregationQuery", "PartitionQuery", "ListDocuments"):
            out.append(CapturedAccess(kind="query", key=""))
    return out
