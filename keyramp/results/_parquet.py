"""Parquet datasets in a run directory: written a second at a time, compacted per cell.

Layout (docs/run-format.md), for each kind (``timeseries``, ``keys``)::

    <kind>/<cell>.parquet                    one file per finished cell
    <kind>/<cell>.parts/<first>-<last>.parquet   the cell in progress (or a killed run's)

A Parquet file is readable only once its footer is written, so a file that stays open
for a whole cell would be lost to a crash and invisible to a live reader. Instead every
flush (once a second) closes a small *part*; each ``MERGE_EVERY`` of those are rewritten
from memory into one part named by the range of flushes it covers, and at the end of the
cell every part is compacted into ``<cell>.parquet``. Files appear by rename, so nobody
reads half a file, and a SIGKILL loses at most the rows of the last unflushed second.
A merge renames the wide part in before it deletes the narrow ones, and compaction renames
``<cell>.parquet`` in before it deletes the parts: ``cell_files`` takes the compacted file if
there is one, else the parts no wider part covers, so a reader never counts a row twice.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

__all__ = [
    "KEYS_SCHEMA",
    "KINDS",
    "MERGE_EVERY",
    "SCHEMAS",
    "TIMESERIES_SCHEMA",
    "CellFiles",
    "CellWriter",
    "cell_files",
    "compact",
    "kind_cells",
    "read_files",
    "write_cell",
]

KINDS = ("timeseries", "keys")

TIMESERIES_SCHEMA = pa.schema([
    pa.field("cell", pa.string(), nullable=False),
    pa.field("op", pa.string(), nullable=False),  # "*": all operations of the cell
    pa.field("second", pa.int32(), nullable=False),  # whole seconds since the measured phase started
    pa.field("count", pa.int64()),
    pa.field("errors", pa.int64()),
    pa.field("p50_ms", pa.float64()),
    pa.field("p99_ms", pa.float64()),
    pa.field("service_p99_ms", pa.float64()),
    pa.field("max_ms", pa.float64()),
    pa.field("target_ops_per_s", pa.float64()),  # null for closed-model (users) schedules
    pa.field("late", pa.int64()),
    pa.field("dropped", pa.int64()),
    pa.field("error_classes", pa.map_(pa.string(), pa.int64())),  # gRPC status class -> errors
    # added after the first Parquet runs (their files read these as null)
    pa.field("p95_ms", pa.float64()),
    pa.field("in_flight", pa.float64()),  # mean operations in service over the second (Little's law)
])

KEYS_SCHEMA = pa.schema([
    pa.field("cell", pa.string(), nullable=False),
    pa.field("t_us", pa.int64(), nullable=False),  # µs since the measured phase started (wall time)
    pa.field("op", pa.string(), nullable=False),
    pa.field("key", pa.string(), nullable=False),  # the key's sort text (byte order = store order)
    # Added in keyramp 0.9 (older files read them as null: the kind then follows from the op's name):
    pa.field("kind", pa.string()),  # insert | write | transform | delete | read | query (keyramp.core._types)
    pa.field("index", pa.list_(pa.string())),  # index entries the access wrote (a Python workload's, captured)
    pa.field("access", pa.int16()),  # its number within its operation (0: the first)
])

SCHEMAS = {"timeseries": TIMESERIES_SCHEMA, "keys": KEYS_SCHEMA}

#: Level-0 parts (one flush each) merged into one part; a running cell has at most this many
#: small files plus one per ``MERGE_EVERY`` seconds.
MERGE_EVERY = 60
_ROW_GROUP = 1 << 20  # rows per row group of a compacted file (pyarrow's default maximum)
_PART_RE = re.compile(r"^(\d{8})-(\d{8})\.parquet$")

# Keys are mostly unique (random keys do not repeat): dictionary pages would only be
# discarded; neighbouring keys share prefixes (sequential ids, one tenant's keys), which
# DELTA_BYTE_ARRAY stores once; t_us rises within a cell, so its deltas bit-pack to a byte
# or two. Measured on 360 k samples (an hour at 100/s): random UUIDs 7.9 -> 7.6 MB, ids 2.0 -> 1.9 MB.
_OPTIONS: dict[str, dict[str, Any]] = {
    "timeseries": {"use_dictionary": True},
    "keys": {"use_dictionary": ["cell", "op", "kind"],
             "column_encoding": {"t_us": "DELTA_BINARY_PACKED", "key": "DELTA_BYTE_ARRAY"}},
}
#: zstd level of parts and compacted files alike: on key samples, levels 3-15 came out no
#: smaller than 1 and up to 20x slower (level 19: 4 % smaller, 200x slower).
_LEVEL = 1


def _write_atomic(table: pa.Table, path: Path, kind: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, compression="zstd", compression_level=_LEVEL, **_OPTIONS[kind])
    os.replace(tmp, path)


def _cell_writer(path: Path, kind: str) -> pq.ParquetWriter:
    """The writer of a compacted ``<cell>.parquet`` (write with ``row_group_size=_ROW_GROUP``)."""
    return pq.ParquetWriter(path, SCHEMAS[kind], compression="zstd", compression_level=_LEVEL, **_OPTIONS[kind])


@dataclass(frozen=True, kw_only=True)
class CellFiles:
    """The files that hold one cell's rows of one kind, in row order."""

    cell: str
    kind: str
    paths: tuple[Path, ...]
    complete: bool  # compacted: the cell finished (or was finished by ``keyramp migrate``)

    def stamp(self) -> tuple[tuple[str, int], ...]:
        """Changes whenever a part lands or the cell is compacted (parts are immutable)."""
        out = []
        for p in self.paths:
            try:
                out.append((p.name, p.stat().st_size))
            except OSError:
                out.append((p.name, -1))
        return tuple(out)


def _parts(parts_dir: Path) -> list[Path]:
    """Parts not covered by a wider part, in order."""
    try:
        names = os.listdir(parts_dir)
    except OSError:
        return []
    ranges = sorted((int(m[1]), -int(m[2]), n) for n in names if (m := _PART_RE.match(n)))
    out: list[Path] = []
    covered = -1
    for _first, neg_last, name in ranges:
        if -neg_last <= covered:
            continue  # a narrow part a merge has not deleted yet
        out.append(parts_dir / name)
        covered = -neg_last
    return out


def cell_files(directory: Path, cell: str, kind: str) -> CellFiles:
    """``<kind>/<cell>.parquet`` if the cell finished, else its current parts (maybe none)."""
    whole = directory / f"{cell}.parquet"
    if whole.is_file():
        return CellFiles(cell=cell, kind=kind, paths=(whole,), complete=True)
    return CellFiles(cell=cell, kind=kind, paths=tuple(_parts(directory / f"{cell}.parts")), complete=False)


def kind_cells(directory: Path) -> list[str]:
    """Cells with data (finished or in progress) under ``<kind>/``, sorted."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    cells = {n[: -len(".parquet")] for n in names if n.endswith(".parquet") and not n.startswith(".")}
    cells |= {n[: -len(".parts")] for n in names if n.endswith(".parts")}
    return sorted(cells)


def read_files(paths: Sequence[Path], kind: str, *, columns: Sequence[str] | None = None,
               filter: ds.Expression | None = None, dictionary: Sequence[str] = ()) -> pa.Table:
    """Rows of ``paths`` (one cell's files) as one table with the kind's schema.

    ``dictionary``: string columns to return dictionary-encoded, decoded straight from the
    files' dictionary pages (no string per row: ``cell`` and ``op`` of 10 M key samples).
    """
    schema = SCHEMAS[kind]
    if dictionary:
        schema = pa.schema([f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in dictionary else f
                            for f in schema])
    if not paths:
        table = schema.empty_table()
        return table.select(list(columns)) if columns is not None else table
    cols = list(columns) if columns is not None else None
    if len(paths) == 1:
        return pq.read_table(paths[0], columns=cols, filters=filter, schema=schema,
                             read_dictionary=list(dictionary) or None)
    fmt = ds.ParquetFileFormat(read_options={"dictionary_columns": list(dictionary)})
    return ds.dataset([str(p) for p in paths], schema=schema, format=fmt).to_table(columns=cols, filter=filter)


def compact(directory: Path, cell: str, kind: str) -> Path | None:
    """Merge a cell's parts into ``<cell>.parquet`` (streamed, bounded memory); remove the parts.

    Returns the compacted file, or None if the cell has no rows. Idempotent: a cell already
    compacted (or compacted by a process killed before it removed the parts) is only tidied.
    """
    whole = directory / f"{cell}.parquet"
    parts_dir = directory / f"{cell}.parts"
    if not whole.is_file():
        parts = _parts(parts_dir)
        if not parts:
            shutil.rmtree(parts_dir, ignore_errors=True)
            return None
        schema = SCHEMAS[kind]
        tmp = whole.with_name(f".{whole.name}.{os.getpid()}.tmp")
        with _cell_writer(tmp, kind) as writer:
            pending: list[pa.Table] = []
            rows = 0
            for path in parts:
                table = pq.read_table(path, schema=schema)
                pending.append(table)
                rows += table.num_rows
                if rows >= _ROW_GROUP:
                    writer.write_table(pa.concat_tables(pending), row_group_size=_ROW_GROUP)
                    pending, rows = [], 0
            if pending:
                writer.write_table(pa.concat_tables(pending), row_group_size=_ROW_GROUP)
        os.replace(tmp, whole)
    shutil.rmtree(parts_dir, ignore_errors=True)
    return whole


def write_cell(table: pa.Table, directory: Path, cell: str, kind: str) -> Path:
    """All of a cell's rows at once as ``<cell>.parquet``: the file ``compact`` makes of its parts."""
    whole = directory / f"{cell}.parquet"
    tmp = whole.with_name(f".{whole.name}.{os.getpid()}.tmp")
    with _cell_writer(tmp, kind) as writer:
        # one contiguous chunk, as ``compact`` reads a part back: same pages, same bytes
        writer.write_table(table.cast(SCHEMAS[kind]).combine_chunks(), row_group_size=_ROW_GROUP)
    os.replace(tmp, whole)
    return whole


class CellWriter:
    """One cell's rows of one kind: a part per ``flush``, merged every ``MERGE_EVERY`` flushes.

    The rows of the current merge window stay in memory (a minute of one cell: small), so a
    merge is a write, not a read of the parts back from disk — the load generator's loop is
    held for milliseconds, not for a read of a minute of files.
    """

    def __init__(self, directory: Path, cell: str, kind: str) -> None:
        self.directory = directory
        self.cell = cell
        self.kind = kind
        self.schema = SCHEMAS[kind]
        self.parts_dir = directory / f"{cell}.parts"
        self._pending: list[pa.Table] = []
        self._window: list[tuple[Path, pa.Table]] = []
        self._seq = 0
        self.rows = 0

    def append(self, table: pa.Table) -> None:
        if table.num_rows:
            self._pending.append(table)

    def flush(self) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending = []
        if self._seq == 0:
            self.parts_dir.mkdir(parents=True, exist_ok=True)
        path = self.parts_dir / f"{self._seq:08d}-{self._seq:08d}.parquet"
        _write_atomic(table, path, self.kind)
        self.rows += table.num_rows
        self._window.append((path, table))
        self._seq += 1
        if len(self._window) >= MERGE_EVERY:
            self._merge()

    def _merge(self) -> None:
        first = int(self._window[0][0].name[:8])
        merged = self.parts_dir / f"{first:08d}-{self._seq - 1:08d}.parquet"
        _write_atomic(pa.concat_tables([t for _, t in self._window]), merged, self.kind)
        for path, _ in self._window:
            path.unlink(missing_ok=True)
        self._window = []

    def finish(self) -> Path | None:
        """Flush, then compact the cell into ``<cell>.parquet`` (None: the cell wrote no rows)."""
        self.flush()
        self._window = []
        return compact(self.directory, self.cell, self.kind)
