"""Bigtable through the data client (``google.cloud.bigtable.data``): table per cell, family ``cf``.

The classic ``Table``/``DirectRow`` API is a shim over this client in google-cloud-bigtable
2.x; it cannot switch retries off (``DirectRow.commit()`` retries with the table defaults and
then *returns* an error status instead of raising). The data client takes explicit timeouts
and ``retryable_errors=()`` per table and raises ``GoogleAPICallError``s, so every failed
attempt reaches the recorder.
"""

from __future__ import annotations

import contextlib
import re
import struct
import warnings
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, ClassVar

from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud.bigtable.data import (
    BigtableDataClient,
    DeleteAllFromRow,
    Mutation,
    ReadRowsQuery,
    RowMutationEntry,
    RowRange,
    SetCell,
)
from google.cloud.bigtable.data import row_filters as rf
from google.cloud.bigtable.data.read_modify_write_rules import IncrementRule

from keyramp.backends._base import Backend, QuerySpec, Record, Target
from keyramp.backends.bigtable._admin import admin_client
from keyramp.core import Key, UnsupportedOperation, UsageError, key_text

__all__ = ["FAMILY", "BigtableBackend", "admin_client", "encode_value", "row_key"]

FAMILY = "cf"
#: Clean-up keeps the clients' default retries: it must finish, not be measured.
_CLEANUP_TIMEOUT_S = 60.0

#: Reads return only the newest version of each cell: updates pile up versions (the
#: emulator never garbage-collects), and a load test should not read history.
_LATEST = rf.CellsColumnLimitFilter(1)


def row_key(key: Key) -> bytes:
    """The key's text id as bytes (``key_text``): a key reads the same on every store."""
    return key_text(key).encode()


def encode_value(value: Any) -> bytes | str | int:
    """Cell value: bytes/str as is, ints 8-byte big-endian (what ReadModifyWrite increments), floats IEEE,
    timestamps as epoch ms (an int), an array packed into one cell (BP-SIZE-3), elements split by 0x1F."""
    if isinstance(value, (bytes, str)):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return struct.pack(">d", value)
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, list):
        return b"\x1f".join(_as_bytes(encode_value(v)) for v in value)
    raise UsageError(f"bigtable cannot store a {type(value).__name__} value")


def _as_bytes(value: bytes | str | int) -> bytes:
    if isinstance(value, int):
        return struct.pack(">q", value)
    return value.encode() if isinstance(value, str) else value


def _columns(record: Record, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """A record's columns: a map becomes one column per field (``map.field``)."""
    for name, value in record.items():
        if isinstance(value, dict):
            yield from _columns(value, f"{prefix}{name}.")
        else:
            yield prefix + name, value


class _CapturingClient(BigtableDataClient):
    """The data client, its channel reporting every request to ``capture`` when one is given (a Python
    workload's user: ``backends._capture``)."""

    def __init__(self, *, capture: Any = None, **kw: Any) -> None:
        self._capture = capture  # read by _build_grpc_channel, which the base class calls while it builds
        super().__init__(**kw)

    def _build_grpc_channel(self, *args: Any, **kwargs: Any) -> Any:
        channel = super()._build_grpc_channel(*args, **kwargs)
        capture = self._capture
        if capture is None:
            return channel
        make = channel._channel_fn  # the swappable channel makes its channels (and new ones on refresh) here
        channel.close()
        return type(channel)(lambda: capture.channel(make()))


class _DataClient(_CapturingClient):
    """A data client bound to one emulator endpoint.

    ``BigtableDataClient.__init__`` reads ``BIGTABLE_EMULATOR_HOST`` into ``_emulator_host`` and
    uses it for everything emulator-specific (insecure channel, anonymous credentials, no
    background channel refresh, no Cloud Monitoring metrics export). Pinning the attribute
    per instance gives each user its own endpoint without touching ``os.environ``.
    """

    def __init__(self, *, endpoint: str, project: str, capture: Any = None) -> None:
        self._pinned_endpoint = endpoint
        # It warns "Connecting to Bigtable emulator" on every construction: one per user
        # floods the log. Constructing does no I/O, so no greenlet switch inside this block.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            super().__init__(project=project, credentials=AnonymousCredentials(), capture=capture)

    @property
    def _emulator_host(self) -> str:
        return self._pinned_endpoint

    @_emulator_host.setter
    def _emulator_host(self, value: str | None) -> None:
        pass  # the base class assigns os.getenv(...): ignored on purpose


def _data_client(target: Target) -> BigtableDataClient:
    if target.endpoint is None:
        return _CapturingClient(project=target.project, capture=target.capture)
    return _DataClient(endpoint=target.endpoint, project=target.project, capture=target.capture)


def _table_name(target: Target) -> str:
    return f"projects/{target.project}/instances/{target.instance}/tables/{target.namespace}"


class BigtableBackend(Backend):
    name: ClassVar[str] = "bigtable"

    @classmethod
    def prepare(cls, target: Target) -> None:
        """Create the cell's table (``target.namespace``) with family ``cf``; an existing one is kept."""
        with admin_client(target.endpoint) as admin, contextlib.suppress(gexc.AlreadyExists):
            admin.create_table(
                parent=f"projects/{target.project}/instances/{target.instance}",
                table_id=target.namespace,
                table={"column_families": {FAMILY: {}}},
                retry=None, timeout=max(target.timeout_s, 30.0))

    # -- clean-up ----------------------------------------------------------------------------
    @classmethod
    def cleanup(cls, target: Target) -> int:
        """Count the cell table's rows, then drop the table (one admin call deletes them all)."""
        rows = cls.remaining(target)
        # NotFound: never created, or already gone: nothing of ours is left either way.
        with admin_client(target.endpoint) as admin, contextlib.suppress(gexc.NotFound):
            admin.delete_table(name=_table_name(target), timeout=_CLEANUP_TIMEOUT_S)
        return rows

    @classmethod
    def remaining(cls, target: Target) -> int:
        """Rows in the cell's table; 0 once the table is gone."""
        with admin_client(target.endpoint) as admin:
            try:
                admin.get_table(request={"name": _table_name(target), "view": "NAME_ONLY"}, timeout=_CLEANUP_TIMEOUT_S)
            except gexc.NotFound:
                return 0
        client = _data_client(target)
        try:
            table = client.get_table(target.instance, target.namespace,
                                     default_read_rows_operation_timeout=_CLEANUP_TIMEOUT_S,
                                     default_read_rows_attempt_timeout=_CLEANUP_TIMEOUT_S)
            # Keys only: the first cell of each row, value stripped.
            keys_only = rf.RowFilterChain([rf.CellsRowLimitFilter(1), rf.StripValueTransformerFilter(True)])
            try:
                return sum(1 for _ in table.read_rows_stream(ReadRowsQuery(row_filter=keys_only)))
            finally:
                table.close()
        finally:
            client.close()

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._client: BigtableDataClient = _data_client(target)
        t = target.timeout_s
        # One attempt per call, bounded by the cell's timeout: no silent client retries.
        self._table = self._client.get_table(
            target.instance, target.namespace,
            default_operation_timeout=t, default_attempt_timeout=t,
            default_read_rows_operation_timeout=t, default_read_rows_attempt_timeout=t,
            default_mutate_rows_operation_timeout=t, default_mutate_rows_attempt_timeout=t,
            default_retryable_errors=(), default_read_rows_retryable_errors=(),
            default_mutate_rows_retryable_errors=())
        #: Row key of the last row of the last ``query`` (a cursor for ``start_after``).
        self.last_cursor: bytes | None = None

    @property
    def table(self) -> Any:
        """The cell's table on the data client, with no retries and the cell's deadlines."""
        return self._table

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._table.close()
        self._client.close()

    @staticmethod
    def _cells(record: Record) -> list[Mutation]:
        return [SetCell(FAMILY, name, encode_value(value)) for name, value in _columns(record)]

    # -- operations --------------------------------------------------------------------------
    def insert(self, key: Key | None, record: Record) -> Key:
        if key is None:
            raise UnsupportedOperation("bigtable has no server-allocated row keys")
        self._table.mutate_row(row_key(key), self._cells(record))
        return key

    def read(self, key: Key) -> bool:
        return self._table.read_row(row_key(key), row_filter=_LATEST) is not None

    def update(self, key: Key, record: Record) -> None:
        self._table.mutate_row(row_key(key), self._cells(record))

    def delete(self, key: Key) -> None:
        self._table.mutate_row(row_key(key), DeleteAllFromRow())

    def scan(self, start: Key, limit: int) -> int:
        query = ReadRowsQuery(row_ranges=RowRange(start_key=row_key(start)), limit=limit, row_filter=_LATEST)
        return len(self._table.read_rows(query))

    def query(self, spec: QuerySpec) -> int:
        """A filtered range read: Bigtable has no secondary indexes, so the server scans rows in
        key order and returns those whose ``cf:field`` cell matches (offset is skipped client-side)."""
        if spec.ancestor is not None or spec.order_by:
            raise UnsupportedOperation("bigtable queries are key-ordered range reads: no order_by/ancestor")
        filters: list[rf.RowFilter] = [rf.FamilyNameRegexFilter(FAMILY), _LATEST]
        if spec.field is not None:
            value_b = _as_bytes(encode_value(spec.value))
            cond = rf.RowFilterChain(
                [rf.ColumnQualifierRegexFilter(_exact(spec.field)), _value_filter(spec.op, value_b)]
            )
            # Keep the whole row when its field matches: condition -> pass all cells.
            filters.append(rf.ConditionalRowFilter(cond, true_filter=rf.PassAllFilter(True)))
        if spec.keys_only:
            filters.append(rf.StripValueTransformerFilter(True))
        elif spec.projection:
            filters.append(rf.ColumnQualifierRegexFilter(b"|".join(_exact(p) for p in spec.projection)))
        start = spec.start_after
        ranges = RowRange(start_key=row_key(start) if not isinstance(start, bytes) else start,
                          start_is_inclusive=False) if start is not None else None
        query = ReadRowsQuery(row_ranges=ranges, limit=spec.limit + spec.offset,
                              row_filter=rf.RowFilterChain(filters))
        rows = self._table.read_rows(query)[spec.offset:]
        self.last_cursor = rows[-1].row_key if rows else None
        return len(rows)

    def batch_write(self, items: Sequence[tuple[Key, Record]]) -> None:
        self._table.bulk_mutate_rows([RowMutationEntry(row_key(k), self._cells(r)) for k, r in items])

    def batch_read(self, keys: Sequence[Key]) -> int:
        return len(self._table.read_rows(ReadRowsQuery(row_keys=[row_key(k) for k in keys], row_filter=_LATEST)))

    def transaction(self, key: Key, field: str, amount: int) -> None:
        # Bigtable's only atomic read-modify-write is ReadModifyWriteRow (row-level atomicity).
        self._table.read_modify_write_row(row_key(key), IncrementRule(FAMILY, field, amount))

    def increment(self, key: Key, field: str, amount: int) -> None:
        self._table.read_modify_write_row(row_key(key), IncrementRule(FAMILY, field, amount))


def _exact(name: str) -> bytes:
    """An RE2 pattern matching exactly ``name`` (qualifiers are bytes; regex filters match whole values)."""
    return re.escape(name).encode()


#: Query operator -> the value-range filter that keeps matching cells (RE2 ranges, bytes order).
_VALUE_FILTERS: dict[str, Callable[[bytes], rf.RowFilter]] = {
    "==": lambda v: rf.ValueRangeFilter(start_value=v, end_value=v, inclusive_start=True, inclusive_end=True),
    ">": lambda v: rf.ValueRangeFilter(start_value=v, inclusive_start=False),
    ">=": lambda v: rf.ValueRangeFilter(start_value=v, inclusive_start=True),
    "<": lambda v: rf.ValueRangeFilter(end_value=v, inclusive_end=False),
    "<=": lambda v: rf.ValueRangeFilter(end_value=v, inclusive_end=True),
}


def _value_filter(op: str, value: bytes) -> rf.RowFilter:
    make = _VALUE_FILTERS.get(op)
    if make is None:
        raise UsageError(f"unknown query operator {op!r}")
    return make(value)
