"""Write-shape probes: batch vs single operations (BP-API-1), index fan-out (BP-IDX-1/2)."""

from __future__ import annotations

import time
from typing import Any

from keyramp.probes._base import ProbeContext, best_ms

__all__ = ["BATCH_DEFAULTS", "FANOUT_DEFAULTS", "batch_probe", "fanout_probe"]

BATCH_DEFAULTS: dict[str, Any] = {"entities": 300, "batch_size": 25}
FANOUT_DEFAULTS: dict[str, Any] = {"properties": 50, "writes": 150}


def _rate(n: int, fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return round(n / max(time.perf_counter() - t0, 1e-9), 1)


def batch_probe(ctx: ProbeContext) -> dict[str, Any]:
    n, size = int(ctx.params["entities"]), int(ctx.params["batch_size"])
    backend = ctx.backend()
    single = [f"s-{i:06d}" for i in range(n)]
    batched = [f"b-{i:06d}" for i in range(n)]
    record = {"v": b"x" * 128}

    def singles_write() -> None:
        for k in single:
            backend.insert(k, record)

    def batches_write() -> None:
        for lo in range(0, n, size):
            backend.batch_write([(k, record) for k in batched[lo:lo + size]])

    def singles_read() -> None:
        for k in single:
            backend.read(k)

    def batches_read() -> None:
        for lo in range(0, n, size):
            backend.batch_read(batched[lo:lo + size])

    out: dict[str, Any] = {"entities": n, "batch_size": size,
                           "single_write_per_s": _rate(n, singles_write), "batch_write_per_s": _rate(n, batches_write),
                           "single_read_per_s": _rate(n, singles_read), "batch_read_per_s": _rate(n, batches_read)}
    out["write_speedup"] = round(out["batch_write_per_s"] / out["single_write_per_s"], 2)
    out["read_speedup"] = round(out["batch_read_per_s"] / out["single_read_per_s"], 2)
    return out


def fanout_probe(ctx: ProbeContext) -> dict[str, Any]:
    props, writes = int(ctx.params["properties"]), int(ctx.params["writes"])
    names = [f"f{i:02d}" for i in range(props)]
    counter = iter(range(10**9))

    def write(backend: Any, width: int) -> None:
        i = next(counter)
        backend.update(f"w-{i:07d}", {name: i * 31 + j for j, name in enumerate(names[:width])})

    indexed = ctx.backend()
    unindexed = ctx.backend(unindexed=frozenset(names))
    out: dict[str, Any] = {
        "properties": props,
        "writes": writes,
        "one_property_ms": best_ms(lambda: write(indexed, 1), writes),
        "indexed_ms": best_ms(lambda: write(indexed, props), writes),
        "unindexed_ms": best_ms(lambda: write(unindexed, props), writes),
    }
    out["indexed_vs_unindexed"] = round(out["indexed_ms"] / out["unindexed_ms"], 2) if out["unindexed_ms"] else None
    return out
