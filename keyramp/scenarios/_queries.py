"""Query-shape probes: offset vs cursor (BP-QRY-2), keys-only/projection vs full entity
(BP-QRY-1), querying a freshly deleted range vs a stored start (BP-QRY-3).

Each fills its own probe keys (``q-…``) so the cell's preloaded records never mix in.
"""

from __future__ import annotations

import os
from typing import Any

from keyramp.backends._base import QuerySpec
from keyramp.scenarios._base import ProbeContext, median_ms

__all__ = ["offset_cursor_probe", "projection_probe", "deleted_range_probe",
           "OFFSET_DEFAULTS", "PROJECTION_DEFAULTS", "DELETED_DEFAULTS"]

OFFSET_DEFAULTS: dict[str, Any] = {"entities": 3020, "page": 150, "page_size": 20, "repeat": 7}
PROJECTION_DEFAULTS: dict[str, Any] = {"entities": 300, "payload_bytes": 4096, "repeat": 5}
DELETED_DEFAULTS: dict[str, Any] = {"entities": 600, "deleted": 500, "limit": 10, "repeat": 5}

_BATCH = 100  # well below Datastore's 500 mutations per commit; big commits are slow on the emulator


def _fill(ctx: ProbeContext, n: int, record: Any, **target_fields: Any) -> list[str]:
    # Setup, not measurement: a generous deadline so a slow emulator commit is not an error.
    backend = ctx.backend(timeout_s=max(ctx.target.timeout_s, 60.0), **target_fields)
    keys = [f"q-{i:07d}" for i in range(n)]
    for lo in range(0, n, _BATCH):
        backend.batch_write([(keys[i], record(i)) for i in range(lo, min(lo + _BATCH, n))])
    return keys


def offset_cursor_probe(ctx: ProbeContext) -> dict[str, Any]:
    p = ctx.params
    size, page = int(p["page_size"]), int(p["page"])
    n = max(int(p["entities"]), (page + 1) * size)
    _fill(ctx, n, lambda i: {"seq": i})
    backend = ctx.backend()
    order = "seq"
    offset_spec = QuerySpec(order_by=order, limit=size, offset=page * size)
    cursor: Any = None
    for _ in range(page):  # walk once, as a client that stored its cursor already did
        backend.query(QuerySpec(order_by=order, limit=size, start_after=cursor))
        cursor = backend.last_cursor  # type: ignore[attr-defined]
    cursor_spec = QuerySpec(order_by=order, limit=size, start_after=cursor)
    got = backend.query(cursor_spec)
    # Interleaved, so load from other processes and JIT warm-up hit both sides alike.
    offset_ms, cursor_ms = float("inf"), float("inf")
    for _ in range(int(p["repeat"])):
        offset_ms = min(offset_ms, median_ms(lambda: backend.query(offset_spec), 1))
        cursor_ms = min(cursor_ms, median_ms(lambda: backend.query(cursor_spec), 1))
    return {
        "entities": n,
        "page": page,
        "page_size": size,
        "offset_ms": offset_ms,
        "cursor_ms": cursor_ms,
        "cursor_page_rows": got,
        "ratio": round(offset_ms / cursor_ms, 2) if cursor_ms else None,
    }


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
        out[name] = median_ms(lambda spec=spec: backend.query(spec), repeat)
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
    head_ms = median_ms(lambda: backend.query(head), repeat)
    stored_ms = median_ms(lambda: backend.query(stored), repeat)
    return {
        "entities": n,
        "deleted": removed,
        "head_query_ms": head_ms,
        "stored_start_ms": stored_ms,
        "ratio": round(head_ms / stored_ms, 2) if stored_ms else None,
    }
