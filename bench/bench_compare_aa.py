"""A/A check for ``keyramp compare`` with real emulator runs.

Runs one small profile N times (same config, same machine) and compares every run with
the first: on an A/A series every verdict should be ``same`` (or ``n/a``). A comparison
*flags* when any of its metrics is ``worse`` or ``better`` (the strict, per-comparison
reading of the issue's "20 comparisons flag at most 1"). Also compares every ordered
pair (N x (N-1) comparisons: every run as the baseline once) for a steadier rate.
Exits 1 if more than ``--max-flag-rate`` of the comparisons against the first run flag.
Saves bench/results/compare_aa.json.

    .venv/bin/python bench/bench_compare_aa.py --runs 4 --duration 10s

``--smoke``: two 3-second runs without warm-up; every flag rate passes (figures mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from _common import machine, parse_args, save

from keyramp.compare import Comparison, build_comparison
from keyramp.results._catalog import Run, list_runs

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
warmup = "{warmup}"
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--backend", default="bigtable")
    parser.add_argument("--max-flag-rate", type=float, default=0.05)
    parser.add_argument("--keep", type=Path, help="keep the runs in this results directory (and reuse runs there)")
    parser.add_argument("--verbose", action="store_true", help="print every ratio and interval")
    parser.add_argument("--all-pairs", action="store_true", help="also compare every ordered pair of runs")
    parser.add_argument("--save", action="store_true", help="write bench/results/compare_aa.json")
    parser.add_argument("--warmup", default="2s", help="each run's unmeasured warm-up (schedule.warmup)")
    args = parse_args(parser, argv, smoke={"runs": 2, "duration": "3s", "rate": 50, "warmup": "0s",
                                           "max_flag_rate": 1.0, "save": True})
    start_machine = machine()
    keyramp = Path(sys.executable).with_name("keyramp")
    with tempfile.TemporaryDirectory(prefix="kr-aa-") as tmp:
        profile = Path(tmp) / "aa.toml"
        profile.write_text(PROFILE.format(backend=args.backend, duration=args.duration, rate=args.rate,
                                          warmup=args.warmup))
        results = args.keep or Path(tmp) / "results"
        have = len(list_runs(results)) if args.keep else 0
        for i in range(have, args.runs):
            started = time.monotonic()
            subprocess.run([str(keyramp), "run", str(profile), "--out", str(results), "--quiet"], check=True,
                           stdout=subprocess.DEVNULL)
            print(f"run {i + 1}/{args.runs} in {time.monotonic() - started:.1f} s", flush=True)
            loads_file = results / "loads.json"  # 1-min load average after each run
            loads = json.loads(loads_file.read_text()) if loads_file.exists() else []
            loads_file.write_text(json.dumps([*loads, round(os.getloadavg()[0], 2)]))
        runs = sorted(list_runs(results), key=lambda r: r.run_id)
        base, others = runs[0], runs[1:]
        started = time.monotonic()
        cmp = build_comparison(others, baseline=base)
        elapsed = time.monotonic() - started
        pairs = [_per_comparison(build_comparison([r for r in runs if r is not b], baseline=b))
                 for b in runs] if args.all_pairs else []
        late = {r.run_id: _late_share(r) for r in runs}
        loads_file = results / "loads.json"
        loads = json.loads(loads_file.read_text()) if loads_file.exists() else []
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
    per = _per_comparison(cmp)
    n_flag = sum(1 for f, _ in per.values() if f)
    n_unsure = sum(1 for _, u in per.values() if u)
    print(f"A/A: {flagged} of {judged} judged verdicts flagged; {n_flag} of {len(per)} comparisons flagged, "
          f"{n_unsure} with an inconclusive metric; compare took {elapsed:.2f} s")
    summary = {"comparisons": len(per), "flagged": n_flag, "with_inconclusive": n_unsure,
               "verdicts_judged": judged, "verdicts_flagged": flagged,
               "flagged_runs": sorted(k for k, (f, _) in per.items() if f)}
    if pairs:
        all_n = sum(len(p) for p in pairs)
        all_flag = sum(1 for p in pairs for f, _ in p.values() if f)
        all_unsure = sum(1 for p in pairs for _, u in p.values() if u)
        summary |= {"all_pairs": all_n, "all_pairs_flagged": all_flag, "all_pairs_with_inconclusive": all_unsure}
        print(f"all ordered pairs: {all_flag} of {all_n} comparisons flagged ({all_flag / all_n:.1%}), "
              f"{all_unsure} with an inconclusive metric")
    if args.save:
        save("compare_aa", {
            "machine_start": start_machine, "machine_end": machine(),
            "conditions": {"backend": args.backend, "duration": args.duration, "rate": args.rate,
                           "runs": len(runs), "options": cmp.to_dict()["options"],
                           "loadavg_1m_during_runs": {"min": min(loads), "median": sorted(loads)[len(loads) // 2],
                                                      "max": max(loads), "samples": len(loads)} if loads else None},
            "late_share_per_run": late, "summary": summary,
            "verdict_counts": {f"{m}:{v}": n for (m, v), n in sorted(verdicts.items())},
        })
    rate = n_flag / len(per) if per else 0.0
    return 1 if rate > args.max_flag_rate else 0


def _per_comparison(cmp: Comparison) -> dict[str, tuple[bool, bool]]:
    """Candidate run id -> (any metric flagged, any metric inconclusive)."""
    out: dict[str, tuple[bool, bool]] = {}
    for r in cmp.rows:
        flag, unsure = out.get(r.run_id, (False, False))
        out[r.run_id] = (flag or r.verdict in ("worse", "better"), unsure or r.note.startswith("inconclusive"))
    return out


def _late_share(run: Run) -> float:
    ops = [s for cell in run.cells.values() for s in (cell.get("operations") or {}).values()]
    count = sum(s.get("count") or 0 for s in ops)
    return round(sum(s.get("late") or 0 for s in ops) / count, 3) if count else 0.0


if __name__ == "__main__":
    raise SystemExit(main())
