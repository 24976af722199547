"""A/A check for ``keyramp compare`` with real emulator runs.

Runs one small profile N times (same config, same machine) and compares every run with
the first: on an A/A series every verdict should be ``same`` (or ``n/a``). Prints the
flag count per metric; exits 1 if more than ``--max-flag-rate`` of the verdicts flag.

    .venv/bin/python bench/bench_compare_aa.py --runs 4 --duration 10s
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from keyramp._catalog import list_runs
from keyramp.compare import build_comparison

PROFILE = """
name = "bench-aa"
description = "A/A series for compare"
backend = "{backend}"
duration = "{duration}"
seed = 7

[workload]
ops = {{ insert = 0.7, read = 0.3 }}
record_count = 300
value_size = 128
read_distribution = "uniform"

[keys]
strategy = ["random"]

[schedule]
kind = "constant"
rate = {rate}
max_users = 10
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--backend", default="bigtable")
    parser.add_argument("--max-flag-rate", type=float, default=0.05)
    parser.add_argument("--keep", type=Path, help="keep the runs in this results directory (and reuse runs there)")
    parser.add_argument("--verbose", action="store_true", help="print every ratio and interval")
    args = parser.parse_args()
    keyramp = Path(sys.executable).with_name("keyramp")
    with tempfile.TemporaryDirectory(prefix="kr-aa-") as tmp:
        profile = Path(tmp) / "aa.toml"
        profile.write_text(PROFILE.format(backend=args.backend, duration=args.duration, rate=args.rate))
        results = args.keep or Path(tmp) / "results"
        have = len(list_runs(results)) if args.keep else 0
        for i in range(have, args.runs):
            started = time.monotonic()
            subprocess.run([str(keyramp), "run", str(profile), "--out", str(results), "--quiet"], check=True,
                           stdout=subprocess.DEVNULL)
            print(f"run {i + 1}/{args.runs} in {time.monotonic() - started:.1f} s", flush=True)
        runs = sorted(list_runs(results), key=lambda r: r.run_id)
        base, others = runs[0], runs[1:]
        started = time.monotonic()
        cmp = build_comparison(others, baseline=base)
        elapsed = time.monotonic() - started
    if args.verbose:
        for r in cmp.rows:
            ci = f"[{r.ci_low:.2f}, {r.ci_high:.2f}]" if r.ci_low is not None and r.metric != "error_rate" else ""
            ratio = f"{r.ratio:.3f}" if r.ratio is not None else "-"
            print(f"{r.run_id[-4:]} {r.op:7s} {r.metric:11s} x{ratio:6s} {ci:14s} {r.verdict}")
    verdicts = Counter((r.metric, r.verdict) for r in cmp.rows)
    flagged = sum(n for (_, v), n in verdicts.items() if v in ("worse", "better"))
    judged = sum(n for (_, v), n in verdicts.items() if v != "n/a")
    for metric in sorted({m for m, _ in verdicts}):
        row = {v: verdicts[(metric, v)] for v in ("same", "worse", "better", "n/a")}
        print(f"{metric:11s} {row}")
    rate = flagged / judged if judged else 0.0
    print(f"A/A: {flagged} of {judged} judged verdicts flagged ({rate:.1%}); compare took {elapsed:.2f} s")
    return 1 if rate > args.max_flag_rate else 0


if __name__ == "__main__":
    raise SystemExit(main())
