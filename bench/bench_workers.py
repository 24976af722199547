"""Locust master/workers (issue 9): 1 vs 2 worker processes against one emulator.

Same profile (inserts, open model, a saturating 20,000 ops/s target) run three ways,
interleaved per repetition against the same emulator:

* ``single``   — ``keyramp run`` as today: one process drives the load itself;
* ``1 worker`` — ``keyramp run --master`` + one ``keyramp run --worker`` process;
* ``2 workers``— ``keyramp run --workers 2`` (the master launches two local workers).

psutil samples the CPU of the emulator, of the master and of the worker processes every
0.5 s; the measured phase is found from the rows appearing in the run's time series,
and CPU is the median rate over its middle seconds. Achieved ops/s, p99 and dropped come
from the run's summary.json.

Run: ``.venv/bin/python bench/bench_workers.py [--backend bigtable] [--reps 2]``
-> ``bench/results/workers.json`` (``workers-<backend>.json`` for other backends).
``--smoke``: ``--workers 2`` alone at 200 ops/s for 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
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

CONFIGS = ("single", "1 worker", "2 workers")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu(proc: psutil.Process) -> float:
    try:
        t = proc.cpu_times()
        return t.user + t.system
    except psutil.Error:
        return float("nan")


def _phase_rows(out: Path) -> int:
    from keyramp.results._read import read_timeseries

    runs = [p for p in out.glob("*") if (p / "timeseries").is_dir()]
    return read_timeseries(runs[0], op="*", columns=["second"]).num_rows if runs else 0


def one_config(config: str, profile: Path, emulator_pid: int, env: dict[str, str], out: Path,
               duration: float) -> dict[str, Any]:
    kr = [sys.executable, "-m", "keyramp", "run"]
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "master.log", "w+")  # noqa: SIM115 - the child's output, read back after
    extra: list[subprocess.Popen[str]] = []
    if config == "single":
        cmd = [*kr, str(profile), "--out", str(out / "run"), "--quiet"]
    elif config == "2 workers":
        cmd = [*kr, str(profile), "--out", str(out / "run"), "--quiet", "--workers", "2"]
    else:
        port = _free_port()
        cmd = [*kr, str(profile), "--out", str(out / "run"), "--quiet", "--master", "--master-port", str(port)]
    master = subprocess.Popen(cmd, env=env, stdout=log, stderr=log, text=True, cwd=ROOT)
    if config == "1 worker":
        wlog = open(out / "worker.log", "w+")  # noqa: SIM115 - the child's output, read back after
        extra.append(subprocess.Popen([*kr, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
                                      env=env, stdout=wlog, stderr=wlog, text=True, cwd=ROOT))
    emu = psutil.Process(emulator_pid)
    mproc = psutil.Process(master.pid)
    samples: list[dict[str, float]] = []
    psutil.cpu_percent(None)
    try:
        while master.poll() is None:
            workers = [psutil.Process(p.pid) for p in extra]
            try:
                workers += [c for c in mproc.children(recursive=True) if "--worker" in " ".join(c.cmdline())]
            except psutil.Error:
                pass
            samples.append({"t": time.perf_counter(), "emu": _cpu(emu), "master": _cpu(mproc),
                            "workers": sum(_cpu(w) for w in workers), "n_workers": len(workers),
                            "rows": _phase_rows(out / "run"), "sys": psutil.cpu_percent(None)})
            time.sleep(0.5)
    finally:
        for p in extra:
            p.wait(timeout=30)
    if master.returncode:
        log.seek(0)
        raise RuntimeError(f"{config}: keyramp run failed ({master.returncode}): {log.read()[-1500:]}")
    run_dir = next((out / "run").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    cell = next(iter(summary["cells"].values()))
    # Middle of the measured phase: rows 2 .. duration-1 written (skip ramp-in and the end).
    window = [s for s in samples if 2 <= s["rows"] <= duration - 1]
    rates: dict[str, list[float]] = {"emu": [], "master": [], "workers": []}
    for a, b in itertools.pairwise(window):
        dt = b["t"] - a["t"]
        for k in rates:
            if b[k] >= a[k] and a.get("n_workers") == b.get("n_workers"):
                rates[k].append((b[k] - a[k]) / dt)
    return {
        "config": config,
        "ops_per_s": cell["total"]["ops_per_s"],
        "target_ops_per_s": cell["target_ops_per_s"][0]["target"] if cell["target_ops_per_s"] else None,
        "count": cell["total"]["count"],
        "errors": cell["total"]["errors"],
        "dropped": cell["total"]["dropped"],
        "p50_ms": cell["total"]["latency_ms"]["p50"],
        "p99_ms": cell["total"]["latency_ms"]["p99"],
        "service_p99_ms": cell["total"]["service_ms"]["p99"],
        "users": cell["users"],
        "emulator_cores": round(median(rates["emu"]), 2),
        "master_cores": round(median(rates["master"]), 2),
        "worker_cores": round(median(rates["workers"]), 2),
        "machine_cpu_pct": round(median([s["sys"] for s in window[1:]]), 1),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def _ratio(summary: dict[str, Any], a: str, b: str) -> float | None:
    return round(summary[a]["ops_per_s"] / summary[b]["ops_per_s"], 3) if a in summary and b in summary else None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="bigtable")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--rate", type=float, default=20_000)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    parser.add_argument("--schedule-warmup", default="2s", help="each run's unmeasured warm-up (schedule.warmup)")
    args = parse_args(parser, argv, smoke={"reps": 1, "rate": 200.0, "duration": 3.0, "configs": ["2 workers"],
                                           "schedule_warmup": "0s"})
    configs = [c for c in CONFIGS if c in args.configs]
    before = machine()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-") as tmp, emulators(args.backend) as running:
        tmpdir = Path(tmp)
        emu = running[args.backend]
        profile = write_profile(
            tmpdir / "workers.toml",
            {"name": "bench-workers", "backend": args.backend, "duration": f"{args.duration}s", "seed": 9},
            workload={"ops": {"insert": 1.0}, "record_count": 0}, keys={"strategy": "field_promotion"},
            schedule={"kind": "constant", "rate": args.rate, "warmup": args.schedule_warmup},
        )
        for rep in range(args.reps):
            order = configs if rep % 2 == 0 else configs[::-1]
            for config in order:
                r = one_config(config, profile, emu.pid, env_for(emu), tmpdir / f"{rep}-{config.replace(' ', '')}",
                               args.duration)
                r["rep"] = rep
                runs.append(r)
                print(f"rep{rep} {config}: {r['ops_per_s']} ops/s, p99 {r['p99_ms']} ms, emulator "
                      f"{r['emulator_cores']} cores, master {r['master_cores']}, workers {r['worker_cores']}, "
                      f"load {r['loadavg']}", flush=True)
    rows: list[list[Any]] = []
    summary: dict[str, Any] = {}
    for config in configs:
        rs = [r for r in runs if r["config"] == config]
        med = {k: median([r[k] for r in rs]) for k in ("ops_per_s", "p99_ms", "emulator_cores", "master_cores",
                                                        "worker_cores", "machine_cpu_pct")}
        summary[config] = med
        rows.append([config, *med.values()])
    summary["two_vs_one_worker"] = _ratio(summary, "2 workers", "1 worker")
    summary["two_workers_vs_single"] = _ratio(summary, "2 workers", "single")
    print(table(["config", "ops/s", "p99 ms", "emulator cores", "master cores", "worker cores", "machine CPU %"],
                rows))
    print(f"2 workers / 1 worker = {summary['two_vs_one_worker']}×, "
          f"2 workers / single process = {summary['two_workers_vs_single']}×")
    name = "workers" if args.backend == "bigtable" else f"workers-{args.backend}"
    path = save(name, {"bench": "workers", "args": vars(args), "machine_before": before, "machine_after": machine(),
                       "summary": summary, "runs": runs})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
