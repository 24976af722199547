"""Reading a run's recorded data: time series, key samples, histogram logs.

The one reader API over both formats (Parquet, docs/run-format.md; and runs written as
CSV before it, ``_legacy``). Everything works on a running run too: a cell in progress
is read from the parts flushed so far (at most a second old), so a live view polls
``read_timeseries(run, cell=…, after_second=…)`` and caches on ``data_stamp``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from keyramp.core import ALL_OPS, UsageError
from keyramp.results._catalog import CELL_ID_RE, Run, hlog_path
from keyramp.results._legacy import KEYS_CSV, TIMESERIES_CSV, read_keys_csv, read_timeseries_csv
from keyramp.results._parquet import CellFiles, cell_files, kind_cells, read_files

#: A running cell's parts can be merged or compacted between listing and reading them:
#: the reader then lists again (the rows are in the file that replaced them).
_RETRIES = 5

__all__ = [
    "add_hlog",
    "cell_hlogs",
    "data_cells",
    "data_files",
    "data_stamp",
    "is_csv_run",
    "read_intervals",
    "read_keys",
    "read_timeseries",
]


def _dir(run: Run | Path) -> Path:
    return run.path if isinstance(run, Run) else Path(run)


def _csv(path: Path, kind: str) -> bool:
    return not (path / kind).is_dir() and (path / f"{kind}.csv").is_file()


def is_csv_run(run: Run | Path, kind: str | None = None) -> bool:
    """Written in the CSV format (before Parquet): ``<kind>.csv`` and no ``<kind>/`` directory (either kind)."""
    path = _dir(run)
    return any(_csv(path, k) for k in ((kind,) if kind else ("timeseries", "keys")))


def data_cells(run: Run | Path, kind: str = "timeseries") -> list[str]:
    """Cells with rows of ``kind`` (``timeseries`` or ``keys``), finished or in progress."""
    if _csv(_dir(run), kind):
        table = read_timeseries_csv(_dir(run) / TIMESERIES_CSV) if kind == "timeseries" else read_keys(run)
        return sorted(set(table.column("cell").to_pylist()))
    return kind_cells(_dir(run) / kind)


def data_files(run: Run | Path, cell: str, kind: str = "timeseries") -> CellFiles:
    """The Parquet files holding ``cell``'s rows now (``complete`` once the cell finished)."""
    if not CELL_ID_RE.match(cell):
        raise UsageError(f"invalid cell id {cell!r}")
    return cell_files(_dir(run) / kind, cell, kind)


def data_stamp(run: Run | Path, kind: str = "timeseries", cell: str | None = None) -> tuple[Any, ...]:
    """A value that changes whenever rows of ``kind`` are written (for caches of what was read)."""
    path = _dir(run)
    if _csv(path, kind):
        legacy = path / (TIMESERIES_CSV if kind == "timeseries" else KEYS_CSV)
        try:
            st = legacy.stat()
        except OSError:
            return ("csv", None)
        return ("csv", st.st_mtime_ns, st.st_size)
    cells = [cell] if cell is not None else kind_cells(path / kind)
    return tuple((c, data_files(path, c, kind).stamp()) for c in cells)


def _cell_table(path: Path, kind: str, cell: str, columns: Sequence[str] | None,
                filter: ds.Expression | None, dictionary: Sequence[str] = ()) -> pa.Table:
    for attempt in range(_RETRIES):
        files = data_files(path, cell, kind)
        try:
            return read_files(files.paths, kind, columns=columns, filter=filter, dictionary=dictionary)
        except FileNotFoundError:
            if attempt == _RETRIES - 1:  # pragma: no cover - a writer merging faster than we can list
                raise
    raise AssertionError("unreachable")


def _cells_table(run: Run | Path, kind: str, cells: Sequence[str], columns: Sequence[str] | None,
                 filter: ds.Expression | None, dictionary: Sequence[str] = ()) -> pa.Table:
    path = _dir(run)
    tables = [_cell_table(path, kind, c, columns, filter, dictionary) for c in cells]
    if len(tables) == 1:
        return tables[0]
    if not tables:
        return read_files((), kind, columns=columns, dictionary=dictionary)
    return pa.concat_tables(tables, promote_options="permissive" if dictionary else "none")


def _csv_filter(table: pa.Table, mask: ds.Expression | None, columns: Sequence[str] | None) -> pa.Table:
    if mask is not None:
        table = table.filter(mask)
    return table.select(list(columns)) if columns is not None else table


def read_timeseries(run: Run | Path, *, cell: str | None = None, op: str | None = None,
                    columns: Sequence[str] | None = None, after_second: int | None = None) -> pa.Table:
    """One row per cell, operation and second (``TIMESERIES_SCHEMA``), in cell then time order.

    ``cell``/``op`` select (``op="*"``: all operations of the cell); ``after_second`` keeps
    rows with ``second > after_second`` (a live view fetching what is new). Never raises on
    a damaged file: what cannot be read is left out.
    """
    mask: ds.Expression | None = None
    for expr in (
        ds.field("cell") == cell if cell is not None else None,
        ds.field("op") == op if op is not None else None,
        ds.field("second") > after_second if after_second is not None else None,
    ):
        if expr is not None:
            mask = expr if mask is None else mask & expr
    path = _dir(run)
    if _csv(path, "timeseries"):
        return _csv_filter(read_timeseries_csv(path / TIMESERIES_CSV), mask, columns)
    cells = [cell] if cell is not None else kind_cells(path / "timeseries")
    if cell is not None and not CELL_ID_RE.match(cell):
        return read_files((), "timeseries", columns=columns)
    try:
        return _cells_table(path, "timeseries", cells, columns, mask)
    except (pa.ArrowInvalid, OSError):  # a damaged file: read the others
        tables = []
        for c in cells:
            try:
                tables.append(_cells_table(path, "timeseries", [c], columns, mask))
            except (pa.ArrowInvalid, OSError):
                continue
        return pa.concat_tables(tables) if tables else read_files((), "timeseries", columns=columns)


def read_keys(run: Run | Path, *, cell: str | None = None, columns: Sequence[str] | None = None,
              dictionary: Sequence[str] = ()) -> pa.Table:
    """Sampled key accesses (``KEYS_SCHEMA``: cell, t_us, op, key), in cell then time order.

    ``dictionary``: string columns (``cell``, ``op``) to return dictionary-encoded, as the
    files store them (cheaper for millions of rows). A run without key samples gives an
    empty table; a damaged file is a ``UsageError`` naming it (the key-space analysis
    cannot guess what is missing).
    """
    path = _dir(run)
    if not path.is_dir():
        raise UsageError(f"no sampled keys: {path} does not exist")
    if not (path / "keys").is_dir() and ((path / KEYS_CSV).exists() or (path / TIMESERIES_CSV).exists()):
        return _csv_filter(read_keys_csv(path / KEYS_CSV), ds.field("cell") == cell if cell else None, columns)
    cells = [cell] if cell is not None else kind_cells(path / "keys")
    try:
        return _cells_table(path, "keys", cells, columns, None, dictionary)
    except (pa.ArrowInvalid, OSError) as exc:
        raise UsageError(f"{path / 'keys'}: unreadable key samples ({exc})") from None


def read_intervals(run: Run, cell: str, op: str, *, service: bool = False) -> list[Any]:
    """Decode a cell/op ``.hlog`` into its per-interval ``HdrHistogram`` objects (values in µs).

    Each histogram's start/end timestamps (ms) are relative to the log's start. A missing
    file gives ``[]``; undecodable lines (a truncated last interval) are skipped. ``op="*"``:
    the whole cell, each interval the sum of its operations' (runs before the Parquet
    format also wrote it as ``<cell>.all.hlog``, which is read when present).
    """
    if op == ALL_OPS:
        return _all_ops_intervals(run, cell, service=service)
    return _read_hlog(hlog_path(run, cell, op, service=service))


def _all_ops_intervals(run: Run, cell: str, *, service: bool) -> list[Any]:
    from hdrh.histogram import HdrHistogram  # deferred: start-up cost (hdrh)

    suffix = ".service.hlog" if service else ".hlog"
    written = run.path / "histograms" / f"{cell}.all{suffix}"
    if written.is_file():
        return _read_hlog(written)
    logs = []
    for path in sorted((run.path / "histograms").glob(f"{cell}.*{suffix}")):
        op = path.name[len(cell) + 1 : -len(suffix)]
        if op and "." not in op and op != "all":  # not a service log when reading latency ones
            logs.append(_read_hlog(path))
    merged: list[Any] = []
    for i in range(max((len(log) for log in logs), default=0)):
        parts = [log[i] for log in logs if i < len(log)]
        total = HdrHistogram(1, 60_000_000, 3)
        for h in parts:
            total.add(h)
        total.set_start_time_stamp(parts[0].get_start_time_stamp())
        total.set_end_time_stamp(parts[0].get_end_time_stamp())
        merged.append(total)
    return merged


def _read_hlog(path: Path) -> list[Any]:
    from hdrh.histogram import HdrHistogram  # deferred: start-up cost (hdrh)
    from hdrh.log import HistogramLogReader  # deferred: start-up cost (hdrh)

    if not path.is_file():
        return []
    reader = HistogramLogReader(str(path), HdrHistogram(1, 60_000_000, 3))
    intervals = []
    try:
        while True:
            try:
                histogram = reader.get_next_interval_histogram()
            except Exception:  # noqa: BLE001 - zlib/base64/cookie errors from a torn line
                continue
            if histogram is None:
                break
            intervals.append(histogram)
    finally:
        reader.close()
    if intervals:
        base = min(h.get_start_time_stamp() for h in intervals)
        for h in intervals:
            h.set_start_time_stamp(h.get_start_time_stamp() - base)
            h.set_end_time_stamp(h.get_end_time_stamp() - base)
    return intervals



#: keyramp's one HdrHistogram layout (``run._hdr``: lowest 1 µs, 3 significant digits): counter
#: indexes mean the same value in every log it wrote, whatever the highest trackable value.
_SUB_BUCKETS = 2048


def add_hlog(path: Path, counts: np.ndarray, *, offset: int = 0) -> int:
    """Add every interval of one ``.hlog`` from byte ``offset`` on into ``counts`` (by counter index
    of keyramp's layout) and return the offset after the last whole line: a caller that keeps it
    reads only what a running cell appended since (a line a second).

    Comment and header lines are skipped, and so is a line that does not decode (a torn write) or
    whose histogram has another layout; a missing file adds nothing.
    """
    try:
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return offset
    end = data.rfind(b"\n") + 1  # a line still being written is read next time
    decode = _payload_decoder(counts)
    for raw in data[:end].splitlines():
        if not raw or raw[:1] in (b"#", b'"'):
            continue
        parts = raw.split(b",")
        if parts[0].startswith(b"Tag="):
            parts = parts[1:]
        try:
            decode(parts[3])
        except Exception:  # noqa: BLE001 - zlib/base64/cookie errors from a torn or foreign line
            continue
    return offset + end


def _payload_decoder(counts: np.ndarray) -> Any:
    """``decode(payload)``: adds one encoded histogram into ``counts``. The payload is decoded into
    a reused counter buffer by the library's own varint decoder (about 10x faster than building an
    ``HdrHistogram`` per line, which an hour-long cell has 3,600 of per log); the public
    ``HdrHistogram.decode`` when those internals are not there."""
    import ctypes  # deferred: start-up cost (only readers of histogram logs)

    from hdrh.histogram import HdrHistogram  # deferred: start-up cost (hdrh)

    size = len(counts)

    def public(payload: bytes) -> None:
        hist = HdrHistogram.decode(payload)
        if hist.sub_bucket_count != _SUB_BUCKETS or hist.unit_magnitude != 0:
            raise ValueError("another histogram layout")
        n = min(hist.counts_len, size)
        counts[:n] += np.ctypeslib.as_array(hist.counts)[:n].astype(np.int64)

    try:
        from hdrh.codec import HdrHistogramEncoder, payload_header_size  # deferred: start-up cost (hdrh)
        from pyhdrh import decode as decode_varints  # deferred: start-up cost (hdrh)
    except ImportError:
        return public
    buffer = (ctypes.c_int64 * size)()
    view = np.ctypeslib.as_array(buffer)

    def fast(payload: bytes) -> None:
        wire = HdrHistogramEncoder.decode(payload, True)
        header = wire.payload
        if header.lowest_trackable_value != 1 or header.significant_figures != 3 or wire.word_size != 8:
            return public(payload)
        ctypes.memset(buffer, 0, ctypes.sizeof(buffer))
        decode_varints(wire._data, payload_header_size, ctypes.addressof(buffer), size, 8)
        np.add(counts, view, out=counts)
        return None

    return fast


def cell_hlogs(run: Run | Path, cell: str) -> dict[str, tuple[Path, Path]]:
    """{op: (latency log, service-time log)} of one cell's operations, as recorded (the ``.all`` logs
    of runs before Parquet are left out: they are the sum of the others)."""
    if not CELL_ID_RE.match(cell):
        return {}
    folder = _dir(run) / "histograms"
    out = {}
    for path in sorted(folder.glob(f"{cell}.*.hlog")):
        op = path.name[len(cell) + 1 : -len(".hlog")]
        if op and "." not in op and op != "all":  # not a service log, nor a sum of the others
            out[op] = (path, folder / f"{cell}.{op}.service.hlog")
    return out
