"""``keyramp export RUN --csv`` (CSV for spreadsheets) and ``keyramp migrate`` (CSV runs -> Parquet).

Export writes the CSV layout runs had before Parquet (``timeseries.csv``: ``error_classes``
as ``CLASS:n;CLASS:n``; ``keys.csv``: ``t`` in seconds), one cell at a time, so a long run
never sits in memory whole. Migrate rewrites runs written as CSV into the Parquet layout
(verified by reading the rows back before the CSV files go) and compacts the parts a
killed run left behind; runs already in the current layout are left alone.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from keyramp._errors import UsageError
from keyramp.results._catalog import RUN_ID_RE, Run, resolve_run
from keyramp.results._legacy import KEYS_CSV, TIMESERIES_CSV, classes_text, read_keys_csv, read_timeseries_csv
from keyramp.results._parquet import KINDS, compact, kind_cells, write_cell
from keyramp.results._read import data_cells, is_csv_run, read_keys, read_timeseries

__all__ = ["Migrated", "export_csv", "migrate_run", "register"]


def _csv_timeseries(table: pa.Table) -> pa.Table:
    texts = [classes_text(v) for v in table.column("error_classes").to_pylist()]
    return table.set_column(table.column_names.index("error_classes"), "error_classes", pa.array(texts, pa.string()))


def _csv_keys(table: pa.Table) -> pa.Table:
    t = pc.divide(pc.cast(table.column("t_us"), pa.float64()), 1e6)
    return pa.table({"cell": table.column("cell"), "t": t, "op": table.column("op"), "key": table.column("key")})


def _write_csv(path: Path, tables: Iterator[pa.Table]) -> int:
    """Write ``tables`` (at least one, all of one schema: the first's) as one CSV file."""
    first = next(tables)
    rows = 0
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with pacsv.CSVWriter(tmp, first.schema) as writer:
        for table in itertools.chain([first], tables):
            writer.write_table(table)
            rows += table.num_rows
    os.replace(tmp, path)
    return rows


def export_csv(run: Run, out_dir: Path) -> dict[str, int]:
    """Write ``timeseries.csv`` and ``keys.csv`` of ``run`` into ``out_dir``; rows written per file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ts_cells = data_cells(run, "timeseries")
    key_cells = data_cells(run, "keys")
    written = {}
    if ts_cells:
        written[TIMESERIES_CSV] = _write_csv(out_dir / TIMESERIES_CSV,
                                             (_csv_timeseries(read_timeseries(run, cell=c)) for c in ts_cells))
    if key_cells:
        written[KEYS_CSV] = _write_csv(out_dir / KEYS_CSV, (_csv_keys(read_keys(run, cell=c)) for c in key_cells))
    return written


@dataclass(frozen=True, kw_only=True)
class Migrated:
    """What ``migrate_run`` did to one run directory."""

    run_id: str
    action: str  # "converted", "compacted", "current"
    rows: dict[str, int]
    bytes_before: int
    bytes_after: int


def _data_bytes(path: Path) -> int:
    total = 0
    for name in (TIMESERIES_CSV, KEYS_CSV, *KINDS):
        p = path / name
        if p.is_file():
            total += p.stat().st_size
        elif p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return total


def migrate_run(path: Path, *, keep_csv: bool = False) -> Migrated:
    """Bring one run directory to the current layout (idempotent)."""
    before = _data_bytes(path)
    rows: dict[str, int] = {}
    if is_csv_run(path):
        tables = {"timeseries": read_timeseries_csv(path / TIMESERIES_CSV),
                  "keys": read_keys_csv(path / KEYS_CSV) if (path / KEYS_CSV).is_file() else None}
        for kind, table in tables.items():
            if table is None:
                continue
            target = path / kind
            target.mkdir(exist_ok=True)
            for cell in sorted(set(table.column("cell").to_pylist())):
                # the table has the kind's schema (``_legacy``): written as ``compact`` writes a cell
                write_cell(table.filter(pc.equal(table.column("cell"), cell)), target, cell, kind)
            back = read_timeseries(path) if kind == "timeseries" else read_keys(path)
            if back.num_rows != table.num_rows:  # never delete what was not written back
                raise UsageError(f"{path}: migrating {kind} wrote {back.num_rows} rows, the CSV has {table.num_rows}")
            rows[kind] = table.num_rows
        if not keep_csv:
            for name in (TIMESERIES_CSV, KEYS_CSV):
                (path / name).unlink(missing_ok=True)
        action = "converted"
    else:
        action = "current"
        for kind in KINDS:
            for cell in kind_cells(path / kind):
                if (path / kind / f"{cell}.parts").is_dir():
                    compact(path / kind, cell, kind)
                    action = "compacted"
    return Migrated(run_id=path.name, action=action, rows=rows, bytes_before=before, bytes_after=_data_bytes(path))


# ----------------------------------------------------------------------------- CLI


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
    run = resolve_run(args.run, Path(args.results))
    out = args.out or run.path / "export"
    written = export_csv(run, out)
    if not written:
        raise UsageError(f"{run.path}: no time series or key samples to export")
    for name, rows in written.items():
        print(f"{out / name}\t{rows} rows")
    return 0


def _cmd_migrate(args: argparse.Namespace) -> int:
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
