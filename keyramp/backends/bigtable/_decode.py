"""Bigtable requests as store-model operations (the store proxy reads a copy; docs/fidelity.md).

A row is the unit: each row a request writes is one access to the ``rows`` space and one
unit (a row never splits; one node serves it). Keys are the table id, a NUL, then the row
key, so rows keep Bigtable's byte order within a table. Reads: each row key read, and each
row range from its start key, charged ``rows_limit`` rows when the request sets one, else one
(what a range returns is known only from the response, which the model does not wait for).
``MutateRows`` is one operation: the model admits or throttles the request as a whole.
Everything else (``SampleRowKeys``, change streams, SQL, the admin API) passes through.
"""

from __future__ import annotations

from typing import Any, Final

from google.cloud.bigtable_v2.types import bigtable as _bt

from keyramp.backends._fidelity import DecodeOptions, ModelTypes, Rpc, RpcTable

__all__ = ["rpcs"]

_P: Final = "/google.bigtable.v2.Bigtable/"
_MutateRow: Final = _bt.MutateRowRequest.pb()
_MutateRows: Final = _bt.MutateRowsRequest.pb()
_ReadRows: Final = _bt.ReadRowsRequest.pb()
_CheckAndMutate: Final = _bt.CheckAndMutateRowRequest.pb()
_ReadModifyWrite: Final = _bt.ReadModifyWriteRowRequest.pb()
_ROWS: Final = "rows"


def _prefix(table_name: str) -> bytes:
    """``projects/p/instances/i/tables/t`` -> ``b"t\\0"``: the table's place in the row space."""
    return table_name.rpartition("/")[2].encode() + b"\0"


def rpcs(options: DecodeOptions, types: ModelTypes) -> RpcTable:
    """Bigtable's data API; the decoders build ``types``' accesses and operations."""
    access, op = types.access, types.op
    prefixes: dict[str, bytes] = {}

    def prefix(table_name: str) -> bytes:
        found = prefixes.get(table_name)
        if found is None:
            found = prefixes[table_name] = _prefix(table_name)
        return found

    def one_row(key: bytes, kind: str) -> Any:
        return op((access(_ROWS, key, True),), (key,), kind)

    def mutate_row(data: bytes) -> Any:
        request = _MutateRow.FromString(data)
        return one_row(prefix(request.table_name) + request.row_key, "write")

    def mutate_rows(data: bytes) -> Any:
        request = _MutateRows.FromString(data)
        table = prefix(request.table_name)
        keys = tuple(table + entry.row_key for entry in request.entries)
        return op(tuple(access(_ROWS, key, True) for key in keys), keys, "write")

    def read_rows(data: bytes) -> Any:
        request = _ReadRows.FromString(data)
        table = prefix(request.table_name)
        rows = request.rows
        accesses = [access(_ROWS, table + key, False) for key in rows.row_keys]
        span = max(1, int(request.rows_limit))
        for row_range in rows.row_ranges:
            start = row_range.start_key_closed or row_range.start_key_open
            accesses.append(access(_ROWS, table + start, False, span))
        if not accesses:  # no row set: the whole table, from its first row
            accesses.append(access(_ROWS, table, False, span))
        return op(tuple(accesses), (), "read")

    def check_and_mutate(data: bytes) -> Any:
        request = _CheckAndMutate.FromString(data)
        return one_row(prefix(request.table_name) + request.row_key, "write")

    def read_modify_write(data: bytes) -> Any:  # an increment or append: the server reads the row
        request = _ReadModifyWrite.FromString(data)
        return one_row(prefix(request.table_name) + request.row_key, "transform")

    table = [
        Rpc(path=_P + "MutateRow", what="write", decode=mutate_row),
        Rpc(path=_P + "MutateRows", what="write", response_stream=True, decode=mutate_rows),
        Rpc(path=_P + "ReadRows", what="read", response_stream=True, decode=read_rows),
        Rpc(path=_P + "CheckAndMutateRow", what="write", decode=check_and_mutate),
        Rpc(path=_P + "ReadModifyWriteRow", what="write", decode=read_modify_write),
        Rpc(path=_P + "SampleRowKeys", what="admin", response_stream=True),
        Rpc(path=_P + "PingAndWarm", what="admin"),
        Rpc(path=_P + "GenerateInitialChangeStreamPartitions", what="query", response_stream=True),
        Rpc(path=_P + "ReadChangeStream", what="query", response_stream=True),
        Rpc(path=_P + "PrepareQuery", what="query"),
        Rpc(path=_P + "ExecuteQuery", what="query", response_stream=True),
    ]
    return {rpc.path: rpc for rpc in table}
