"""Rate accuracy (issue 4): achieved ops/s vs target at every step of step/ramp schedules.

Runs the real ``keyramp run`` in a subprocess against the official emulators and reads
the ``op = "*"`` rows of the time series: per schedule step, achieved = operations
completed in the step's whole seconds / seconds. Goal: within ±2 % of target at every
step while below ~80 % of the emulator's capacity. The last (partial) second is
excluded. Also reports dropped/late operations per step and the worst single second.
The capacity is measured first in the same run (closed model, 50 users) and the step
schedule visits 20/40/60/80 % of it; the 500/50/5 ramp (100 -> 337 ops/s) runs when
337 ops/s is below 80 % of that capacity.

Run: ``.venv/bin/python bench/bench_rate.py [--backends bigtable datastore]``
Writes ``bench/results/rate.json``. ``--smoke``: Bigtable, a 3 s capacity run, then the steps
at 1 s each (no ramp).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, emulators, env_for, machine, parse_args, save, table, write_profile

#: Fractions of the measured capacity the step schedule visits (``--step-s`` each).
STEP_FRACTIONS = (0.2, 0.4, 0.6, 0.8)
#: The issue's 500/50/5 check: 100 -> 150 -> 225 -> 337 ops/s, 5 min steps at 60x (5 s wall).
RAMP: dict[str, Any] = {"kind": "ramp_500_50_5", "start_ops": 100, "growth": 0.5, "step": "5m", "time_scale": 60}
OPS = {"insert": 0.5, "read": 0.5}


def run_keyramp(profile: Path, out: Path, env: dict[str, str]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(out), "--quiet"],
                          env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    runs = sorted(p for p in out.iterdir() if p.is_dir())
    if proc.returncode not in (0, 1) or not runs:
        raise RuntimeError(f"keyramp run failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return runs[-1]


def steps_of(run_dir: Path) -> tuple[list[dict[str, Any]], float]:
    summary = json.loads((run_dir / "summary.json").read_text())
    (cell_id, cell), = summary["cells"].items()
    duration = cell["duration_s"]
    from keyramp.results._read import read_timeseries

    rows = read_timeseries(run_dir, cell=cell_id, op="*").to_pylist()
    whole = [r for r in rows if int(r["second"]) + 1 <= int(duration + 1e-6)]
    by_target: dict[float, list[dict[str, str]]] = defaultdict(list)
    order: list[float] = []
    for r in whole:
        target = float(r["target_ops_per_s"])
        if target not in by_target:
            order.append(target)
        by_target[target].append(r)
    steps = []
    worst_second = 0.0
    for target in order:
        rs = by_target[target]
        count = sum(int(r["count"]) for r in rs)
        achieved = count / len(rs)
        for r in rs:
            worst_second = max(worst_second, abs(int(r["count"]) / target - 1))
        steps.append({"target": target, "seconds": len(rs), "achieved": round(achieved, 2),
                      "ratio": round(achieved / target, 4), "dropped": sum(int(r["dropped"]) for r in rs),
                      "late": sum(int(r["late"]) for r in rs), "errors": sum(int(r["errors"]) for r in rs),
                      "p99_ms_max": max(float(r["p99_ms"]) for r in rs)})
    return steps, worst_second


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backends", nargs="+", default=["bigtable", "datastore"])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--capacity-s", type=float, default=8.0, help="the closed-model capacity run's duration")
    parser.add_argument("--step-s", type=float, default=4.0, help="wall seconds per step of the step schedule")
    parser.add_argument("--ramp", action=argparse.BooleanOptionalAction, default=True,
                        help="also the 500/50/5 ramp where capacity allows (default on)")
    parser.add_argument("--schedule-warmup", default="2s", help="each run's unmeasured warm-up (schedule.warmup)")
    args = parse_args(parser, argv, smoke={"backends": ["bigtable"], "reps": 1, "capacity_s": 3.0, "step_s": 1.0,
                                           "ramp": False, "schedule_warmup": "0s"})
    step_s = args.step_s
    before = machine()
    results: list[dict[str, Any]] = []
    table_rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-") as tmp:
        tmpdir = Path(tmp)
        for backend in args.backends:
            with emulators(backend) as running:
                env = env_for(running[backend])
                for rep in range(args.reps):
                    # Capacity now (the shared box changes minute to minute): closed model, 50 users.
                    cap_profile = write_profile(
                        tmpdir / "cap.toml",
                        {"name": "bench-capacity", "backend": backend, "duration": f"{args.capacity_s}s",
                         "seed": 3},
                        workload={"ops": OPS, "record_count": 1000}, keys={"strategy": "random"},
                        schedule={"kind": "users", "users": 50, "spawn_rate": 50, "warmup": args.schedule_warmup},
                    )
                    cap_dir = run_keyramp(cap_profile, tmpdir / "out", env)
                    (cap_cell,) = json.loads((cap_dir / "summary.json").read_text())["cells"].values()
                    capacity = cap_cell["total"]["ops_per_s"]
                    steps = [round(capacity * f, -1) for f in STEP_FRACTIONS]
                    schedules = {f"step {'/'.join(str(int(x)) for x in steps)} (20-80 % of capacity)":
                                 ({"kind": "step", "steps": steps, "step": f"{step_s}s"}, step_s * len(steps))}
                    if args.ramp and 0.8 * capacity >= 337.5:
                        schedules["ramp_500_50_5 @60x from 100"] = (RAMP, 20)
                    print(f"{backend} rep{rep}: capacity {capacity} ops/s", flush=True)
                    for name, (schedule, duration) in schedules.items():
                        profile = write_profile(
                            tmpdir / "rate.toml",
                            {"name": "bench-rate", "backend": backend, "duration": f"{duration}s", "seed": 3},
                            workload={"ops": OPS, "record_count": 1000},
                            keys={"strategy": "random"},
                            schedule={**schedule, "warmup": args.schedule_warmup},
                        )
                        run_dir = run_keyramp(profile, tmpdir / "out", env)
                        steps_out, worst = steps_of(run_dir)
                        for s in steps_out:
                            s["fraction_of_capacity"] = round(s["target"] / capacity, 3)
                        results.append({"backend": backend, "schedule": name, "rep": rep, "capacity": capacity,
                                        "steps": steps_out, "worst_second_deviation": round(worst, 4),
                                        "max_step_deviation": round(max(abs(s["ratio"] - 1) for s in steps_out), 4)})
                        for s in steps_out:
                            table_rows.append(
                                [
                                    backend,
                                    rep,
                                    name.split(" (")[0],
                                    s["target"],
                                    s["fraction_of_capacity"],
                                    s["achieved"],
                                    f"{(s['ratio'] - 1) * 100:+.2f}%",
                                    s["dropped"],
                                    s["late"],
                                    s["p99_ms_max"],
                                ]
                            )
                        print(f"{backend} {name}: worst step {max(abs(s['ratio'] - 1) for s in steps_out) * 100:.2f} %",
                              flush=True)
    print(table(["backend", "rep", "schedule", "target", "of cap", "achieved", "error", "dropped", "late",
                 "p99 ms (max s)"], table_rows))
    worst = max(r["max_step_deviation"] for r in results)
    print(f"worst step deviation: {worst * 100:.2f} % (goal ≤ 2 %)")
    path = save("rate", {"bench": "rate", "machine_before": before, "machine_after": machine(),
                         "worst_step_deviation": worst, "runs": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
