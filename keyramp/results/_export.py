"""``keyramp export RUN --csv`` (CSV for spreadsheets) and ``keyramp migrate`` (CSV runs -> Parquet).

Export writes the CSV layout runs had before Parquet (``timeseries.csv``: ``error_classes``
as ``CLASS:n;CLASS:n``; ``keys.csv``: ``t`` in seconds), one cell at a time, so a long run
never sits in memory whole. Migrate rewrites runs written as CSV into the Parquet layout
(verified by reading the rows back before the CSV files go) and compacts the parts a
killed run left behind; runs already in the current layout are left alone.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from keyramp.core import UsageError
from keyramp.results._catalog import Run
from keyramp.results._legacy import KEYS_CSV, TIMESERIES_CSV, classes_text, read_keys_csv, read_timeseries_csv
from keyramp.results._parquet import KINDS, compact, kind_cells, write_cell
from keyramp.results._read import data_cells, data_files, is_csv_run, read_keys, read_timeseries

__all__ = ["Migrated", "export_cell", "export_csv", "migrate_run"]


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


def export_cell(run: Run, cell: str, kind: str, fmt: str, out: IO[bytes]) -> Path | None:
    """One cell's rows of ``kind`` (``timeseries`` or ``keys``) as ``fmt`` (``csv``: the layout of
    ``export_csv``; ``parquet``: the run-format schema). A finished cell's Parquet file is returned
    to be sent as it is (nothing written to ``out``); otherwise the rows are written to ``out`` and
    None returned. A cell without rows of that kind is a ``UsageError``."""
    if cell not in data_cells(run, kind):
        raise UsageError(f"no {kind} rows for cell {cell!r}")
    if fmt == "parquet" and not is_csv_run(run, kind):
        files = data_files(run, cell, kind)
        if files.complete and len(files.paths) == 1:
            return files.paths[0]
    table = read_timeseries(run, cell=cell) if kind == "timeseries" else read_keys(run, cell=cell)
    if fmt == "parquet":
        pq.write_table(table, out, compression="zstd")
    else:
        pacsv.write_csv(_csv_timeseries(table) if kind == "timeseries" else _csv_keys(table), out)
    return None


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
