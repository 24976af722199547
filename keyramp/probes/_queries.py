"""Query-shape probes: offset vs cursor (BP-QRY-2), keys-only/projection vs full entity
(BP-QRY-1), querying a freshly deleted range vs a stored start (BP-QRY-3).

Each fills its own probe keys (``q-…``) so the cell's preloaded records never mix in.
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from keyramp.backends import QuerySpec
from keyramp.probes._base import ProbeContext, best_ms

__all__ = [
    "DELETED_DEFAULTS",
    "OFFSET_DEFAULTS",
    "PROJECTION_DEFAULTS",
    "deleted_range_probe",
    "offset_cursor_probe",
    "projection_probe",
]

OFFSET_DEFAULTS: dict[str, Any] = {"entities": 9060, "page": 150, "page_size": 60, "repeat": 7}
PROJECTION_DEFAULTS: dict[str, Any] = {"entities": 300, "payload_bytes": 4096, "repeat": 5}
DELETED_DEFAULTS: dict[str, Any] = {"entities": 600, "deleted": 500, "limit": 10, "repeat": 5}

_BATCH = 250  # half of Datastore's 500 mutations per commit: 6040 entities fill in 9 s, at 100 in 16 s


def _fill(ctx: ProbeContext, n: int, record: Any, **target_fields: Any) -> list[str]:
    # Setup, not measurement: a generous deadline so a slow emulator commit is not an error.
    backend = ctx.backend(timeout_s=max(ctx.target.timeout_s, 60.0), **target_fields)
    keys = [f"q-{i:07d}" for i in range(n)]
    for lo in range(0, n, _BATCH):
        backend.batch_write([(keys[i], record(i)) for i in range(lo, min(lo + _BATCH, n))])
    return keys


def offset_cursor_probe(ctx: ProbeContext) -> dict[str, Any]:
    """Page ``page`` by offset vs by the stored cursor, both warmed, trials interleaved.

    Why the defaults: the legacy Datastore emulator skips at most 300 entities per
    RunQuery batch, so the client re-issues an offset query every 300 skipped entities,
    and each round trip costs about what the one cursor query costs (the emulator sorts
    the whole kind per query). The ratio is therefore ≈ offset / 300, less on a cold or
    loaded emulator: offset 3000 (page 150 × 20) sat right at ×10 (×8–12 measured), offset
    6000 gave ×11–55, offset 9000 (page 150 × 60, 30 round trips) ×28–93 (load average 5–8).
    """
    p = ctx.params
    size, page = int(p["page_size"]), int(p["page"])
    n = max(int(p["entities"]), (page + 1) * size)
    _fill(ctx, n, lambda i: {"seq": i})
    backend = ctx.backend()
    order = "seq"
    offset_spec = QuerySpec(order_by=order, limit=size, offset=page * size)
    # The cursor a client stored after reading pages 0..page-1 (one query to the same
    # position: a cursor depends on the query's filters and order, not on its limit).
    backend.query(QuerySpec(order_by=order, limit=page * size))
    cursor_spec = QuerySpec(order_by=order, limit=size, start_after=backend.last_cursor)
    got = backend.query(cursor_spec)
    for _ in range(2):  # warm both paths: the JVM emulator's first calls on a path are slower
        backend.query(offset_spec)
        backend.query(cursor_spec)
    # Interleaved, so load from other processes hits both sides alike; the fastest trial
    # of each side is the least disturbed one (load only ever adds time).
    offset_s: list[float] = []
    cursor_s: list[float] = []
    for _ in range(int(p["repeat"])):
        offset_s.append(_timed(lambda: backend.query(offset_spec)))
        cursor_s.append(_timed(lambda: backend.query(cursor_spec)))
    offset_ms, cursor_ms = round(min(offset_s) * 1000, 3), round(min(cursor_s) * 1000, 3)
    return {
        "entities": n,
        "page": page,
        "page_size": size,
        "offset": page * size,
        "offset_ms": offset_ms,
        "cursor_ms": cursor_ms,
        "offset_median_ms": round(statistics.median(offset_s) * 1000, 3),
        "cursor_median_ms": round(statistics.median(cursor_s) * 1000, 3),
        "trials": len(offset_s),
        "offset_trials_ms": [round(t * 1000, 1) for t in offset_s],
        "cursor_trials_ms": [round(t * 1000, 1) for t in cursor_s],
        "cursor_page_rows": got,
        "ratio": round(offset_ms / cursor_ms, 2) if cursor_ms else None,
    }


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def projection_probe(ctx: ProbeContext) -> dict[str, Any]:
    p = ctx.params
    n = int(p["entities"])
    payload = os.urandom(int(p["payload_bytes"]))
    # The payload is unindexed (Datastore refuses indexed values > 1500 bytes); ``n`` is
    # indexed so the projection can be served from the index.
    _fill(ctx, n, lambda i: {"n": i, "payload": payload}, unindexed=frozenset({"payload"}))
    backend = ctx.backend(unindexed=frozenset({"payload"}))
    repeat = int(p["repeat"])
    out: dict[str, Any] = {"entities": n, "payload_bytes": len(payload)}
    for name, spec in (("full_ms", QuerySpec(limit=n)), ("keys_only_ms", QuerySpec(limit=n, keys_only=True)),
                       ("projection_ms", QuerySpec(limit=n, projection=("n",)))):
        out[name] = best_ms(functools.partial(backend.query, spec), repeat)
    out["full_vs_keys_only"] = round(out["full_ms"] / out["keys_only_ms"], 2) if out["keys_only_ms"] else None
    out["full_vs_projection"] = round(out["full_ms"] / out["projection_ms"], 2) if out["projection_ms"] else None
    return out


def deleted_range_probe(ctx: ProbeContext) -> dict[str, Any]:
    p = ctx.params
    n, deleted, limit = int(p["entities"]), int(p["deleted"]), int(p["limit"])
    keys = _fill(ctx, n, lambda i: {"created": i})
    backend = ctx.backend()
    removed = 0
    for key in keys[:deleted]:  # the queue pattern: consumers delete from the front
        if ctx.remaining_s() < 5.0:
            break
        backend.delete(key)
        removed += 1
    head = QuerySpec(order_by="created", limit=limit)
    stored = QuerySpec(field="created", op=">=", value=removed, order_by="created", limit=limit)
    repeat = int(p["repeat"])
    head_ms = best_ms(lambda: backend.query(head), repeat)
    stored_ms = best_ms(lambda: backend.query(stored), repeat)
    return {
        "entities": n,
        "deleted": removed,
        "head_query_ms": head_ms,
        "stored_start_ms": stored_ms,
        "ratio": round(head_ms / stored_ms, 2) if stored_ms else None,
    }
