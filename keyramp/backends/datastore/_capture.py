"""A Datastore (or Datastore-mode) workload's captured requests (``backends._capture``) as the accesses
the store sees.

``Commit`` carries the mutations: ``insert`` creates an entity, ``update`` sets one that exists,
``upsert`` sets one whether or not it exists, ``delete``. Every property is indexed unless it says
``exclude_from_indexes`` (Datastore's built-in single-property indexes): each value one entry of
that property's index, an array one per element, an embedded entity one per subproperty.
``Lookup`` reads entities; ``RunQuery`` and ``RunAggregationQuery`` are queries. A key is its path's
ids as keyramp writes them (an ancestor path: the parent, then the child).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from keyramp.backends._capture import CapturedAccess, index_entry, value_text
from keyramp.core import key_sort_text

__all__ = ["decode"]

_SERVICE = "/google.datastore.v1.Datastore/"
_KINDS = {"insert": "insert", "update": "write", "upsert": "upsert", "delete": "delete"}


def _key(key: Any) -> str:
    parts = [el.name if el._pb.WhichOneof("id_type") == "name" else int(el.id) for el in key.path]
    return key_sort_text(tuple(parts) if len(parts) > 1 else parts[0]) if parts else ""  # type: ignore[arg-type]


def _scalar(value: Any) -> Any:
    pb = value._pb
    kind = pb.WhichOneof("value_type")
    if kind == "timestamp_value":
        ts = pb.timestamp_value
        return datetime.fromtimestamp(ts.seconds + ts.nanos / 1e9, UTC)
    if kind in ("integer_value", "double_value", "string_value", "boolean_value", "blob_value"):
        return getattr(pb, kind)
    return None


def _entries(name: str, value: Any) -> Iterator[tuple[str, str]]:
    """(property path, value text) of every index entry one property's value makes."""
    if value.exclude_from_indexes:
        return
    kind = value._pb.WhichOneof("value_type")
    if kind == "entity_value":
        for sub, inner in value.entity_value.properties.items():
            yield from _entries(f"{name}.{sub}", inner)
    elif kind == "array_value":
        for item in value.array_value.values:
            text = None if item.exclude_from_indexes else value_text(_scalar(item))
            if text is not None:
                yield name, text
    else:
        text = value_text(_scalar(value))
        if text is not None:
            yield name, text


def _mutation(mutation: Any) -> CapturedAccess | None:
    which = mutation._pb.WhichOneof("operation")  # the proto's oneof, not a keyramp operation
    if which is None:
        return None
    if which == "delete":
        return CapturedAccess(kind="delete", key=_key(mutation.delete))
    entity = getattr(mutation, which)
    key = _key(entity.key)
    index = tuple(index_entry(f, text, key) for name, value in entity.properties.items()
                  for f, text in _entries(name, value))
    return CapturedAccess(kind=_KINDS[which], key=key, index=index)


def decode(calls: Sequence[tuple[str, Any]], namespace: str) -> list[CapturedAccess]:
    """The entities ``calls`` (one operation's requests) wrote and read, in order."""
    out: list[CapturedAccess] = []
    for method, request in calls:
        name = method.removeprefix(_SERVICE)
        if name == "Commit":
            out.extend(a for a in (_mutation(m) for m in request.mutations) if a is not None)
        elif name == "Lookup":
            out.extend(CapturedAccess(kind="read", key=_key(k)) for k in request.keys)
        elif name in ("RunQuery", "RunAggregationQuery"):
            out.append(CapturedAccess(kind="query", key=""))
    return out
