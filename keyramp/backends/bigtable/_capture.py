"""A Bigtable workload's captured requests (``backends._capture``) as the rows the store sees.

``MutateRow`` and each entry of ``MutateRows`` write one row, new or not (an upsert; a
``DeleteFromRow`` alone deletes it), ``CheckAndMutateRow`` writes one, ``ReadModifyWriteRow``
changes one in place (an increment, an append); ``ReadRows`` reads the rows it names, and a
range from its start key (a scan). Bigtable has no secondary indexes: a write's only key is its row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from keyramp.backends._capture import CapturedAccess

__all__ = ["decode"]

_SERVICE = "/google.bigtable.v2.Bigtable/"


def _row(key: bytes) -> str:
    return key.decode("utf-8", "replace")


def _mutations(key: bytes, mutations: Any) -> CapturedAccess:
    deletes = all(m._pb.WhichOneof("mutation") == "delete_from_row" for m in mutations)
    return CapturedAccess(kind="delete" if deletes and len(mutations) else "upsert", key=_row(key))


def decode(calls: Sequence[tuple[str, Any]], namespace: str) -> list[CapturedAccess]:
    """The rows ``calls`` (one operation's requests) wrote and read, in order."""
    out: list[CapturedAccess] = []
    for method, request in calls:
        name = method.removeprefix(_SERVICE)
        if name == "MutateRow":
            out.append(_mutations(request.row_key, request.mutations))
        elif name == "MutateRows":
            out.extend(_mutations(e.row_key, e.mutations) for e in request.entries)
        elif name == "CheckAndMutateRow":
            out.append(CapturedAccess(kind="write", key=_row(request.row_key)))
        elif name == "ReadModifyWriteRow":
            out.append(CapturedAccess(kind="transform", key=_row(request.row_key)))
        elif name == "ReadRows":
            rows = request.rows
            out.extend(CapturedAccess(kind="read", key=_row(k)) for k in rows.row_keys)
            for r in rows.row_ranges:
                start = r._pb.start_key_closed or r._pb.start_key_open
                out.append(CapturedAccess(kind="read", key=_row(start)))
    return out
