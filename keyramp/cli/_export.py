"""``keyramp export RUN --csv`` and ``keyramp migrate [RUN...]`` (``keyramp.results._export``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from keyramp.core import UsageError
from keyramp.results import RUN_ID_RE, resolve_run

__all__ = ["register"]


def register(subparsers: Any) -> None:
    exp = subparsers.add_parser("export", help="write a run's time series and key samples as CSV",
                                description="Write RUN's timeseries.csv and keys.csv (the CSV layout of runs before "
                                            "Parquet) for spreadsheets.")
    exp.add_argument("run", metavar="RUN", help="run id (under --results) or run directory")
    exp.add_argument("--csv", action="store_true", required=True, help="CSV (the one export format)")
    exp.add_argument("--out", type=Path, default=None, metavar="DIR", help="output directory (default RUN/export)")
    exp.add_argument("--results", type=Path, default=Path("results"), metavar="DIR",
                     help="results directory (default: ./results)")
    exp.set_defaults(func=_cmd_export)
    mig = subparsers.add_parser("migrate", help="rewrite CSV-format runs as Parquet; compact parts of killed runs",
                                description="Bring every run under --results (or the named ones) to the current "
                                            "run-directory layout: CSV time series and key samples become Parquet "
                                            "(rows verified before the CSV files are removed), parts a killed run "
                                            "left are compacted. Idempotent.")
    mig.add_argument("runs", nargs="*", metavar="RUN", help="run ids or directories (default: every run)")
    mig.add_argument("--results", type=Path, default=Path("results"), metavar="DIR",
                     help="results directory (default: ./results)")
    mig.add_argument("--keep-csv", action="store_true", help="keep timeseries.csv and keys.csv after converting")
    mig.set_defaults(func=_cmd_migrate)


def _cmd_export(args: argparse.Namespace) -> int:
    from keyramp.results import export_csv  # deferred: start-up cost (pyarrow: the Parquet files)

    run = resolve_run(args.run, Path(args.results))
    out = args.out or run.path / "export"
    written = export_csv(run, out)
    if not written:
        raise UsageError(f"{run.path}: no time series or key samples to export")
    for name, rows in written.items():
        print(f"{out / name}\t{rows} rows")
    return 0


def _cmd_migrate(args: argparse.Namespace) -> int:
    from keyramp.results import migrate_run  # deferred: start-up cost (pyarrow: the Parquet files)

    results = Path(args.results)
    if args.runs:
        paths = [resolve_run(spec, results).path for spec in args.runs]
    else:
        if not results.is_dir():
            raise UsageError(f"--results {results} is not a directory")
        paths = sorted(p for p in results.iterdir() if p.is_dir() and RUN_ID_RE.match(p.name))
    for path in paths:
        done = migrate_run(path, keep_csv=args.keep_csv)
        size = f"{done.bytes_before / 1e6:.2f} MB -> {done.bytes_after / 1e6:.2f} MB"
        rows = ", ".join(f"{k} {v} rows" for k, v in done.rows.items())
        sys.stdout.write(f"{done.run_id}\t{done.action}\t{size}\t{rows}\n")
    return 0
