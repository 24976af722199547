"""Run directory size per hour (issues 11 and 20): a 5-operation run, as a marginal rate.

What grows with time is per second: the time series (one row per op + ``*``),
``histograms/*.hlog`` (two interval lines per op), the key samples (up to
``key_samples_per_s``) and Locust's ``_stats_history.csv``. Everything else is written
once, and Parquet files carry a footer of a few kB whatever their length, so a short run
overstates the rate: size per hour is the *marginal* rate between a short and a long run of
the same profile, (bytes_long − bytes_short) / (seconds_long − seconds_short) × 3,600, per
file kind. With ``--before-src DIR`` (the code before Parquet: ``mkdir /tmp/kr-before &&
git archive 5413844 | tar -x -C /tmp/kr-before``) every configuration also runs with that
code, interleaved (before, after, after, before), so both figures come from one session.
Goal (issue 20): ≤ 15 MB per hour at 100 key samples/s (44 MB/h with CSV).

Run: ``.venv/bin/python bench/bench_rundir.py [--rate 300] [--durations 20 80] [--before-src DIR]``
Writes ``bench/results/rundir.json``. ``--smoke``: random keys, 2 s and 3 s runs at 50 ops/s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emulators, env_for, machine, parse_args, save, table, write_profile

OPS = {"insert": 0.4, "read": 0.3, "update": 0.1, "scan": 0.1, "delete": 0.1}


def kind_of(path: Path, run_dir: Path) -> str:
    rel = path.relative_to(run_dir).parts
    if path.suffix == ".hlog":
        return "histograms: all ops (*.all.hlog)" if ".all." in path.name else "histograms: per op"
    if path.name in ("timeseries.csv", "keys.csv") or rel[0] in ("timeseries", "keys"):
        name = path.name.split(".")[0] if path.suffix == ".csv" else rel[0]
        return f"{name} ({'csv' if path.suffix == '.csv' else 'parquet'})"
    if path.name.endswith("_stats_history.csv"):
        return "locust/*_stats_history.csv"
    return "other (manifest, summary: its per-second target timeline grows, report, locust totals)"


def run_keyramp(profile: Path, out: Path, env: dict[str, str], src: Path | None) -> Path:
    """``keyramp run`` from this checkout, or from ``src`` (its package shadows the installed one)."""
    out.mkdir(parents=True, exist_ok=True)
    run_env = dict(env)
    if src is not None:
        run_env["PYTHONPATH"] = str(src)
    proc = subprocess.run([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(out), "--quiet"],
                          env=run_env, capture_output=True, text=True, timeout=600, cwd=src or Path.cwd())
    runs = sorted(p for p in out.iterdir() if p.is_dir())
    if proc.returncode not in (0, 1) or not runs:
        raise RuntimeError(f"keyramp run failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return runs[-1]


def measure(run_dir: Path) -> tuple[float, dict[str, int], float]:
    (cell,) = json.loads((run_dir / "summary.json").read_text())["cells"].values()
    sizes: dict[str, int] = {}
    for f in run_dir.rglob("*"):
        if f.is_file():
            kind = kind_of(f, run_dir)
            sizes[kind] = sizes.get(kind, 0) + f.stat().st_size
    return cell["duration_s"], sizes, cell["total"]["ops_per_s"]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="bigtable")
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--durations", type=int, nargs=2, default=[20, 80], metavar=("SHORT", "LONG"))
    parser.add_argument("--key-samples", type=int, default=100)
    parser.add_argument("--strategies", nargs="+", default=["random", "sequential"])
    parser.add_argument("--before-src", type=Path, default=None, metavar="DIR",
                        help="a checkout of the code before Parquet, run interleaved with this one")
    parser.add_argument("--schedule-warmup", default="2s", help="each run's unmeasured warm-up (schedule.warmup)")
    args = parse_args(parser, argv, smoke={"rate": 50.0, "durations": [2, 3], "strategies": ["random"],
                                           "schedule_warmup": "0s"})
    before = machine()
    versions: list[tuple[str, Path | None]] = [("after", None)]
    if args.before_src is not None:
        versions = [("before", args.before_src.resolve()), ("after", None)]
    results: list[dict[str, Any]] = []
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-") as tmp, emulators(args.backend) as running:
        tmpdir = Path(tmp)
        env = env_for(running[args.backend])
        for i, strategy in enumerate(args.strategies):
            measured: dict[str, list[tuple[float, dict[str, int], float]]] = {name: [] for name, _ in versions}
            for duration in args.durations:
                order = versions if (i + args.durations.index(duration)) % 2 == 0 else versions[::-1]
                for name, src in order:  # ABBA: neither version always runs on the warmer emulator
                    profile = write_profile(
                        tmpdir / f"{name}.toml",
                        {"name": "bench-rundir", "backend": args.backend, "duration": f"{duration}s", "seed": 9},
                        workload={"ops": OPS, "record_count": 2000, "key_samples_per_s": args.key_samples},
                        keys={"strategy": strategy},
                        schedule={"kind": "constant", "rate": args.rate, "warmup": args.schedule_warmup},
                    )
                    out = tmpdir / f"out-{name}-{strategy}-{duration}"
                    measured[name].append(measure(run_keyramp(profile, out, env, src)))
            for name, _ in versions:
                (s0, b0, _), (s1, b1, ops) = measured[name]
                per_hour = {k: round((b1.get(k, 0) - b0.get(k, 0)) / (s1 - s0) * 3600 / 1e6, 2) for k in b1}
                total = round(sum(per_hour.values()), 2)
                results.append({"version": name, "strategy": strategy, "key_samples_per_s": args.key_samples,
                                "rate": args.rate, "ops": OPS, "seconds": [s0, s1], "achieved_ops_per_s": ops,
                                "bytes": [b0, b1], "mb_per_hour": per_hour, "mb_per_hour_total": total})
                for k, v in sorted(per_hour.items()):
                    rows.append([name, strategy, k, v])
                rows.append([name, strategy, "TOTAL per hour (MB)", total])
                print(f"{name} {strategy}: {total} MB/h at {ops} ops/s", flush=True)
    print(table(["code", "keys", "file", "MB per hour"], rows))
    path = save("rundir", {"bench": "rundir", "machine_before": before, "machine_after": machine(), "args": {
        k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "runs": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
