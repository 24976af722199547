"""Benchmark: `keyramp plan RUN` on a 12-cell run (issue 27's goal: under 30 s), beside `keyramp forecast`.

    .venv/bin/python bench/bench_plan.py [--repeat 3] [--cells 12] [--target 10000] [--no-save]
    .venv/bin/python bench/bench_plan.py --smoke   # the suite's run (tests/bench/test_bench_smoke.py): 2 cells, once

The run directory is bench_forecast's (the quickstart's shape: 4 stores × sequential, random
and hashed-prefix ids, 70 % inserts / 30 % reads, its 500/50/5 launch to 10,000 ops/s, one
Bigtable node). Each repetition times, in fresh processes interleaved (plan, forecast,
forecast, plan, …), ``plan_run`` (what ``keyramp plan RUN`` calls: sustainable rate, ramp
search, fixes, the confirming forecasts and the cost) and ``reforecast`` (one forecast per
cell): the plan's time per cell is what a run that gates on ``plan.*`` adds after each cell,
and the ratio to the forecast says what the searches cost in forecasts. Public hooks only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, machine, median, parse_args, save, table
from bench_forecast import write_run

_CHILD = """
import json, sys, time
sys.path.insert(0, {src!r})
from keyramp.results._catalog import resolve_run
from keyramp.forecast import load_prices, plan_run
from keyramp.forecast._reforecast import reforecast
run = resolve_run({run!r}, None)
t = time.perf_counter()
if {what!r} == "plan":
    plan = plan_run(run, target={target!r}, prices=load_prices())
    detail = {{c.cell_id: [c.reachable, c.fix.kind if c.fix else None, c.forecasts] for c in plan.planned}}
else:
    detail = {{k: [v.verdict] for k, v in reforecast(run).items()}}
print(json.dumps([time.perf_counter() - t, detail]))
"""


def _time(what: str, run: Path, target: float) -> tuple[float, dict[str, Any]]:
    out = subprocess.run([sys.executable, "-c", _CHILD.format(src=str(ROOT), run=str(run), what=what, target=target)],
                         capture_output=True, text=True, check=True, cwd=str(ROOT))
    seconds, detail = json.loads(out.stdout.strip().splitlines()[-1])
    return float(seconds), detail


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cells", type=int, default=12)
    parser.add_argument("--target", type=float, default=10_000.0, help="ops/s (default: the quickstart's peak)")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="write the result JSON here")
    args = parse_args(parser, argv, smoke={"cells": 2, "repeat": 1})
    load_before = f"{os.getloadavg()[0]:.1f}"
    times: dict[str, list[float]] = {"plan": [], "forecast": []}
    details: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-plan-") as tmp:
        run = write_run(Path(tmp), cells=args.cells)
        for i in range(args.repeat):
            for what in (["plan", "forecast"] if i % 2 == 0 else ["forecast", "plan"]):
                seconds, details[what] = _time(what, run, args.target)
                times[what].append(seconds)
    plan_s, forecast_s = median(times["plan"]), median(times["forecast"])
    rows = [[what, args.cells, median(ts), min(ts), median(ts) / args.cells] for what, ts in times.items()]
    print(table(["command", "cells", "median s", "best s", "s per cell"], rows))
    print(f"plan / forecast: ×{plan_s / forecast_s:.1f}; load average before/after: {load_before} / "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for cell_id, (reachable, fix, forecasts) in sorted(details["plan"].items()):
        print(f"  {cell_id}: {'reachable' if reachable else 'fix: ' + str(fix)}, {forecasts} forecasts")
    result: dict[str, Any] = {"machine": machine(), "cells": args.cells, "repeat": args.repeat, "target": args.target,
                              "seconds": {w: {"median": median(ts), "all": ts} for w, ts in times.items()},
                              "per_cell_s": plan_s / args.cells, "plan_over_forecast": plan_s / forecast_s,
                              "cells_planned": details["plan"], "passed": plan_s < 30.0 * args.cells / 12}
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if not args.no_save:
        print(save("plan", result))
    return result


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"bench took {time.perf_counter() - started:.0f} s")
