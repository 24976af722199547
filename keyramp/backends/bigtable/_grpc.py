"""Bigtable over raw gRPC: the data client's RPCs (``google.bigtable.v2``), built directly.

The same requests as the client driver (``_client``): ``MutateRow`` with client-side
millisecond timestamps, ``ReadRows`` with the newest-version filter, ``MutateRows`` for
batches (a failed entry raises its status), ``ReadModifyWriteRow`` for transactions and
increments. Table creation and clean-up are the client driver's (not measured).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final

from google.cloud.bigtable_v2.services.bigtable.transports.base import BigtableTransport
from google.cloud.bigtable_v2.types import bigtable as _bt
from google.cloud.bigtable_v2.types import data as _data

from keyramp.backends._base import QuerySpec, Record, Target
from keyramp.backends._rpc import GrpcBackend, Method, Service, StatusError, filter_key, routing
from keyramp.backends.bigtable._client import FAMILY, BigtableBackend, _as_bytes, _exact, encode_value, row_key
from keyramp.core import Key, UnsupportedOperation, UsageError

__all__ = ["BigtableGrpcBackend", "cell_value", "row_filter"]

_MutateRowRequest: Final = _bt.MutateRowRequest.pb()
_MutateRowsRequest: Final = _bt.MutateRowsRequest.pb()
_ReadRowsRequest: Final = _bt.ReadRowsRequest.pb()
_RMWRequest: Final = _bt.ReadModifyWriteRowRequest.pb()
_Mutation: Final = _data.Mutation.pb()
_SetCell: Final = _data.Mutation.SetCell.pb()
_DeleteFromRow: Final = _data.Mutation.DeleteFromRow.pb()
_RowSet: Final = _data.RowSet.pb()
_RowRange: Final = _data.RowRange.pb()
_RowFilter: Final = _data.RowFilter.pb()
_Chain: Final = _data.RowFilter.Chain.pb()
_Condition: Final = _data.RowFilter.Condition.pb()
_ValueRange: Final = _data.ValueRange.pb()
_RMWRule: Final = _data.ReadModifyWriteRule.pb()
_Entry: Final = _bt.MutateRowsRequest.Entry.pb()

SERVICE: Final = Service(host=BigtableTransport.DEFAULT_HOST, scopes=BigtableTransport.AUTH_SCOPES)
_P: Final = "/google.bigtable.v2.Bigtable/"
MUTATE_ROW: Final = Method(_P + "MutateRow", _MutateRowRequest, _bt.MutateRowResponse.pb())
MUTATE_ROWS: Final = Method(_P + "MutateRows", _MutateRowsRequest, _bt.MutateRowsResponse.pb(), stream=True)
READ_ROWS: Final = Method(_P + "ReadRows", _ReadRowsRequest, _bt.ReadRowsResponse.pb(), stream=True)
READ_MODIFY_WRITE_ROW: Final = Method(_P + "ReadModifyWriteRow", _RMWRequest, _bt.ReadModifyWriteRowResponse.pb())

#: Newest version of each cell only (as the client driver reads).
_LATEST: Final = _RowFilter(cells_per_column_limit_filter=1)
_MAX_INT64: Final = 2**63 - 1


def cell_value(value: Any) -> bytes:
    """A cell's bytes, as the data client's ``SetCell`` encodes ``encode_value``'s result."""
    encoded = encode_value(value)
    if isinstance(encoded, int) and abs(encoded) > _MAX_INT64:
        raise ValueError("int values must be between -2**63 and 2**63")
    return _as_bytes(encoded)


#: Query operator -> the value range it selects (as the client driver's table in ``_client.py``).
_VALUE_RANGES: Final[dict[str, Callable[[bytes], Any]]] = {
    "==": lambda v: _ValueRange(start_value_closed=v, end_value_closed=v),
    ">": lambda v: _ValueRange(start_value_open=v),
    ">=": lambda v: _ValueRange(start_value_closed=v),
    "<": lambda v: _ValueRange(end_value_open=v),
    "<=": lambda v: _ValueRange(end_value_closed=v),
}


def _value_range(op: str, value: bytes) -> Any:
    if op not in _VALUE_RANGES:
        raise UsageError(f"unknown query operator {op!r}")
    return _VALUE_RANGES[op](value)


def row_filter(spec: QuerySpec) -> Any:
    """The ``RowFilter`` the client driver's ``query`` builds for ``spec``."""
    filters = [_RowFilter(family_name_regex_filter=FAMILY), _LATEST]
    if spec.field is not None:
        value_b = _as_bytes(encode_value(spec.value))
        predicate = _RowFilter(chain=_Chain(filters=[
            _RowFilter(column_qualifier_regex_filter=_exact(spec.field)),
            _RowFilter(value_range_filter=_value_range(spec.op, value_b))]))
        filters.append(_RowFilter(condition=_Condition(predicate_filter=predicate,
                                                       true_filter=_RowFilter(pass_all_filter=True))))
    if spec.keys_only:
        filters.append(_RowFilter(strip_value_transformer=True))
    elif spec.projection:
        filters.append(_RowFilter(column_qualifier_regex_filter=b"|".join(_exact(p) for p in spec.projection)))
    return _RowFilter(chain=_Chain(filters=filters))


def _row_keys(responses: list[Any]) -> list[bytes]:
    """Keys of the complete rows in a ``ReadRows`` stream (chunks carry the key on a row's first cell)."""
    keys: list[bytes] = []
    current = b""
    for response in responses:
        for chunk in response.chunks:
            if chunk.row_key:
                current = chunk.row_key
            if chunk.commit_row:
                keys.append(current)
    return keys


def _rows(responses: list[Any]) -> int:
    return sum(1 for response in responses for chunk in response.chunks if chunk.commit_row)


class BigtableGrpcBackend(GrpcBackend):
    name: ClassVar[str] = "bigtable"
    service: ClassVar[Service] = SERVICE
    methods: ClassVar[tuple[Method, ...]] = (MUTATE_ROW, MUTATE_ROWS, READ_ROWS, READ_MODIFY_WRITE_ROW)

    prepare = BigtableBackend.prepare
    cleanup = BigtableBackend.cleanup
    remaining = BigtableBackend.remaining

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._table = f"projects/{target.project}/instances/{target.instance}/tables/{target.namespace}"
        self._md = self.rpc.metadata(routing(table_name=self._table, app_profile_id=""))
        #: Qualifier bytes per field name (records reuse a handful of names).
        self._qualifiers: dict[str, bytes] = {}
        self._filters: dict[tuple[Any, ...], Any] = {}
        #: Row key of the last row of the last ``query`` (a cursor for ``start_after``).
        self.last_cursor: bytes | None = None

    def _mutations(self, record: Record) -> list[Any]:
        now = time.time_ns() // 1000
        now -= now % 1000  # the data client sends millisecond precision
        qualifiers = self._qualifiers
        mutations = []
        for name, value in record.items():
            qualifier = qualifiers.get(name)
            if qualifier is None:
                qualifier = qualifiers[name] = name.encode()
            mutations.append(_Mutation(set_cell=_SetCell(family_name=FAMILY, column_qualifier=qualifier,
                                                         timestamp_micros=now, value=cell_value(value))))
        return mutations

    def _read(self, request: Any) -> list[Any]:
        return self.rpc.stream(READ_ROWS, request, self._md)

    # -- operations --------------------------------------------------------------------------
    def insert(self, key: Key | None, record: Record) -> Key:
        if key is None:
            raise UnsupportedOperation("bigtable has no server-allocated row keys")
        self.update(key, record)
        return key

    def read(self, key: Key) -> bool:
        request = _ReadRowsRequest(table_name=self._table, rows=_RowSet(row_keys=[row_key(key)]), filter=_LATEST,
                                   rows_limit=1)
        return _rows(self._read(request)) > 0

    def update(self, key: Key, record: Record) -> None:
        request = _MutateRowRequest(table_name=self._table, row_key=row_key(key), mutations=self._mutations(record))
        self.rpc.unary(MUTATE_ROW, request, self._md)

    def delete(self, key: Key) -> None:
        request = _MutateRowRequest(table_name=self._table, row_key=row_key(key),
                                    mutations=[_Mutation(delete_from_row=_DeleteFromRow())])
        self.rpc.unary(MUTATE_ROW, request, self._md)

    def scan(self, start: Key, limit: int) -> int:
        rows = _RowSet(row_ranges=[_RowRange(start_key_closed=row_key(start))])
        return _rows(self._read(_ReadRowsRequest(table_name=self._table, rows=rows, filter=_LATEST, rows_limit=limit)))

    def query(self, spec: QuerySpec) -> int:
        """A filtered range read (see the client driver): the same filter, offset skipped here."""
        if spec.ancestor is not None or spec.order_by:
            raise UnsupportedOperation("bigtable queries are key-ordered range reads: no order_by/ancestor")
        key = filter_key(spec.field, spec.op, spec.value)  # 1, 1.0 and True encode differently
        shape = None if key is None else (*key, spec.keys_only, spec.projection)
        filter_ = None if shape is None else self._filters.get(shape)
        if filter_ is None:
            filter_ = row_filter(spec)
            if shape is not None:
                self._filters[shape] = filter_
        request = _ReadRowsRequest(table_name=self._table, filter=filter_, rows_limit=spec.limit + spec.offset)
        start = spec.start_after
        if start is not None:
            start_key = start if isinstance(start, bytes) else row_key(start)
            request.rows.row_ranges.append(_RowRange(start_key_open=start_key))
        else:
            request.rows.SetInParent()  # an empty RowSet, as the client sends: the whole table
        keys = _row_keys(self._read(request))[spec.offset:]
        self.last_cursor = keys[-1] if keys else None
        return len(keys)

    def batch_write(self, items: Sequence[tuple[Key, Record]]) -> None:
        entries = [_Entry(row_key=row_key(k), mutations=self._mutations(r)) for k, r in items]
        for response in self.rpc.stream(MUTATE_ROWS, _MutateRowsRequest(table_name=self._table, entries=entries),
                                        self._md):
            for entry in response.entries:
                if entry.status.code:
                    raise StatusError(entry.status.code, f"entry {entry.index}: {entry.status.message}")

    def batch_read(self, keys: Sequence[Key]) -> int:
        request = _ReadRowsRequest(table_name=self._table, rows=_RowSet(row_keys=[row_key(k) for k in keys]),
                                   filter=_LATEST)
        return _rows(self._read(request))

    def transaction(self, key: Key, field: str, amount: int) -> None:
        # Bigtable's only atomic read-modify-write is ReadModifyWriteRow (row-level atomicity).
        self.increment(key, field, amount)

    def increment(self, key: Key, field: str, amount: int) -> None:
        rule = _RMWRule(family_name=FAMILY, column_qualifier=field.encode(), increment_amount=amount)
        self.rpc.unary(READ_MODIFY_WRITE_ROW, _RMWRequest(table_name=self._table, row_key=row_key(key), rules=[rule]),
                       self._md)
