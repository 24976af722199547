"""Benchmark: `keyramp forecast RUN` on a 12-cell run, the call the launch planner repeats.

    .venv/bin/python bench/bench_forecast.py [--repeat 3] [--cells 12] [--no-save] [--before-src DIR]
    .venv/bin/python bench/bench_forecast.py --smoke --out FILE   # the suite's run: 2 cells, once

Writes a run directory shaped like the quickstart's (4 stores × sequential, random and
hashed-prefix ids, 70 % inserts / 30 % reads, 10 s at 300 ops/s, its 500/50/5 launch to
10,000 ops/s for an hour): a resolved profile in manifest.json and each cell's operation
counts and measured key-space figures in summary.json, as `keyramp run` leaves them. Then
times ``reforecast`` (what the CLI calls: projection, the band over the parameter box and
the stability re-run at twice the samples) for the whole run, in a fresh process each
time so no cache carries over, and reports the median with the machine's load (the figure
moves with what else the 2 cores run). Goal (issue 26): under 5 s for 12 cells.

``--before-src DIR`` (an older checkout: ``git archive main | tar -x -C DIR``) times that
code on the same run directory, interleaved with this one (A B B A …), for a ratio from
one session on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from _common import ROOT, machine, median, parse_args, save, table

_CHILD = """
import sys, time
sys.path.insert(0, {src!r})
from keyramp.results._catalog import resolve_run
from keyramp.forecast._reforecast import reforecast
run = resolve_run({run!r}, None)
t = time.perf_counter()
out = reforecast(run)
print(time.perf_counter() - t, len(out), sorted({{str(f.verdict) for f in out.values()}}))
"""


def write_run(root: Path, *, cells: int = 12) -> Path:
    """A finished run of the quickstart's shape (no sampled keys: every cell's keys are regenerated)."""
    from keyramp.profile._profile import parse_profile

    raw = tomllib.loads((ROOT / "profiles" / "quickstart.toml").read_text(encoding="utf-8"))
    profile = parse_profile(raw, source="quickstart.toml")
    run = root / "20260101T000000000Z-quickstart-0000"
    run.mkdir(parents=True)
    chosen = profile.cells[:cells]
    manifest = {"schema": 1, "run_id": run.name, "profile_name": "quickstart", "status": "complete",
                "profile": json.loads(json.dumps(profile.data)),
                "cells": [{"id": c.id, "backend": c.backend, "strategy": c.strategy, "duration_s": 10.0,
                           "time_scale": 1.0} for c in chosen]}
    hot = {"sequential": 0.70, "random": 0.013, "hashed_prefix": 0.015}
    summary: dict[str, Any] = {"schema": 1, "run_id": run.name, "status": "complete", "cells": {}}
    for c in chosen:
        summary["cells"][c.id] = {
            "backend": c.backend, "strategy": c.strategy, "duration_s": 10.0, "warmup_inserts": 700,
            "operations": {"insert": {"count": 2100}, "read": {"count": 900}},
            "total": {"count": 3000},
            "keyspace": {"samples": 3000, "hottest_1pct_share": hot.get(c.strategy, 0.02),
                         "append_points": 1 if c.strategy == "sequential" else None},
        }
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return run


def _time(src: Path, run: Path) -> tuple[float, str]:
    out = subprocess.run([sys.executable, "-c", _CHILD.format(src=str(src), run=str(run))], capture_output=True,
                         text=True, check=True, cwd=str(src))
    seconds, rest = out.stdout.strip().split(" ", 1)
    return float(seconds), rest


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cells", type=int, default=12)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--before-src", type=Path, default=None, metavar="DIR")
    parser.add_argument("--out", type=Path, default=None, help="write the result JSON here")
    args = parse_args(parser, argv, smoke={"cells": 2, "repeat": 1, "no_save": True})  # the test suite's run
    load_before = f"{os.getloadavg()[0]:.1f}"
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-forecast-") as tmp:
        run = write_run(Path(tmp), cells=args.cells)
        contestants = {"this": ROOT} | ({"before": args.before_src.resolve()} if args.before_src else {})
        times: dict[str, list[float]] = {name: [] for name in contestants}
        verdicts: dict[str, str] = {}
        for i in range(args.repeat):
            order = list(contestants) if i % 2 == 0 else list(reversed(contestants))
            for name in order:
                seconds, verdicts[name] = _time(contestants[name], run)
                times[name].append(seconds)
    rows = [[name, args.cells, median(ts), min(ts), verdicts[name]] for name, ts in times.items()]
    print(table(["code", "cells", "median s", "best s", "verdicts"], rows))
    print(f"load average before/after: {load_before} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    result: dict[str, Any] = {"machine": machine(), "cells": args.cells, "repeat": args.repeat,
                              "seconds": {name: {"median": median(ts), "all": ts} for name, ts in times.items()},
                              "verdicts": verdicts}
    if "before" in times:
        result["speedup"] = median(times["before"]) / median(times["this"])
        print(f"speed-up: ×{result['speedup']:.1f}")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if not args.no_save:
        print(save("forecast", result))


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"bench took {time.perf_counter() - started:.0f} s")
