"""A run's time series -> per (cell, op) columns, downsampled for charts.

A 1-hour run with 10 operations has ~40k rows per cell; charts need a few hundred points,
so each point covers ``bucket_s`` seconds: throughput and errors are averaged per second
over the bucket (with the bucket's slowest and fastest second kept as a band), p50 and the
operations in flight are the mean of the per-second values and p95 and p99 the worst second
(so a latency spike or a throughput stall is never averaged away).

A second in which no operation completed has no latency: its percentiles are gaps (null), never
0 ms — also in runs recorded before the recorder wrote them as null.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["CHART_COLUMNS", "MAX_POINTS", "downsample", "series_columns"]

MAX_POINTS = 600

# only what the charts draw: reading fewer columns is most of the first view's time
_FIELDS = ("count", "errors", "p50_ms", "p95_ms", "p99_ms", "target_ops_per_s", "in_flight")
#: Measured over the operations that completed in a second: nothing to measure when none did.
_PER_COMPLETION = ("p50_ms", "p95_ms", "p99_ms", "in_flight")
CHART_COLUMNS = ("cell", "op", "second", *_FIELDS, "error_classes")
_ENTRY = pa.struct([("key", pa.string()), ("value", pa.int64())])


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    enc = pc.dictionary_encode(column).combine_chunks()
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary.to_pylist()


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    # nulls (no target for a `users` schedule, a value a hand edit broke) become NaN: gaps in the charts
    return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)


def series_columns(table: pa.Table) -> dict[tuple[str, str], dict[str, Any]]:
    """Columns per (cell, op) of a ``read_timeseries`` table: ``second`` and the charted fields
    as float arrays in time order, plus ``error_classes`` as {class: per-row counts}."""
    if table.num_rows == 0:
        return {}
    cell_codes, cells = _codes(table.column("cell"))
    op_codes, ops = _codes(table.column("op"))
    group = cell_codes * len(ops) + op_codes
    numeric = {"second": _floats(table.column("second"))}
    for name in _FIELDS:
        numeric[name] = _floats(table.column(name)) if name in table.column_names else np.full(table.num_rows, math.nan)
    none_completed = ~(numeric["count"] > 0)
    for name in _PER_COMPLETION:
        numeric[name] = np.where(none_completed, math.nan, numeric[name])  # runs before null latencies: 0 ms
    second = numeric["second"]
    keep = np.flatnonzero(np.isfinite(second) & (second >= 0))
    order = keep[np.lexsort((second[keep], group[keep]))]
    heads = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1]])
    bounds = np.r_[heads, len(order)]
    out: dict[tuple[str, str], dict[str, Any]] = {}
    position = np.full(table.num_rows, -1, dtype=np.int64)  # row -> index within its group
    for a, b in itertools.pairwise(bounds):
        rows = order[a:b]
        g = int(group[rows[0]])
        position[rows] = np.arange(b - a)
        out[(cells[g // len(ops)], ops[g % len(ops)])] = {
            name: arr[rows] for name, arr in numeric.items()} | {"error_classes": {}}
    if "error_classes" in table.column_names:
        _add_classes(out, table.column("error_classes"), cells, ops, group, position)
    return out


def _add_classes(out: dict[tuple[str, str], dict[str, Any]], column: pa.ChunkedArray, cells: list[str],
                 ops: list[str], group: np.ndarray, position: np.ndarray) -> None:
    """Sparse ``error_classes`` maps (only seconds with errors have entries) -> per-group count arrays."""
    # as list<struct>: pyarrow's list kernels abort on map arrays
    entries = column.cast(pa.list_(_ENTRY)).combine_chunks()
    flat = pc.list_flatten(entries)
    if len(flat) == 0:
        return
    rows = pc.list_parent_indices(entries).to_numpy()
    names = flat.field("key").to_pylist()
    counts = _floats(pa.chunked_array([flat.field("value")]))
    for row, name, count in zip(rows.tolist(), names, counts.tolist(), strict=True):
        i = int(position[row])
        if i < 0 or name is None or math.isnan(count):
            continue  # a row dropped for a bad ``second``
        g = int(group[row])
        series = out[(cells[g // len(ops)], ops[g % len(ops)])]
        arr = series["error_classes"].get(name)
        if arr is None:
            arr = series["error_classes"][name] = np.zeros(len(series["second"]))
        arr[i] += count


def _clean(values: np.ndarray, digits: int = 3) -> list[float | None]:
    # JSON has no NaN: missing points become null, which uPlot draws as gaps.
    out = np.round(values, digits).tolist()
    if np.isfinite(values).all():
        return out
    return [v if math.isfinite(v) else None for v in out]


def downsample(
    series: dict[str, Any], *, max_points: int = MAX_POINTS, duration_s: float | None = None
) -> dict[str, Any]:
    """Chart-ready lists (JSON-safe) with at most ``max_points`` points.

    With ``bucket_s > 1``, ``ops_min_per_s``/``ops_max_per_s`` are the bucket's slowest and
    fastest second (seconds without a row count as 0 ops), so a stall stays visible.
    ``duration_s``: the cell's measured phase; its last second may be shorter or longer than
    one (docs/run-format.md: a 10.3 s cell ends on a 1.3 s second), and its operations are
    turned into a rate over that length, as summary.json's timeline does.
    """
    secs = series["second"]
    if secs.size == 0:
        return {"bucket_s": 1, "t": [], "ops_per_s": [], "ops_min_per_s": [], "ops_max_per_s": [],
                "errors_per_s": [], "error_rate": [], "p50_ms": [], "p95_ms": [], "p99_ms": [], "in_flight": [],
                "target_ops_per_s": [], "error_classes": {}}
    ok = secs >= 0
    isec = secs[ok].astype(np.int64)
    n = int(isec.max()) + 1
    per_s = np.ones(len(isec))  # operations -> ops/s per row (the cell's last second may not be 1 s)
    if duration_s and n == max(1, round(duration_s)) and abs(duration_s - (n - 1) - 1.0) > 1e-6:
        per_s[isec == n - 1] = 1.0 / max(duration_s - (n - 1), 0.05)
    bucket = max(1, math.ceil(n / max_points))
    nb = math.ceil(n / bucket)
    pad = nb * bucket

    def dense(name: str, fill: float, *, rate: bool = False) -> np.ndarray:
        arr = np.full(pad, fill)
        arr[isec] = series[name][ok] * per_s if rate else series[name][ok]
        return arr.reshape(nb, bucket)

    # seconds actually covered per bucket (the last one may be partial)
    width = np.minimum(bucket, n - np.arange(nb) * bucket).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN buckets are expected gaps
        per_second = dense("count", 0.0, rate=True)
        per_second[nb - 1, bucket - (pad - n):] = math.nan  # padding past the end is not "0 ops"
        counts = np.nansum(per_second, axis=1) / width
        errors = np.nansum(dense("errors", math.nan, rate=True), axis=1) / width
        p50 = np.nanmean(dense("p50_ms", math.nan), axis=1)
        p95 = np.nanmax(dense("p95_ms", math.nan), axis=1)
        p99 = np.nanmax(dense("p99_ms", math.nan), axis=1)
        in_flight = np.nanmean(dense("in_flight", math.nan), axis=1)
        error_rate = np.where(counts > 0, errors / np.where(counts > 0, counts, 1.0), math.nan)
        target = np.nanmean(dense("target_ops_per_s", math.nan), axis=1)
        classes = {}
        for name, arr in series["error_classes"].items():
            d = np.zeros(pad)
            d[isec] = arr[ok] * per_s
            classes[name] = _clean(d.reshape(nb, bucket).sum(axis=1) / width)
        banded = bucket > 1
        ops_min = _clean(np.nanmin(per_second, axis=1), 2) if banded else []
        ops_max = _clean(np.nanmax(per_second, axis=1), 2) if banded else []
    return {
        "bucket_s": bucket,
        "t": list(range(0, nb * bucket, bucket)),
        "ops_per_s": _clean(counts, 2),
        "ops_min_per_s": ops_min,
        "ops_max_per_s": ops_max,
        "errors_per_s": _clean(errors, 3),
        "error_rate": _clean(error_rate, 5),
        "p50_ms": _clean(p50),
        "p95_ms": _clean(p95),
        "p99_ms": _clean(p99),
        "in_flight": _clean(in_flight, 2) if np.isfinite(in_flight).any() else [],
        "target_ops_per_s": _clean(target, 2) if np.isfinite(target).any() else [],
        "error_classes": classes,
    }
