"""Firestore (native mode) over raw gRPC (``google.firestore.v1``), one collection per cell.

The same RPCs and request messages as the client driver (``_client``): ``Commit`` of a
``set`` write (a whole document), ``BatchGetDocuments`` for reads, ``RunQuery`` with the
client's implicit orders for document cursors, ``BeginTransaction``/``BatchGetDocuments``/
``Commit`` of a merge write (``Rollback`` on failure), and an ``increment`` transform for
increments. Auto ids are made here like the client's (20 random characters). Clean-up is
the client driver's (not measured).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, ClassVar, Final

from google.cloud.firestore_v1.services.firestore.transports.base import FirestoreTransport
from google.cloud.firestore_v1.types import common as _common
from google.cloud.firestore_v1.types import document as _document
from google.cloud.firestore_v1.types import firestore as _fs
from google.cloud.firestore_v1.types import query as _query
from google.cloud.firestore_v1.types import write as _write
from google.protobuf import empty_pb2

from keyramp.backends._base import QuerySpec, Record, Target
from keyramp.backends._rpc import GrpcBackend, Method, Service, field_path, filter_key, routing
from keyramp.backends.firestore._client import FirestoreBackend
from keyramp.core import Key, UnsupportedOperation, UsageError, key_text

__all__ = ["FirestoreGrpcBackend", "value_pb"]

_BatchGetRequest: Final = _fs.BatchGetDocumentsRequest.pb()
_RunQueryRequest: Final = _fs.RunQueryRequest.pb()
_CommitRequest: Final = _fs.CommitRequest.pb()
_BeginRequest: Final = _fs.BeginTransactionRequest.pb()
_RollbackRequest: Final = _fs.RollbackRequest.pb()
_Write: Final = _write.Write.pb()
_FieldTransform: Final = _write.DocumentTransform.FieldTransform.pb()
_Document: Final = _document.Document.pb()
_Value: Final = _document.Value.pb()
_DocumentMask: Final = _common.DocumentMask.pb()
_StructuredQuery: Final = _query.StructuredQuery.pb()
_Collection: Final = _query.StructuredQuery.CollectionSelector.pb()
_Filter: Final = _query.StructuredQuery.Filter.pb()
_FieldFilter: Final = _query.StructuredQuery.FieldFilter.pb()
_UnaryFilter: Final = _query.StructuredQuery.UnaryFilter.pb()
_FieldRef: Final = _query.StructuredQuery.FieldReference.pb()
_Order: Final = _query.StructuredQuery.Order.pb()
_Cursor: Final = _query.Cursor.pb()

_Op = _query.StructuredQuery.FieldFilter.Operator
_OPS: Final = {"==": int(_Op.EQUAL), "<": int(_Op.LESS_THAN), "<=": int(_Op.LESS_THAN_OR_EQUAL),
               ">": int(_Op.GREATER_THAN), ">=": int(_Op.GREATER_THAN_OR_EQUAL), "!=": int(_Op.NOT_EQUAL)}
#: Filters after which the client orders by the filtered field (for document cursors).
_INEQUALITY: Final = frozenset({"<", "<=", ">", ">=", "!="})
#: ``field == None`` / ``!= None``: Firestore's unary null tests, not a comparison.
_NULL_TESTS: Final = {"==": int(_query.StructuredQuery.UnaryFilter.Operator.IS_NULL),
                      "!=": int(_query.StructuredQuery.UnaryFilter.Operator.IS_NOT_NULL)}
_ASC: Final = int(_query.StructuredQuery.Direction.ASCENDING)
_DESC: Final = int(_query.StructuredQuery.Direction.DESCENDING)
_DOC_ID: Final = "__name__"
_AUTO_ID_CHARS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

SERVICE: Final = Service(host=FirestoreTransport.DEFAULT_HOST, scopes=FirestoreTransport.AUTH_SCOPES,
                         emulator_metadata=(("authorization", "Bearer owner"),))
_P: Final = "/google.firestore.v1.Firestore/"
BATCH_GET: Final = Method(_P + "BatchGetDocuments", _BatchGetRequest, _fs.BatchGetDocumentsResponse.pb(), stream=True)
RUN_QUERY: Final = Method(_P + "RunQuery", _RunQueryRequest, _fs.RunQueryResponse.pb(), stream=True)
COMMIT: Final = Method(_P + "Commit", _CommitRequest, _fs.CommitResponse.pb())
BEGIN_TRANSACTION: Final = Method(_P + "BeginTransaction", _BeginRequest, _fs.BeginTransactionResponse.pb())
ROLLBACK: Final = Method(_P + "Rollback", _RollbackRequest, empty_pb2.Empty)


def value_pb(value: Any) -> Any:
    """A field ``Value`` as the client encodes bytes, str, bool, int, float and None."""
    if isinstance(value, bytes):
        return _Value(bytes_value=value)
    if isinstance(value, str):
        return _Value(string_value=value)
    if isinstance(value, bool):
        return _Value(boolean_value=value)
    if isinstance(value, int):
        return _Value(integer_value=value)
    if isinstance(value, float):
        return _Value(double_value=value)
    if value is None:
        return _Value(null_value=0)
    raise UsageError(f"the grpc driver cannot store a {type(value).__name__} value in firestore")


def _number(value: Any) -> int | float:
    kind = value.WhichOneof("value_type")
    if kind == "integer_value":
        return int(value.integer_value)
    if kind == "double_value":
        return float(value.double_value)
    return 0


def _order(field: str, direction: int) -> Any:
    return _Order(field=_FieldRef(field_path=field), direction=direction)


class FirestoreGrpcBackend(GrpcBackend):
    name: ClassVar[str] = "firestore"
    service: ClassVar[Service] = SERVICE
    methods: ClassVar[tuple[Method, ...]] = (BATCH_GET, RUN_QUERY, COMMIT, BEGIN_TRANSACTION, ROLLBACK)

    prepare = FirestoreBackend.prepare
    cleanup = FirestoreBackend.cleanup
    remaining = FirestoreBackend.remaining

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._database = f"projects/{target.project}/databases/{target.database}"
        self._parent = f"{self._database}/documents"
        self._prefix = f"{self._parent}/{target.namespace}/"
        resource = ("google-cloud-resource-prefix", self._database)
        self._md = self.rpc.metadata(resource, routing(database=self._database))
        self._md_query = self.rpc.metadata(resource, routing(parent=self._parent))
        self._from = [_Collection(collection_id=target.namespace)]
        self._random = random.Random()
        #: ``where`` filters per ``filter_key``: built once, only ever copied into requests.
        self._wheres: dict[tuple[Any, ...], Any] = {}
        #: Last document of the last ``query``: pass it back as ``QuerySpec.start_after`` (BP-QRY-2).
        self.last_cursor: Any = None

    def _name(self, key: Key) -> str:
        return self._prefix + key_text(key)

    def _set(self, name: str, record: Record) -> Any:
        return _Write(update=_Document(name=name, fields={k: value_pb(v) for k, v in record.items()}))

    def _commit(self, writes: list[Any], transaction: bytes = b"") -> Any:
        request = _CommitRequest(database=self._database, writes=writes, transaction=transaction)
        return self.rpc.unary(COMMIT, request, self._md)

    def _get(self, names: list[str], transaction: bytes = b"") -> list[Any]:
        # ``transaction`` is one of a oneof: set only when there is one (an empty one is "invalid").
        request = (_BatchGetRequest(database=self._database, documents=names, transaction=transaction) if transaction
                   else _BatchGetRequest(database=self._database, documents=names))
        return [r.found for r in self.rpc.stream(BATCH_GET, request, self._md) if r.HasField("found")]

    def _run(self, query: Any) -> list[Any]:
        request = _RunQueryRequest(parent=self._parent, structured_query=query)
        return [r.document for r in self.rpc.stream(RUN_QUERY, request, self._md_query) if r.HasField("document")]

    # -- operations --------------------------------------------------------------------------
    def insert(self, key: Key | None, record: Record) -> Key:
        used = key if key is not None else "".join(self._random.choices(_AUTO_ID_CHARS, k=20))
        self._commit([self._set(self._name(used), record)])
        return used

    def read(self, key: Key) -> bool:
        return bool(self._get([self._name(key)]))

    def update(self, key: Key, record: Record) -> None:
        self._commit([self._set(self._name(key), record)])

    def delete(self, key: Key) -> None:
        self._commit([_Write(delete=self._name(key))])

    def scan(self, start: Key, limit: int) -> int:
        query = _StructuredQuery(from_=self._from, order_by=[_order(_DOC_ID, _ASC)],
                                 start_at=_Cursor(values=[_Value(reference_value=self._name(start))], before=True))
        query.limit.value = limit
        return len(self._run(query))

    def query(self, spec: QuerySpec) -> int:
        if spec.ancestor is not None:
            raise UnsupportedOperation("firestore has no ancestor queries (use a subcollection)")
        query = _StructuredQuery(from_=self._from)
        if spec.field is not None:
            query.where.CopyFrom(self._where(spec.field, spec.op, spec.value))
        orders = []
        if spec.order_by:
            orders.append((spec.order_by.lstrip("-"), _DESC if spec.order_by.startswith("-") else _ASC))
        if spec.keys_only:
            query.select.fields.append(_FieldRef(field_path=_DOC_ID))
        elif spec.projection:
            query.select.fields.extend(_FieldRef(field_path=field_path(p)) for p in spec.projection)
        if spec.offset:
            query.offset = spec.offset
        cursor = spec.start_after
        if cursor is not None:
            values = self._cursor(cursor, spec, orders)
            query.start_at.CopyFrom(_Cursor(values=values))  # before = False: start after
        query.order_by.extend(_order(field_path(f) if f != _DOC_ID else f, d) for f, d in orders)
        query.limit.value = spec.limit
        docs = self._run(query)
        self.last_cursor = docs[-1] if docs else None
        return len(docs)

    def _where(self, field: str, op: str, value: Any) -> Any:
        """The ``where`` filter for ``field op value`` (cached: copy it, never change it)."""
        key = filter_key(field, op, value)
        where = self._wheres.get(key) if key is not None else None
        if where is None:
            where = self._make_where(field, op, value)
            if key is not None:
                self._wheres[key] = where
        return where

    @staticmethod
    def _make_where(field: str, op: str, value: Any) -> Any:
        if op not in _OPS:
            raise UsageError(f"unknown query operator {op!r}")
        ref = _FieldRef(field_path=field_path(str(field)))
        if value is None and op in ("==", "!="):
            return _Filter(unary_filter=_UnaryFilter(op=_NULL_TESTS[op], field=ref))
        return _Filter(field_filter=_FieldFilter(field=ref, op=_OPS[op], value=value_pb(value)))

    def _cursor(self, cursor: Any, spec: QuerySpec, orders: list[tuple[str, int]]) -> list[Any]:
        """Cursor values, adding to ``orders`` what the client adds for the same cursor.

        A document (``last_cursor``): the client's implicit orders (the inequality field, then
        the document name, in the last order's direction) and that document's values. A bare
        value: after that value of the ordered field, or after that document id.
        """
        if isinstance(cursor, _Document):
            direction = orders[-1][1] if orders else _ASC
            if spec.field is not None and spec.op in _INEQUALITY and spec.field not in (f for f, _ in orders):
                orders.append((spec.field, direction))
            orders.append((_DOC_ID, direction))
            values = []
            for field, _ in orders[: len(cursor.fields) + 1]:
                if field == _DOC_ID:
                    values.append(_Value(reference_value=cursor.name))
                elif field in cursor.fields:
                    values.append(cursor.fields[field])
                else:
                    raise ValueError(f"the cursor document has no field {field!r} to continue the ordering after")
            return values
        if not orders:
            orders.append((_DOC_ID, _ASC))
            return [_Value(reference_value=self._name(cursor))]
        return [value_pb(cursor)]

    def batch_write(self, items: Sequence[tuple[Key, Record]]) -> None:
        self._commit([self._set(self._name(k), r) for k, r in items])

    def batch_read(self, keys: Sequence[Key]) -> int:
        return len(self._get([self._name(k) for k in keys]))

    def transaction(self, key: Key, field: str, amount: int) -> None:
        name = self._name(key)
        transaction = self.rpc.unary(BEGIN_TRANSACTION, _BeginRequest(database=self._database), self._md).transaction
        try:
            found = self._get([name], transaction)
            current = _number(found[0].fields[field]) if found and field in found[0].fields else 0
            # set(..., merge=True) of one field: the field is written, the rest of the document kept.
            write = _Write(update=_Document(name=name, fields={field: value_pb(current + amount)}),
                           update_mask=_DocumentMask(field_paths=[field_path(field)]))
            self._commit([write], transaction)
        except BaseException:
            # Rolled back on any error, as the client's transactional wrapper does; the first error wins.
            try:
                self.rpc.unary(ROLLBACK, _RollbackRequest(database=self._database, transaction=transaction), self._md)
            except Exception:  # noqa: BLE001 - the first error is what gets recorded
                pass
            raise

    def increment(self, key: Key, field: str, amount: int) -> None:
        # set({field: Increment(amount)}, merge=True): an empty mask and one server-side transform.
        write = _Write(update=_Document(name=self._name(key)), update_mask=_DocumentMask(),
                       update_transforms=[_FieldTransform(field_path=field_path(field),
                                                          increment=_Value(integer_value=amount))])
        self._commit([write])

    def allocate_keys(self, n: int) -> list[Key]:
        # Firestore auto ids are random and made client-side: no round trip.
        return ["".join(self._random.choices(_AUTO_ID_CHARS, k=20)) for _ in range(n)]
