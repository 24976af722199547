"""What ``--metrics`` costs: the exporter's work per closed second against the recorder's own
tick, and one scrape of a full run's state.

Interleaved A/B in one process (best of 7): a recorder ticking a realistic second (3 ops,
1,000 operations with a long-tailed latency) into a null sink (A) and into a tee of the null
sink and ``MetricsState`` (B); the exporter's share is (B - A) / A. A scrape is the
exposition of 12 finished cells x 3 ops (the quickstart's shape) and a running one: the first
scrape renders all of them, a later one only the running cell (finished ones are kept).

Run: ``.venv/bin/python bench/bench_metrics.py`` -> ``bench/results/metrics.json``.
``--smoke``: 1 second, one round, a scrape of 3 finished cells.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, parse_args, save, table

from keyramp.metrics import MetricsState, render
from keyramp.results._observer import TeeSink
from keyramp.results._summary import CellSummary
from keyramp.run._recorder import Recorder

OPS = ("insert", "read", "update")


class _Null:
    def interval(self, **kw: Any) -> None: ...
    def timeseries(self, rows: Any) -> None: ...
    def keys(self, cell: str, samples: Any) -> None: ...
    def flush(self) -> None: ...


def _one_second(rec: Recorder, rng: random.Random, second: int) -> float:
    """Record 1,000 operations into the open interval, then time the tick alone."""
    for _ in range(1000):
        t = second + rng.random()
        rec.record(rng.choice(OPS), None, t, t, t + rng.lognormvariate(-6.0, 1.0))
    start = time.perf_counter()
    rec.tick(second + 1.0, target_ops_per_s=1000.0)
    return time.perf_counter() - start


def tick_cost(seconds: int = 30, rounds: int = 7) -> dict[str, float]:
    best = {"recorder tick": float("inf"), "recorder tick + metrics": float("inf")}
    for _ in range(rounds):
        for name in best:  # interleaved: A, B, A, B, ...
            state = MetricsState()
            state.run_started(run_id="bench", profile="bench")
            state.cell_started(cell="c", backend="datastore", strategy="random", duration_s=seconds)
            sink = TeeSink([_Null(), state]) if name.endswith("metrics") else _Null()
            rec = Recorder(cell="c", ops=OPS, sink=sink, key_samples_per_s=0)
            rec.begin(0.0, duration_s=float(seconds))
            rng = random.Random(1)
            total = sum(_one_second(rec, rng, s) for s in range(seconds))
            best[name] = min(best[name], total / seconds)
    return best


def scrape_cost(rounds: int = 7, cells: int = 12) -> tuple[float, float, int]:
    state = MetricsState()
    state.run_started(run_id="bench", profile="quickstart")
    rng = random.Random(2)
    for c in range(cells):
        cell = f"c{c:02d}-datastore-random"
        state.cell_started(cell=cell, backend="datastore", strategy="random", duration_s=10.0, users=20)
        rec = Recorder(cell=cell, ops=OPS, sink=state, key_samples_per_s=0)
        rec.begin(0.0, duration_s=10.0)
        for s in range(10):
            _one_second(rec, rng, s)
        state.cell_finished(cell=cell, summary=CellSummary())
    running = f"c{cells:02d}-datastore-random"
    state.cell_started(cell=running, backend="datastore", strategy="random", duration_s=10.0)
    rec = Recorder(cell=running, ops=OPS, sink=state, key_samples_per_s=0)
    rec.begin(0.0, duration_s=10.0)
    best_first = best = float("inf")
    for _ in range(rounds):
        for cell in state.runs["bench"].cells.values():
            cell.rendered = None  # the first scrape renders every cell
        start = time.perf_counter()
        render(state)
        best_first = min(best_first, time.perf_counter() - start)
        _one_second(rec, rng, 0)  # the running cell changed: a later scrape renders it alone
        start = time.perf_counter()
        body = render(state)
        best = min(best, time.perf_counter() - start)
    return best_first, best, len(body)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=30, help="simulated seconds per tick measurement")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (best of)")
    parser.add_argument("--cells", type=int, default=12, help="finished cells in the scraped state")
    args = parse_args(parser, argv, smoke={"seconds": 1, "rounds": 1, "cells": 3})
    ticks = tick_cost(args.seconds, args.rounds)
    first_s, scrape_s, size = scrape_cost(args.rounds, args.cells)
    base, with_metrics = ticks["recorder tick"], ticks["recorder tick + metrics"]
    result = {
        "machine": machine(),
        "tick_ms": round(base * 1000, 3),
        "tick_with_metrics_ms": round(with_metrics * 1000, 3),
        "metrics_share_of_tick": round((with_metrics - base) / base, 3),
        "metrics_us_per_op_at_1000_ops_s": round((with_metrics - base) * 1e6 / 1000, 3),
        "first_scrape_13_cells_ms": round(first_s * 1000, 2),
        "scrape_12_finished_1_running_ms": round(scrape_s * 1000, 2),
        "scrape_bytes": size,
        "finished_cells": args.cells,  # 12 but in a smoke run (the two keys above name the full run's)
    }
    print(table(["measure", "value"], [[k, v] for k, v in result.items() if k != "machine"]))
    save("metrics", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
