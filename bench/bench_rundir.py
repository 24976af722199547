"""Run directory size per hour (issues 11 and 20): a short 5-operation run, extrapolated.

What grows with time is per second: the time series (one row per op + ``*``),
``histograms/*.hlog`` (two interval lines per op + ``*``), the key samples (up to
``key_samples_per_s``) and Locust's ``_stats_history.csv``. Everything else is written
once, and Parquet files carry a footer of a few kB whatever their length, so a short run
overstates the rate: size per hour is the *marginal* rate between a short and a long run of
the same profile, (bytes_long − bytes_short) / (seconds_long − seconds_short) × 3,600, per
file kind. The same runs' time series and key samples are also exported as CSV (``keyramp
export --csv``: the layout before Parquet) so Parquet and CSV are compared on the same
rows. Goal (issue 20): ≤ 15 MB per hour at 100 key samples/s (44 MB/h with CSV).

Run: ``.venv/bin/python bench/bench_rundir.py [--rate 300] [--duration 20]``
Writes ``bench/results/rundir.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emulators, env_for, machine, save, table, write_profile  # noqa: E402
from bench_rate import run_keyramp  # noqa: E402

OPS = {"insert": 0.4, "read": 0.3, "update": 0.1, "scan": 0.1, "delete": 0.1}


def kind_of(path: Path, run_dir: Path) -> str:
    rel = path.relative_to(run_dir).parts
    if path.suffix == ".hlog":
        return "histograms/<cell>.all*.hlog (all ops)" if ".all." in path.name else "histograms/<cell>.<op>*.hlog"
    if rel[0] in ("timeseries", "keys", "export"):
        return f"{rel[0]}/ ({'csv' if path.suffix == '.csv' else 'parquet'})" if rel[0] != "export" else \
            f"export/{path.name} (same rows as CSV)"
    if path.name.endswith("_stats_history.csv"):
        return "locust/*_stats_history.csv"
    return "fixed (manifest, summary, report, locust totals)"


def _export_csv(run_dir: Path) -> None:
    subprocess.run([sys.executable, "-m", "keyramp", "export", str(run_dir), "--csv", "--out", str(run_dir / "export")],
                   check=True, capture_output=True, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="bigtable")
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--durations", type=int, nargs=2, default=[20, 80], metavar=("SHORT", "LONG"))
    parser.add_argument("--key-samples", type=int, nargs="+", default=[100])
    parser.add_argument("--strategies", nargs="+", default=["random", "sequential"])
    args = parser.parse_args()
    before = machine()
    results: list[dict[str, Any]] = []
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-") as tmp, emulators(args.backend) as running:
        tmpdir = Path(tmp)
        env = env_for(running[args.backend])
        for budget in args.key_samples:
            for strategy in args.strategies:
                measured = []
                for duration in args.durations:
                    profile = write_profile(
                        tmpdir / "rundir.toml",
                        {"name": "bench-rundir", "backend": args.backend, "duration": f"{duration}s", "seed": 9},
                        workload={"ops": OPS, "record_count": 2000, "key_samples_per_s": budget},
                        keys={"strategy": strategy},
                        schedule={"kind": "constant", "rate": args.rate},
                    )
                    run_dir = run_keyramp(profile, tmpdir / f"out-{budget}-{strategy}-{duration}", env)
                    _export_csv(run_dir)
                    (cell,) = json.loads((run_dir / "summary.json").read_text())["cells"].values()
                    sizes: dict[str, int] = {}
                    for f in run_dir.rglob("*"):
                        if f.is_file():
                            sizes[kind_of(f, run_dir)] = sizes.get(kind_of(f, run_dir), 0) + f.stat().st_size
                    samples = sum(1 for _ in (run_dir / "export" / "keys.csv").open()) - 1
                    measured.append((cell["duration_s"], sizes, samples, cell["total"]["ops_per_s"]))
                (s0, b0, n0, _), (s1, b1, n1, ops) = measured
                per_hour = {k: round((b1.get(k, 0) - b0.get(k, 0)) / (s1 - s0) * 3600 / 1e6, 2) for k in b1}
                parquet = {k: v for k, v in per_hour.items() if not k.startswith("export/")}
                csv_layout = {k: v for k, v in per_hour.items() if not k.startswith(("timeseries/", "keys/"))}
                total = round(sum(parquet.values()), 2)
                total_csv = round(sum(csv_layout.values()), 2)
                results.append({"key_samples_per_s": budget, "strategy": strategy, "rate": args.rate, "ops": OPS,
                                "seconds": [s0, s1], "achieved_ops_per_s": ops,
                                "key_samples_per_s_measured": round((n1 - n0) / (s1 - s0), 1),
                                "bytes": [b0, b1], "mb_per_hour": per_hour,
                                "mb_per_hour_total": total, "mb_per_hour_total_csv_layout": total_csv})
                for k, v in sorted(per_hour.items()):
                    rows.append([budget, strategy, k, v])
                rows.append([budget, strategy, "TOTAL per hour, Parquet (MB)", total])
                rows.append([budget, strategy, "TOTAL per hour, same runs as CSV (MB)", total_csv])
                print(f"key budget {budget}/s, {strategy}: {total} MB/h (as CSV {total_csv}) at {ops} ops/s, "
                      f"{(n1 - n0) / (s1 - s0):.0f} key samples/s", flush=True)
    print(table(["key samples/s", "keys", "file", "MB per hour"], rows))
    path = save("rundir", {"bench": "rundir", "machine_before": before, "machine_after": machine(), "args": vars(args),
                           "runs": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
