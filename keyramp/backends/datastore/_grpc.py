"""Cloud Datastore and Firestore in Datastore mode over raw gRPC (``google.datastore.v1``).

The same RPCs and request messages as the client driver (``_client``): ``Commit`` with an
``upsert`` (``insert`` for a key the store allocates), ``Lookup`` (following ``deferred``
keys), ``RunQuery`` paged like the client's iterator (limit, offset re-sent until skipped,
cursors), ``BeginTransaction``/``Lookup``/``Commit`` with a best-effort ``Rollback``, and
``AllocateIds``. Entities are built as ``Entity`` messages directly, with the cell's
unindexed fields excluded from indexes. Clean-up is the client driver's (not measured).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Final

from google.cloud.datastore_v1.services.datastore.transports.base import DatastoreTransport
from google.cloud.datastore_v1.types import datastore as _ds
from google.cloud.datastore_v1.types import entity as _entity
from google.cloud.datastore_v1.types import query as _query

from keyramp.backends._base import QuerySpec, Record, Target
from keyramp.backends._rpc import GrpcBackend, Method, Service, filter_key, routing
from keyramp.backends.datastore._client import DatastoreBackend, FirestoreDatastoreBackend, _kinds
from keyramp.core import Key, UsageError

__all__ = ["DatastoreGrpcBackend", "FirestoreDatastoreGrpcBackend", "value_pb"]

_LookupRequest: Final = _ds.LookupRequest.pb()
_RunQueryRequest: Final = _ds.RunQueryRequest.pb()
_CommitRequest: Final = _ds.CommitRequest.pb()
_BeginRequest: Final = _ds.BeginTransactionRequest.pb()
_RollbackRequest: Final = _ds.RollbackRequest.pb()
_AllocateRequest: Final = _ds.AllocateIdsRequest.pb()
_ReadOptions: Final = _ds.ReadOptions.pb()
_TransactionOptions: Final = _ds.TransactionOptions.pb()
_Mutation: Final = _ds.Mutation.pb()
_Key: Final = _entity.Key.pb()
_PathElement: Final = _entity.Key.PathElement.pb()
_PartitionId: Final = _entity.PartitionId.pb()
_Entity: Final = _entity.Entity.pb()
_Value: Final = _entity.Value.pb()
_Query: Final = _query.Query.pb()
_KindExpression: Final = _query.KindExpression.pb()
_Filter: Final = _query.Filter.pb()
_CompositeFilter: Final = _query.CompositeFilter.pb()
_PropertyFilter: Final = _query.PropertyFilter.pb()
_PropertyReference: Final = _query.PropertyReference.pb()
_PropertyOrder: Final = _query.PropertyOrder.pb()
_Projection: Final = _query.Projection.pb()

_NON_TRANSACTIONAL: Final = int(_ds.CommitRequest.Mode.NON_TRANSACTIONAL)
_TRANSACTIONAL: Final = int(_ds.CommitRequest.Mode.TRANSACTIONAL)
_AND: Final = int(_query.CompositeFilter.Operator.AND)
_HAS_ANCESTOR: Final = int(_query.PropertyFilter.Operator.HAS_ANCESTOR)
_ASC: Final = int(_query.PropertyOrder.Direction.ASCENDING)
_DESC: Final = int(_query.PropertyOrder.Direction.DESCENDING)
_NOT_FINISHED: Final = int(_query.QueryResultBatch.MoreResultsType.NOT_FINISHED)
_NO_MORE_RESULTS: Final = int(_query.QueryResultBatch.MoreResultsType.NO_MORE_RESULTS)
_OPS: Final = {
    "==": int(_query.PropertyFilter.Operator.EQUAL),
    "<": int(_query.PropertyFilter.Operator.LESS_THAN),
    "<=": int(_query.PropertyFilter.Operator.LESS_THAN_OR_EQUAL),
    ">": int(_query.PropertyFilter.Operator.GREATER_THAN),
    ">=": int(_query.PropertyFilter.Operator.GREATER_THAN_OR_EQUAL),
    "!=": int(_query.PropertyFilter.Operator.NOT_EQUAL),
}
_KEY_PROPERTY: Final = "__key__"
#: The client's ``get_multi`` follows deferred keys at most this often.
_MAX_LOOKUPS: Final = 100

SERVICE: Final = Service(host=DatastoreTransport.DEFAULT_HOST, scopes=DatastoreTransport.AUTH_SCOPES)
_P: Final = "/google.datastore.v1.Datastore/"
LOOKUP: Final = Method(_P + "Lookup", _LookupRequest, _ds.LookupResponse.pb())
RUN_QUERY: Final = Method(_P + "RunQuery", _RunQueryRequest, _ds.RunQueryResponse.pb())
COMMIT: Final = Method(_P + "Commit", _CommitRequest, _ds.CommitResponse.pb())
BEGIN_TRANSACTION: Final = Method(_P + "BeginTransaction", _BeginRequest, _ds.BeginTransactionResponse.pb())
ROLLBACK: Final = Method(_P + "Rollback", _RollbackRequest, _ds.RollbackResponse.pb())
ALLOCATE_IDS: Final = Method(_P + "AllocateIds", _AllocateRequest, _ds.AllocateIdsResponse.pb())


def value_pb(value: Any, *, exclude: bool = False) -> Any:
    """A property ``Value`` as the client encodes bytes, str, bool, int, float and None."""
    if isinstance(value, bytes):
        return _Value(blob_value=value, exclude_from_indexes=exclude)
    if isinstance(value, str):
        return _Value(string_value=value, exclude_from_indexes=exclude)
    if isinstance(value, bool):
        return _Value(boolean_value=value, exclude_from_indexes=exclude)
    if isinstance(value, int):
        return _Value(integer_value=value, exclude_from_indexes=exclude)
    if isinstance(value, float):
        return _Value(double_value=value, exclude_from_indexes=exclude)
    if value is None:
        return _Value(null_value=0, exclude_from_indexes=exclude)
    raise UsageError(f"the grpc driver cannot store a {type(value).__name__} value in datastore")


def _element(kind: str, ident: int | str) -> Any:
    return _PathElement(kind=kind, id=ident) if isinstance(ident, int) else _PathElement(kind=kind, name=ident)


class DatastoreGrpcBackend(GrpcBackend):
    name: ClassVar[str] = "datastore"
    service: ClassVar[Service] = SERVICE
    methods: ClassVar[tuple[Method, ...]] = (LOOKUP, RUN_QUERY, COMMIT, BEGIN_TRANSACTION, ROLLBACK, ALLOCATE_IDS)

    prepare = DatastoreBackend.prepare
    cleanup = DatastoreBackend.cleanup
    remaining = DatastoreBackend.remaining

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._kind, self._parent_kind = _kinds(target)
        # Emulators ignore the database (as the client driver does); "(default)" is sent as "".
        database = "" if target.endpoint is not None or target.database == "(default)" else target.database
        self._project, self._database = target.project, database
        self._partition = _PartitionId(project_id=target.project, database_id=database)
        self._request = {"project_id": target.project, "database_id": database}
        params = {"project_id": target.project, **({"database_id": database} if database else {})}
        self._md = self.rpc.metadata(routing(**params))
        self._exclude = frozenset(target.unindexed)
        self._kind_expr = [_KindExpression(name=self._kind)]
        #: Property filters per ``filter_key``: built once, only ever copied into requests.
        self._property_filters: dict[tuple[Any, ...], Any] = {}
        #: Cursor after the last ``query``: pass it back as ``QuerySpec.start_after`` (BP-QRY-2).
        self.last_cursor: bytes | None = None

    # -- messages -----------------------------------------------------------------------------
    def _key(self, key: Key | None) -> Any:
        if key is None:
            return _Key(partition_id=self._partition, path=[_PathElement(kind=self._kind)])
        if isinstance(key, tuple):
            parent, child = key
            return _Key(partition_id=self._partition,
                        path=[_element(self._parent_kind, parent), _element(self._kind, child)])
        return _Key(partition_id=self._partition, path=[_element(self._kind, key)])

    def _entity(self, key_pb: Any, record: Record) -> Any:
        exclude = self._exclude
        return _Entity(key=key_pb, properties={name: value_pb(value, exclude=name in exclude)
                                               for name, value in record.items()})

    def _commit(self, mutations: list[Any], transaction: bytes = b"") -> Any:
        if transaction:
            request = _CommitRequest(mode=_TRANSACTIONAL, transaction=transaction, mutations=mutations,
                                     **self._request)
        else:
            request = _CommitRequest(mode=_NON_TRANSACTIONAL, mutations=mutations, **self._request)
        return self.rpc.unary(COMMIT, request, self._md)

    def _lookup(self, keys: list[Any], transaction: bytes = b"") -> list[Any]:
        """Found entities; deferred keys are looked up again, as the client's ``get_multi`` does."""
        options = _ReadOptions(transaction=transaction) if transaction else _ReadOptions()
        found: list[Any] = []
        for _ in range(_MAX_LOOKUPS):
            response = self.rpc.unary(LOOKUP, _LookupRequest(read_options=options, keys=keys, **self._request),
                                      self._md)
            found.extend(response.found)
            if not response.deferred:
                break
            keys = list(response.deferred)
        return found

    def _added(self, key_pb: Any, field: str, amount: int, transaction: bytes = b"") -> Any:
        """The stored entity (a new one if missing) with ``amount`` added to ``field``."""
        found = self._lookup([key_pb], transaction)
        entity = found[0].entity if found else _Entity(key=key_pb)
        current = entity.properties[field].integer_value if field in entity.properties else 0
        entity.properties[field].CopyFrom(value_pb(current + amount, exclude=field in self._exclude))
        return entity

    def _property_filter(self, field: str, op: str, value: Any) -> Any:
        """The ``Filter`` for ``field op value`` (cached: copy it, never change it)."""
        key = filter_key(field, op, value)
        filter_ = self._property_filters.get(key) if key is not None else None
        if filter_ is None:
            try:
                op_pb = _OPS[op]
            except KeyError:
                raise UsageError(f"unknown query operator {op!r}") from None
            filter_ = _Filter(property_filter=_PropertyFilter(
                property=_PropertyReference(name=field), op=op_pb, value=value_pb(value)))
            if key is not None:
                self._property_filters[key] = filter_
        return filter_

    def _filter(self, spec: QuerySpec) -> Any | None:
        filters = []
        if spec.field is not None:
            filters.append(self._property_filter(spec.field, spec.op, spec.value))
        if spec.ancestor is not None:
            parent = spec.ancestor[0] if isinstance(spec.ancestor, tuple) else spec.ancestor
            ancestor = _Key(partition_id=self._partition, path=[_element(self._parent_kind, parent)])
            filters.append(_Filter(property_filter=_PropertyFilter(
                property=_PropertyReference(name=_KEY_PROPERTY), op=_HAS_ANCESTOR, value=_Value(key_value=ancestor))))
        return _Filter(composite_filter=_CompositeFilter(op=_AND, filters=filters)) if filters else None

    def _run_query(self, query: Any, *, limit: int | None, offset: int, start_cursor: bytes | None) -> int:
        """Pages of ``query`` as the client's iterator fetches them; sets ``last_cursor``."""
        count = 0
        cursor = start_cursor
        while True:
            request = _RunQueryRequest(partition_id=self._partition, read_options=_ReadOptions(), query=query,
                                       **self._request)
            page = request.query  # a copy of ``query``: this page's cursor, limit and offset go here
            if cursor is not None:
                page.start_cursor = cursor
            if limit is not None:
                page.limit.value = limit - count
            if cursor is None and offset:
                page.offset = offset  # the offset counts from the start of the results only
            batch = self.rpc.unary(RUN_QUERY, request, self._md).batch
            while batch.more_results == _NOT_FINISHED and batch.skipped_results < request.query.offset:
                request.query.start_cursor = batch.end_cursor  # skip on: the store skips ≤ 1,000 a call
                request.query.offset -= batch.skipped_results
                batch = self.rpc.unary(RUN_QUERY, request, self._md).batch
            count += len(batch.entity_results)
            cursor = None if batch.more_results == _NO_MORE_RESULTS else batch.end_cursor
            if batch.more_results != _NOT_FINISHED or (limit is not None and count >= limit):
                self.last_cursor = cursor
                return count

    # -- operations --------------------------------------------------------------------------
    def insert(self, key: Key | None, record: Record) -> Key:
        entity = self._entity(self._key(key), record)
        if key is not None:
            self._commit([_Mutation(upsert=entity)])
            return key
        # An incomplete key: the commit allocates the id (an insert, as the client's put does).
        result = self._commit([_Mutation(insert=entity)]).mutation_results[0].key.path[-1]
        return result.id if result.id else result.name

    def read(self, key: Key) -> bool:
        return bool(self._lookup([self._key(key)]))

    def update(self, key: Key, record: Record) -> None:
        self._commit([_Mutation(upsert=self._entity(self._key(key), record))])

    def delete(self, key: Key) -> None:
        self._commit([_Mutation(delete=self._key(key))])

    def scan(self, start: Key, limit: int) -> int:
        query = _Query(kind=self._kind_expr, order=[_PropertyOrder(property=_PropertyReference(name=_KEY_PROPERTY),
                                                                   direction=_ASC)])
        query.filter.CopyFrom(_Filter(composite_filter=_CompositeFilter(op=_AND, filters=[_Filter(
            property_filter=_PropertyFilter(property=_PropertyReference(name=_KEY_PROPERTY), op=_OPS[">="],
                                            value=_Value(key_value=self._key(start))))])))
        return self._run_query(query, limit=limit, offset=0, start_cursor=None)

    def query(self, spec: QuerySpec) -> int:
        query = _Query(kind=self._kind_expr)
        filter_ = self._filter(spec)
        if filter_ is not None:
            query.filter.CopyFrom(filter_)
        if spec.order_by:
            desc = spec.order_by.startswith("-")
            query.order.append(_PropertyOrder(property=_PropertyReference(name=spec.order_by.lstrip("-")),
                                              direction=_DESC if desc else _ASC))
        if spec.keys_only:
            query.projection.append(_Projection(property=_PropertyReference(name=_KEY_PROPERTY)))
        else:
            query.projection.extend(_Projection(property=_PropertyReference(name=p)) for p in spec.projection)
        start = spec.start_after
        if start is not None and not isinstance(start, bytes):
            raise UsageError("datastore QuerySpec.start_after must be a cursor (backend.last_cursor)")
        return self._run_query(query, limit=spec.limit, offset=spec.offset, start_cursor=start)

    def batch_write(self, items: Sequence[tuple[Key, Record]]) -> None:
        self._commit([_Mutation(upsert=self._entity(self._key(k), r)) for k, r in items])

    def batch_read(self, keys: Sequence[Key]) -> int:
        return len(self._lookup([self._key(k) for k in keys]))

    def transaction(self, key: Key, field: str, amount: int) -> None:
        begin = _BeginRequest(transaction_options=_TransactionOptions(), **self._request)
        transaction = self.rpc.unary(BEGIN_TRANSACTION, begin, self._md).transaction
        try:
            entity = self._added(self._key(key), field, amount, transaction)
        except BaseException:
            # Best-effort rollback (BP-API-2) frees the emulator's locks; the original error wins.
            # (A failed commit ends the transaction itself: the client driver does not roll back then.)
            try:
                self.rpc.unary(ROLLBACK, _RollbackRequest(transaction=transaction, **self._request), self._md)
            except Exception:  # noqa: BLE001 - the first error is what gets recorded
                pass
            raise
        self._commit([_Mutation(upsert=entity)], transaction)

    def increment(self, key: Key, field: str, amount: int) -> None:
        # No server-side increment: a plain read + upsert (racy by design, as the client driver).
        self._commit([_Mutation(upsert=self._added(self._key(key), field, amount))])

    def allocate_keys(self, n: int) -> list[Key]:
        response = self.rpc.unary(ALLOCATE_IDS, _AllocateRequest(keys=[self._key(None)] * n, **self._request),
                                  self._md)
        return [k.path[-1].id for k in response.keys]


class FirestoreDatastoreGrpcBackend(DatastoreGrpcBackend):
    """Firestore in Datastore mode: the same Datastore API, served by the Firestore emulator."""

    name: ClassVar[str] = "firestore-datastore"
    prepare = FirestoreDatastoreBackend.prepare
    cleanup = FirestoreDatastoreBackend.cleanup
    remaining = FirestoreDatastoreBackend.remaining
