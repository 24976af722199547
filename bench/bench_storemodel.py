"""Cost of the per-operation store model: µs per ``StoreModel.offer`` (issue 38's proxy asks it per request).

Each case pre-builds its operations (what a proxy has decoded), then times ``offer`` over them at
a steady rate on the model's clock (best of three passes over fresh models: scheduler noise
only ever adds). The target: well under 50 µs for a simple write in CPython.

    .venv/bin/python bench/bench_storemodel.py [--n 200000] [--no-save]
    .venv/bin/python bench/bench_storemodel.py --smoke   # the suite's run: 2,000 offers a case
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, parse_args, save, table

from keyramp.backends import spec_for
from keyramp.storemodel import Access, StoreModel, StoreOp

Make = Callable[[random.Random], StoreOp]


def _doc(rng: random.Random) -> bytes:
    return rng.getrandbits(64).to_bytes(8, "big")


def _write(rng: random.Random) -> StoreOp:
    key = _doc(rng)
    return StoreOp((Access("documents", key, True),), (key,))


def _indexed(rng: random.Random) -> StoreOp:
    key = _doc(rng)
    return StoreOp((Access("documents", key, True), Access("index:created", _doc(rng) + key, True)), (key,))


def _read(rng: random.Random) -> StoreOp:
    return StoreOp((Access("documents", _doc(rng), False),), (), "read")


def _batch(rng: random.Random) -> StoreOp:
    keys = [_doc(rng) for _ in range(20)]
    accesses = [Access("documents", k, True) for k in keys] + [Access("index:f0", _doc(rng) + k, True) for k in keys]
    return StoreOp(tuple(accesses), tuple(keys))


def _counter(rng: random.Random) -> StoreOp:
    return StoreOp((Access("documents", b"counter", True),), (b"counter",), "transform")


def _row(rng: random.Random) -> StoreOp:
    key = _doc(rng)
    return StoreOp((Access("rows", key, True),), (key,))


#: (case, store, nodes, ops/s on the model's clock, operation maker): rates a new range admits (below
#: one tablet's capacity, the spread ones splitting as they go), but for the counter (its per-key limit).
CASES: list[tuple[str, str, int, float, Make]] = [
    ("write, 1 document", "firestore", 1, 800.0, _write),
    ("write + 1 index entry", "firestore", 1, 400.0, _indexed),
    ("read, 1 document", "firestore", 1, 800.0, _read),
    ("batch: 20 writes + 20 index entries", "firestore", 1, 20.0, _batch),
    ("increment of one counter (throttled)", "firestore", 1, 800.0, _counter),
    ("Bigtable row write, 3 nodes", "bigtable", 3, 10_000.0, _row),
]


def per_offer_us(store: str, nodes: int, rate: float, make: Make, n: int) -> tuple[float, dict[str, Any]]:
    """Best of three passes of ``n`` offers (fresh model each), µs per offer, and the last model's state."""
    rng = random.Random(42)
    ops = [make(rng) for _ in range(n)]
    times = [i / rate for i in range(n)]
    best, state = float("inf"), {}
    for _ in range(3):
        model = StoreModel.for_store(spec_for(store), nodes=nodes)
        offer = model.offer
        t0 = time.perf_counter()
        for op, t in zip(ops, times, strict=True):
            offer(op, t)
        best = min(best, time.perf_counter() - t0)
        state = model.state().to_json()
    return best / n * 1e6, state


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="offers per pass")
    parser.add_argument("--no-save", action="store_true")
    args = parse_args(parser, argv, smoke={"n": 2000})
    load = os.getloadavg()[0]
    rows, out = [], {}
    for case, store, nodes, rate, make in CASES:
        us, state = per_offer_us(store, nodes, rate, make, args.n)
        out[case] = {"us_per_offer": round(us, 2), "store": store, "nodes": nodes, "rate": rate, "state": state}
        admitted = state["admitted"] / max(1, state["offered"])
        rows.append([case, store, us, f"{admitted:.0%}", sum(state["tablets"].values())])
    print(table(["case", "store", "µs/offer", "admitted", "tablets"], rows))
    print(f"load average before/after: {load:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    simple = out["write, 1 document"]["us_per_offer"]
    result = {"machine": machine(), "n": args.n, "us_per_offer": {c: v["us_per_offer"] for c, v in out.items()},
              "cases": out, "passed": simple < 50.0}
    if not args.no_save:
        print(save("storemodel", result))
    return result


if __name__ == "__main__":
    main()
