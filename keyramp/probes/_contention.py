"""BP-RATE-1/3, BP-KEY-9, BP-SHARD-1, BP-API-2: N writers doing transactions on one
entity vs distinct entities vs random shards vs one entity group; aborts and latency.

Bounded by ``max_s`` (each writer stops starting new transactions then; one in flight
may take up to the op timeout), so a run on a locking store still ends on time.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

from keyramp.core import Key
from keyramp.probes._base import ProbeContext, error_text, percentile_ms

__all__ = ["CHOICES", "DEFAULTS", "contention_probe"]

DEFAULTS: dict[str, Any] = {
    "threads": 8,
    "keys": 1,  # how many entities/documents/rows receive the writes
    "assign": "per-thread",  # per-thread: writer t uses key t % keys; random: any key per op
    "same_group": False,  # Datastore: all keys children of one entity group (BP-RATE-1)
    "op": "transaction",  # or "increment" (blind read+write where the store has no RMW)
    "max_s": 5.0,
}
CHOICES: dict[str, tuple[str, ...]] = {"assign": ("per-thread", "random"), "op": ("transaction", "increment")}


def _keys(ctx: ProbeContext) -> list[Key]:
    n = int(ctx.params["keys"])
    if ctx.params["same_group"]:
        return [("grp-0", f"k{i}") for i in range(n)]
    return [f"ctr-{i}" for i in range(n)]


def contention_probe(ctx: ProbeContext) -> dict[str, Any]:
    keys = _keys(ctx)
    threads = int(ctx.params["threads"])
    op = str(ctx.params["op"])
    run_s = max(0.5, min(float(ctx.params["max_s"]), ctx.remaining_s() - ctx.target.timeout_s))
    # Setup with a generous deadline: the first call to a cold emulator can take seconds.
    seed_backend = ctx.backend(timeout_s=max(ctx.target.timeout_s, 60.0))
    for key in keys:  # counters exist before the race: every writer reads then writes
        seed_backend.update(key, {"counter": 0})
    errors: Counter[str] = Counter()
    samples: dict[str, dict[str, str]] = {}
    ok_latency: list[float] = []
    lock = threading.Lock()
    start = threading.Event()
    end_at = [0.0]

    def writer(t: int) -> None:
        backend = ctx.backend()
        rng = random.Random(ctx.seed * 7919 + t)
        start.wait()
        while time.perf_counter() < end_at[0]:
            key = keys[rng.randrange(len(keys))] if ctx.params["assign"] == "random" else keys[t % len(keys)]
            t0 = time.perf_counter()
            try:
                getattr(backend, op)(key, "counter", 1)
            except Exception as exc:  # noqa: BLE001 - every failure is a finding
                info = error_text(exc)
                with lock:
                    errors[info["class"]] += 1
                    samples.setdefault(info["class"], info)
                continue
            with lock:
                ok_latency.append(time.perf_counter() - t0)

    workers = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(threads)]
    for w in workers:
        w.start()
    began = time.perf_counter()
    end_at[0] = began + run_s
    start.set()
    for w in workers:
        w.join(timeout=run_s + ctx.target.timeout_s + 5)
    elapsed = time.perf_counter() - began
    committed = len(ok_latency)
    aborted = errors.get("ABORTED", 0)
    attempts = committed + sum(errors.values())
    return {
        "threads": threads,
        "keys": len(keys),
        "assign": ctx.params["assign"],
        "same_group": bool(ctx.params["same_group"]),
        "op": op,
        "seconds": round(elapsed, 3),
        "attempts": attempts,
        "committed": committed,
        "committed_per_s": round(committed / elapsed, 2) if elapsed else None,
        "aborted": aborted,
        "abort_rate": round(aborted / attempts, 4) if attempts else None,
        "errors": dict(errors),
        "error_samples": samples,
        "latency_ms": {"p50": percentile_ms(ok_latency, 0.5), "p99": percentile_ms(ok_latency, 0.99)},
    }

