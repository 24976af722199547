"""timeseries.csv -> per (cell, op) columns, downsampled for charts.

A 1-hour run with 10 operations has ~40k rows per cell; charts need a few hundred points,
so each point covers ``bucket_s`` seconds: throughput and errors are averaged per second
over the bucket, p50 is the mean of the per-second p50s and p99 the worst second (so a
latency spike is never averaged away).
"""

from __future__ import annotations

import csv
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["parse_timeseries", "downsample", "MAX_POINTS"]

MAX_POINTS = 600

_FIELDS = ("count", "errors", "p50_ms", "p99_ms", "service_p99_ms", "max_ms", "target_ops_per_s")


def _float(text: str) -> float:
    if not text:
        return math.nan
    try:
        return float(text)
    except ValueError:
        return math.nan


def _column(values: tuple[str, ...]) -> np.ndarray:
    # numpy's C string->float conversion; empty cells (no samples that second) need "nan" first
    try:
        return np.array(values, dtype=float)
    except ValueError:
        pass
    try:
        return np.array([v or "nan" for v in values], dtype=float)
    except ValueError:  # a hand-edited value somewhere: parse one by one
        return np.array([_float(v) for v in values], dtype=float)


def parse_timeseries(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Columns per (cell, op): ``second`` and the numeric fields as numpy arrays, plus
    ``error_classes`` as {class: array}. A missing or malformed file gives {} (never raises).

    Vectorised: csv in C, one numpy conversion per column, then a split per (cell, op);
    a per-value Python loop took ~1 s for a 1-hour, 10-operation run.
    """
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if not header:
                return {}
            width = len(header)
            rows = list(reader)
    except (OSError, csv.Error, UnicodeError):
        return {}
    if rows and len(rows[-1]) != width:
        rows.pop()  # a torn last line of a run that crashed mid-write
    if any(n != width for n in set(map(len, rows))):
        rows = [row for row in rows if len(row) == width]
    idx = {name: i for i, name in enumerate(header)}
    if not rows or not {"cell", "op", "second"} <= idx.keys():
        return {}
    columns = list(zip(*rows))
    second = _column(columns[idx["second"]])
    keep = np.flatnonzero(np.isfinite(second) & (second >= 0))
    numeric = {"second": second}
    for name in _FIELDS:
        numeric[name] = _column(columns[idx[name]]) if name in idx else np.full(len(rows), math.nan)
    # group ids per (cell, op) with a dict: cheaper than numpy on an array of strings
    lookup: dict[tuple[str, str], int] = {}
    pairs = list(zip(columns[idx["cell"]], columns[idx["op"]]))
    group = np.array([lookup.setdefault(pairs[i], len(lookup)) for i in keep.tolist()], dtype=np.int64)
    classes_col = columns[idx["error_classes"]] if "error_classes" in idx else None

    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(lookup) + 1))
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, g in lookup.items():
        rows_g = keep[order[bounds[g]:bounds[g + 1]]]
        series: dict[str, Any] = {name: arr[rows_g] for name, arr in numeric.items()}
        classes: dict[str, np.ndarray] = {}
        if classes_col is not None:
            for i, row in enumerate(rows_g.tolist()):
                text = classes_col[row]
                if not text:
                    continue
                for part in text.split(";"):
                    name, _, count = part.rpartition(":")
                    value = _float(count)
                    if not name or math.isnan(value):
                        continue
                    arr = classes.get(name)
                    if arr is None:
                        arr = classes[name] = np.zeros(len(rows_g))
                    arr[i] += value
        series["error_classes"] = classes
        out[key] = series
    return out


def _dense(seconds: np.ndarray, values: np.ndarray, n: int, fill: float) -> np.ndarray:
    dense = np.full(n, fill)
    dense[seconds] = values
    return dense


def _clean(values: np.ndarray, digits: int = 3) -> list[float | None]:
    # JSON has no NaN: missing points become null, which uPlot draws as gaps.
    return [None if not math.isfinite(v) else round(float(v), digits) for v in values]


def downsample(series: dict[str, Any], *, max_points: int = MAX_POINTS) -> dict[str, Any]:
    """Chart-ready lists (JSON-safe) with at most ``max_points`` points."""
    secs = series["second"]
    if secs.size == 0:
        return {"bucket_s": 1, "t": [], "ops_per_s": [], "errors_per_s": [], "p50_ms": [], "p99_ms": [],
                "target_ops_per_s": [], "error_classes": {}}
    ok = secs >= 0
    isec = secs[ok].astype(np.int64)
    n = int(isec.max()) + 1
    bucket = max(1, math.ceil(n / max_points))
    nb = math.ceil(n / bucket)
    pad = nb * bucket

    def dense(name: str, fill: float) -> np.ndarray:
        arr = _dense(isec, series[name][ok], pad, fill)
        return arr.reshape(nb, bucket)

    # seconds actually covered per bucket (the last one may be partial)
    width = np.minimum(bucket, n - np.arange(nb) * bucket).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN buckets are expected gaps
        counts = np.nansum(dense("count", math.nan), axis=1) / width
        errors = np.nansum(dense("errors", math.nan), axis=1) / width
        p50 = np.nanmean(dense("p50_ms", math.nan), axis=1)
        p99 = np.nanmax(dense("p99_ms", math.nan), axis=1)
        target = np.nanmean(dense("target_ops_per_s", math.nan), axis=1)
        classes = {}
        for name, arr in series["error_classes"].items():
            d = _dense(isec, arr[ok], pad, 0.0).reshape(nb, bucket)
            classes[name] = _clean(d.sum(axis=1) / width)
    return {
        "bucket_s": bucket,
        "t": [int(i * bucket) for i in range(nb)],
        "ops_per_s": _clean(counts, 2),
        "errors_per_s": _clean(errors, 3),
        "p50_ms": _clean(p50),
        "p99_ms": _clean(p99),
        "target_ops_per_s": _clean(target, 2) if np.isfinite(target).any() else [],
        "error_classes": classes,
    }
