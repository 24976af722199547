"""Firestore (native mode) requests as store-model operations (the store proxy reads a copy;
docs/fidelity.md).

What is modelled:

* **Documents.** A document's key is its path under ``documents/`` with NUL between segments
  (Firestore orders documents segment by segment). Each document a request writes is one
  access to the ``documents`` space and one unit (its per-document write limit).
* **Index entries.** Firestore indexes every field of a document in a single-field index
  unless the field is exempted, and exemptions live on the service, not in the write: the
  proxy is told them (``DecodeOptions.exempt``, the profile's ``indexed = false`` fields).
  Each indexed scalar adds one entry to ``index:<collection>.<field path>`` whose key is the
  value in Firestore's order (numbers together, then timestamps, strings, bytes, references)
  then the document key; a map adds its subfields, an array one entry per element (its
  array-contains entries). Firestore also keeps a descending entry per scalar: it mirrors the
  ascending one (the same rate, the other end of the range) and is not offered twice. A write
  with an update mask indexes the masked fields; a transform indexes its field at the value
  the server sets (``REQUEST_TIME``: the proxy's clock, so server timestamps append) or, for
  increments and array ops whose result the proxy cannot know, at the document's own place.
* **Reads**: ``GetDocument`` and ``BatchGetDocuments``, one read per document.

Queries, listens, the ``Write`` stream, transaction bookkeeping and admin calls pass through.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

from google.cloud.firestore_v1.types import document as _document
from google.cloud.firestore_v1.types import firestore as _fs
from google.cloud.firestore_v1.types import write as _write

from keyramp.backends._fidelity import DecodeOptions, ModelTypes, Rpc, RpcTable, timestamp_order, value_order

__all__ = ["document_key", "rpcs", "value_key"]

_P: Final = "/google.firestore.v1.Firestore/"
_Commit: Final = _fs.CommitRequest.pb()
_BatchWrite: Final = _fs.BatchWriteRequest.pb()
_BatchGet: Final = _fs.BatchGetDocumentsRequest.pb()
_GetDocument: Final = _fs.GetDocumentRequest.pb()
_CreateDocument: Final = _fs.CreateDocumentRequest.pb()
_UpdateDocument: Final = _fs.UpdateDocumentRequest.pb()
_DeleteDocument: Final = _fs.DeleteDocumentRequest.pb()
_REQUEST_TIME: Final = int(_write.DocumentTransform.FieldTransform.ServerValue.REQUEST_TIME)
_DOCS: Final = "documents"
_MARKER: Final = "/documents/"


def document_key(name: str) -> bytes:
    """``projects/p/databases/d/documents/c/id`` -> ``b"c\\0id"``: Firestore's document order."""
    at = name.find(_MARKER)
    path = name[at + len(_MARKER):] if at >= 0 else name
    return path.replace("/", "\0").encode()


def _collection(key: bytes) -> str:
    """The collection (group) a document key belongs to: its second-to-last segment."""
    parts = key.split(b"\0")
    return parts[-2].decode() if len(parts) >= 2 else ""


def value_key(value: Any) -> bytes:
    """A scalar ``Value`` as bytes in Firestore's value order (type first, then the value)."""
    return value_order(value, bytes_field="bytes_value", ref_field="reference_value", ref_key=document_key)


def _index_values(path: str, value: Any, out: list[tuple[str, bytes]], exempt: frozenset[str]) -> None:
    if path in exempt:
        return
    kind = value.WhichOneof("value_type")
    if kind == "map_value":
        for name, sub in value.map_value.fields.items():
            _index_values(f"{path}.{name}", sub, out, exempt)
    elif kind == "array_value":
        out.extend((path, value_key(element)) for element in value.array_value.values)
    else:
        out.append((path, value_key(value)))


def _transform_key(transform: Any, doc: bytes) -> bytes:
    if transform.WhichOneof("transform_type") == "set_to_server_value" and \
            transform.set_to_server_value == _REQUEST_TIME:
        ns = time.time_ns()
        return timestamp_order(ns // 1_000_000_000, ns % 1_000_000_000)
    return b"\x00" + doc  # an increment's or array op's result is the server's: the document's place


class _Writes:
    """The accesses, units and kind of a list of ``Write`` messages."""

    def __init__(self, access: Callable[..., Any], exempt: frozenset[str]) -> None:
        self._access = access
        self._exempt = exempt

    def add(self, write: Any, accesses: list[Any], units: list[bytes]) -> str:
        """Adds one write's accesses and unit; returns its kind (write, delete or transform)."""
        access, exempt = self._access, self._exempt
        operation = write.WhichOneof("operation")
        if operation == "delete":
            doc = document_key(write.delete)
            accesses.append(access(_DOCS, doc, True))
            units.append(doc)
            return "delete"
        target = write.update if operation == "update" else write.transform
        name = target.document if operation == "transform" else target.name
        doc = document_key(name)
        accesses.append(access(_DOCS, doc, True))
        units.append(doc)
        collection = _collection(doc)
        values: list[tuple[str, bytes]] = []
        if operation == "update":
            fields = target.fields
            if write.HasField("update_mask"):
                for path in write.update_mask.field_paths:
                    top = path.split(".", 1)[0].strip("`")
                    if top in fields:
                        _index_values(top, fields[top], values, exempt)
            else:
                for field, value in fields.items():
                    _index_values(field, value, values, exempt)
        transforms = write.update_transforms if operation == "update" else target.field_transforms
        for transform in transforms:
            if transform.field_path not in exempt:
                values.append((transform.field_path, _transform_key(transform, doc)))
        for path, key in values:
            accesses.append(access(f"index:{collection}.{path}", key + b"\0" + doc, True))
        if operation == "transform" or (not target.fields and transforms):
            return "transform"
        return "write"


def rpcs(options: DecodeOptions, types: ModelTypes) -> RpcTable:
    """Firestore's data API; the decoders build ``types``' accesses and operations."""
    access, op = types.access, types.op
    writes = _Writes(access, options.exempt)

    def many(items: Any) -> Any:
        accesses: list[Any] = []
        units: list[bytes] = []
        kinds = {writes.add(write, accesses, units) for write in items}
        if not accesses:  # a commit with no writes (a read-only transaction's): nothing to model
            return None
        return op(tuple(accesses), tuple(units), kinds.pop() if len(kinds) == 1 else "write")

    def commit(data: bytes) -> Any:
        return many(_Commit.FromString(data).writes)

    def batch_write(data: bytes) -> Any:
        return many(_BatchWrite.FromString(data).writes)

    def create(data: bytes) -> Any:
        request = _CreateDocument.FromString(data)
        name = f"{request.parent}/{request.collection_id}/{request.document_id or '~auto'}"
        return many([_write.Write.pb()(update=_document.Document.pb()(name=name, fields=request.document.fields))])

    def update(data: bytes) -> Any:
        request = _UpdateDocument.FromString(data)
        write = _write.Write.pb()(update=request.document)
        if request.HasField("update_mask"):
            write.update_mask.CopyFrom(request.update_mask)
        return many([write])

    def delete(data: bytes) -> Any:
        return many([_write.Write.pb()(delete=_DeleteDocument.FromString(data).name)])

    def reads(names: Any) -> Any:
        return op(tuple(access(_DOCS, document_key(name), False) for name in names), (), "read")

    table = [
        Rpc(path=_P + "Commit", what="write", decode=commit),
        Rpc(path=_P + "BatchWrite", what="write", decode=batch_write),
        Rpc(path=_P + "CreateDocument", what="write", decode=create),
        Rpc(path=_P + "UpdateDocument", what="write", decode=update),
        Rpc(path=_P + "DeleteDocument", what="write", decode=delete),
        Rpc(path=_P + "BatchGetDocuments", what="read", response_stream=True,
            decode=lambda data: reads(_BatchGet.FromString(data).documents)),
        Rpc(path=_P + "GetDocument", what="read", decode=lambda data: reads([_GetDocument.FromString(data).name])),
        Rpc(path=_P + "BeginTransaction", what="transaction"),
        Rpc(path=_P + "Rollback", what="transaction"),
        Rpc(path=_P + "RunQuery", what="query", response_stream=True),
        Rpc(path=_P + "RunAggregationQuery", what="query", response_stream=True),
        Rpc(path=_P + "ExecutePipeline", what="query", response_stream=True),
        Rpc(path=_P + "PartitionQuery", what="query"),
        Rpc(path=_P + "ListDocuments", what="query"),
        Rpc(path=_P + "ListCollectionIds", what="query"),
        Rpc(path=_P + "Listen", what="query", request_stream=True, response_stream=True),
        Rpc(path=_P + "Write", what="write", request_stream=True, response_stream=True),
    ]
    return {rpc.path: rpc for rpc in table}
