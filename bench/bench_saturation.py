"""Saturation (issue 11, item 4): 1 vs 2 keyramp load processes, and where the CPU goes.

Each configuration runs N ``keyramp run`` processes at once (closed-model ``users``
schedule, each into its own ``--out``) against one emulator; their measured ops/s are
summed. Meanwhile psutil samples the CPU of the emulator process and of the load
processes every 0.5 s; the busiest middle of the run (the load processes' measured
phases) gives cores used by each side. 1 and 2 processes alternate (1,2,1,2…).

Run: ``.venv/bin/python bench/bench_saturation.py`` -> ``bench/results/saturation.json``.
``--smoke``: one Bigtable load process, 4 users, 3 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import itertools

from _common import ROOT, emulators, env_for, machine, median, parse_args, save, table, write_profile


def _cpu(proc: psutil.Process) -> float:
    try:
        t = proc.cpu_times()
        return t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
    except psutil.Error:
        return float("nan")


def one_config(n: int, profile: Path, emulator_pid: int, env: dict[str, str], out: Path, *, users: int,
               duration: float) -> dict[str, Any]:
    cmd = [sys.executable, str(ROOT / "bench" / "_contestant.py"), "keyramp", str(profile), "--endpoint", "unused",
           "--users", str(users), "--duration", str(duration)]
    out.mkdir(parents=True, exist_ok=True)
    # Output to files, not pipes: a client logging errors could fill a pipe and block the run.
    logs = [(open(out / f"p{i}.out", "w+"), open(out / f"p{i}.err", "w+")) for i in range(n)]  # noqa: SIM115 - read back after
    procs = [subprocess.Popen([*cmd, "--out", str(out / f"p{i}")], env=env, stdout=o, stderr=e, text=True, cwd=ROOT)
             for i, (o, e) in enumerate(logs)]
    emu = psutil.Process(emulator_pid)
    loads = [psutil.Process(p.pid) for p in procs]
    samples: list[tuple[float, float, float, float]] = []  # (t, emulator cpu, load cpu, system cpu%)
    psutil.cpu_percent(None)
    while any(p.poll() is None for p in procs):
        samples.append((time.perf_counter(), _cpu(emu), sum(_cpu(p) for p in loads if p.is_running()),
                        psutil.cpu_percent(None)))
        time.sleep(0.5)
    results = []
    for p, (o, e) in zip(procs, logs, strict=True):
        p.wait()
        o.seek(0)
        e.seek(0)
        stdout, stderr = o.read(), e.read()
        o.close()
        e.close()
        line = next((ln for ln in stdout.splitlines() if ln.startswith("BENCH ")), None)
        if p.returncode or line is None:
            raise RuntimeError(f"load process failed ({p.returncode}): {stderr[-1500:]}")
        results.append(json.loads(line[6:]))
    # The measured phases are the last `duration` s before the processes finish their
    # summaries; take per-interval CPU rates over the middle of that stretch.
    end = samples[-1][0]
    window = [s for s in samples if end - duration - 1.0 <= s[0] <= end - 1.5]
    rates_emu, rates_load, sys_pct = [], [], []
    for a, b in itertools.pairwise(window):
        dt = b[0] - a[0]
        rates_emu.append((b[1] - a[1]) / dt)
        if b[2] >= a[2]:  # a process that exited makes the sum drop: skip that interval
            rates_load.append((b[2] - a[2]) / dt)
        sys_pct.append(b[3])
    return {
        "processes": n,
        "errors": sum(r["errors"] for r in results),
        "ops_per_s": round(sum(r["ops_per_s"] for r in results), 1),
        "per_process": [r["ops_per_s"] for r in results],
        "load_cpu_us_per_op": round(median([r["cpu_us_per_op"] for r in results]), 1),
        "emulator_cores": round(median(rates_emu), 2),
        "load_cores": round(median(rates_load), 2),
        "machine_cpu_pct": round(median(sys_pct), 1),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backends", nargs="+", default=["bigtable", "datastore"])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2], help="load processes per configuration")
    parser.add_argument("--schedule-warmup", default="2s", help="each run's unmeasured warm-up (schedule.warmup)")
    args = parse_args(parser, argv, smoke={"backends": ["bigtable"], "reps": 1, "users": 4, "duration": 3.0,
                                           "processes": [1], "schedule_warmup": "0s"})
    before = machine()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-") as tmp:
        tmpdir = Path(tmp)
        for backend in args.backends:
            with emulators(backend) as running:
                emu = running[backend]
                profile = write_profile(
                    tmpdir / f"sat-{backend}.toml",
                    {"name": f"bench-sat-{backend}", "backend": backend, "duration": f"{args.duration}s", "seed": 5},
                    workload={"ops": {"insert": 1.0}, "record_count": 0}, keys={"strategy": "random"},
                    schedule={"kind": "users", "users": args.users, "spawn_rate": args.users,
                              "warmup": args.schedule_warmup},
                )
                for rep in range(args.reps):
                    for n in args.processes:
                        r = one_config(n, profile, emu.pid, env_for(emu), tmpdir / f"out-{backend}-{rep}-{n}",
                                       users=args.users, duration=args.duration)
                        r.update(backend=backend, rep=rep, loadavg=[round(x, 2) for x in __import__("os").getloadavg()])
                        runs.append(r)
                        print(f"{backend} rep{rep} {n} proc: {r['ops_per_s']} ops/s, emulator {r['emulator_cores']} "
                              f"cores, load {r['load_cores']} cores", flush=True)
    rows, summary = [], []
    for backend in args.backends:
        med = {}
        for n in args.processes:
            rs = [r for r in runs if r["backend"] == backend and r["processes"] == n]
            med[n] = {k: median([r[k] for r in rs]) for k in ("ops_per_s", "emulator_cores", "load_cores",
                                                               "load_cpu_us_per_op", "machine_cpu_pct")}
            rows.append([backend, n, *med[n].values()])
        scaling = round(med[2]["ops_per_s"] / med[1]["ops_per_s"], 3) if 1 in med and 2 in med else None
        summary.append({"backend": backend, "one": med.get(1), "two": med.get(2), "scaling_2_vs_1": scaling})
    print(table(["backend", "procs", "ops/s (sum)", "emulator cores", "load cores", "load µs CPU/op", "machine CPU %"],
                rows))
    for s in summary:
        print(f"{s['backend']}: 2 processes / 1 process = {s['scaling_2_vs_1']}×")
    path = save("saturation", {"bench": "saturation", "args": vars(args), "machine_before": before,
                               "machine_after": machine(), "summary": summary, "runs": runs})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
