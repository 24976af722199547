"""What the run directory costs the load generator's loop each second (the recorder's sink).

Every second the recorder hands the run directory one row per operation (+ ``*``), the
key samples of that second and a flush; the run directory writes them on the same gevent
loop that paces the operations, so a slow flush delays operations. This times those calls
for ``--seconds`` simulated seconds of a 5-operation cell at 100 key samples/s (the
HdrHistogram logs are left out: unchanged by the Parquet format), and the end of the cell
(compaction). With ``--before-src DIR`` (``git archive 5413844 | tar -x -C DIR``) the CSV
writer of that code runs too, in alternating fresh processes.

Usage: ``.venv/bin/python bench/bench_sink.py [--seconds 600] [--reps 2] [--before-src DIR]``
-> bench/results/sink.json. ``--smoke``: 2 seconds, one repetition.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, parse_args, save, table

OPS = ("insert", "read", "update", "scan", "delete", "*")


def child(seconds: int) -> dict[str, Any]:
    from keyramp.results._rows import TimeseriesRow
    from keyramp.results._rundir import RunDirectory

    keys = [str(uuid.UUID(int=i * 0x9E3779B97F4A7C15 % (1 << 128), version=4)) for i in range(100 * seconds)]
    per_second: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDirectory(Path(tmp), "sink")
        run.begin_cell("c00-bigtable-random")
        for s in range(seconds):
            rows = [TimeseriesRow(cell="c00-bigtable-random", op=op, second=s, count=60, errors=0, p50_ms=1.234,
                                  p99_ms=5.678, service_p99_ms=5.1, max_ms=9.9, target_ops_per_s=300.0 if op == "*"
                                  else None, late=0, dropped=0, error_classes={}) for op in OPS]
            samples = [(round(s + i / 100, 4), OPS[i % 5], keys[s * 100 + i]) for i in range(100)]
            t0 = time.perf_counter()
            run.timeseries(rows)
            run.keys("c00-bigtable-random", samples)
            run.flush()
            per_second.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        if hasattr(run, "end_cell"):
            run.end_cell()
        run.close()
        end_ms = (time.perf_counter() - t0) * 1000
    per_second.sort()
    return {"median_ms": statistics.median(per_second), "p99_ms": per_second[int(len(per_second) * 0.99)],
            "max_ms": per_second[-1], "mean_ms": statistics.mean(per_second), "end_of_cell_ms": end_ms}


def _fresh(seconds: int, src: Path | None) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(seconds)], env=env,
                          cwd=src or Path.cwd(), capture_output=True, text=True, timeout=600, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=600)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--before-src", type=Path, default=None)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parse_args(parser, argv, smoke={"seconds": 2, "reps": 1})
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    versions: list[tuple[str, Path | None]] = [("after (Parquet)", None)]
    if args.before_src is not None:
        versions.insert(0, ("before (CSV)", args.before_src.resolve()))
    facts = machine()
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in versions}
    for rep in range(args.reps):
        for name, src in versions if rep % 2 == 0 else versions[::-1]:
            samples[name].append(_fresh(args.seconds, src))
    keys = ("median_ms", "p99_ms", "max_ms", "mean_ms", "end_of_cell_ms")
    med = {name: {k: round(statistics.median(s[k] for s in runs), 3) for k in keys} for name, runs in samples.items()}
    print(f"{args.seconds} s of a 5-op cell at 100 key samples/s, {args.reps} reps; load {facts['loadavg']}")
    print(table(["sink", *keys], [[name, *(m[k] for k in keys)] for name, m in med.items()]))
    path = save("sink", {"bench": "sink", "machine": facts, "machine_after": machine(), "args": {
        "seconds": args.seconds, "reps": args.reps}, "median": med, "samples": samples})
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
