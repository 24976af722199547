"""Run directory size per hour (issue 11, item 6): a short 5-operation run, extrapolated.

What grows with time is per second: ``timeseries.csv`` (one row per op + ``*``),
``histograms/*.hlog`` (two interval lines per op + ``*``), ``keys.csv`` (up to
``key_samples_per_s`` samples) and Locust's ``_stats_history.csv``. Everything else is
written once. Size per hour = (bytes after the run − fixed files) / seconds × 3,600,
per file kind. Goal: ≤ 50 MB per hour of 5 operations.

Run: ``.venv/bin/python bench/bench_rundir.py [--rate 300] [--duration 20]``
Writes ``bench/results/rundir.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emulators, env_for, machine, save, table, write_profile  # noqa: E402
from bench_rate import run_keyramp  # noqa: E402

OPS = {"insert": 0.4, "read": 0.3, "update": 0.1, "scan": 0.1, "delete": 0.1}


def kind_of(path: Path) -> str:
    if path.suffix == ".hlog":
        return "histograms/*.hlog"
    if path.name == "timeseries.csv":
        return "timeseries.csv"
    if path.name == "keys.csv":
        return "keys.csv"
    if path.name.endswith("_stats_history.csv"):
        return "locust/*_stats_history.csv"
    return "fixed (manifest, summary, report, locust totals)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="bigtable")
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--key-samples", type=int, nargs="+", default=[500, 100])
    args = parser.parse_args()
    before = machine()
    results: list[dict[str, Any]] = []
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-") as tmp, emulators(args.backend) as running:
        tmpdir = Path(tmp)
        env = env_for(running[args.backend])
        for budget in args.key_samples:
            profile = write_profile(
                tmpdir / "rundir.toml",
                {"name": "bench-rundir", "backend": args.backend, "duration": f"{args.duration}s", "seed": 9},
                workload={"ops": OPS, "record_count": 2000, "key_samples_per_s": budget},
                keys={"strategy": "random"},
                schedule={"kind": "constant", "rate": args.rate},
            )
            run_dir = run_keyramp(profile, tmpdir / f"out-{budget}", env)
            summary = json.loads((run_dir / "summary.json").read_text())
            (cell,) = summary["cells"].values()
            seconds = cell["duration_s"]
            sizes: dict[str, int] = {}
            for f in run_dir.rglob("*"):
                if f.is_file():
                    sizes[kind_of(f)] = sizes.get(kind_of(f), 0) + f.stat().st_size
            per_hour = {k: round(v / seconds * 3600 / 1e6, 2) for k, v in sizes.items() if not k.startswith("fixed")}
            total = round(sum(per_hour.values()), 2)
            results.append({"key_samples_per_s": budget, "rate": args.rate, "ops": OPS, "seconds": seconds,
                            "achieved_ops_per_s": cell["total"]["ops_per_s"], "bytes": sizes,
                            "mb_per_hour": per_hour, "mb_per_hour_total": total})
            for k, v in sorted(per_hour.items()):
                rows.append([budget, k, v])
            rows.append([budget, "TOTAL per hour (MB)", total])
            print(f"key budget {budget}/s: {total} MB/h at {cell['total']['ops_per_s']} ops/s", flush=True)
    print(table(["key samples/s", "file", "MB per hour"], rows))
    path = save("rundir", {"bench": "rundir", "machine_before": before, "machine_after": machine(), "args": vars(args),
                           "runs": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
