"""timeseries.csv -> per (cell, op) columns, downsampled for charts.

A 1-hour run with 10 operations has ~40k rows per cell; charts need a few hundred points,
so each point covers ``bucket_s`` seconds: throughput and errors are averaged per second
over the bucket (with the bucket's slowest and fastest second kept as a band), p50 is the
mean of the per-second p50s and p99 the worst second (so a latency spike or a throughput
stall is never averaged away).
"""

from __future__ import annotations

import csv
import io
import math
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["parse_timeseries", "downsample", "MAX_POINTS"]

MAX_POINTS = 600

# only what the charts draw: parsing fewer columns is most of the first view's time
_FIELDS = ("count", "errors", "p50_ms", "p99_ms", "target_ops_per_s")
_INT_FIELDS = frozenset({"second", "count", "errors"})
# an empty field (no samples that second, no target for a `users` schedule): numpy needs "nan"
_EMPTY_FIELD = re.compile(r",(?=[,\r\n])")


def _float(text: str) -> float:
    if not text:
        return math.nan
    try:
        return float(text)
    except ValueError:
        return math.nan


def _column(values: Sequence[str]) -> np.ndarray:
    # numpy's C string->float conversion; empty cells need "nan" first
    try:
        return np.array(values, dtype=float)
    except ValueError:
        pass
    try:
        return np.array([v or "nan" for v in values], dtype=float)
    except ValueError:  # a hand-edited value somewhere: parse one by one
        return np.array([_float(v) for v in values], dtype=float)


def parse_timeseries(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Columns per (cell, op): ``second`` and the charted fields as numpy arrays, plus
    ``error_classes`` as {class: array}. A missing or malformed file gives {} (never raises).

    The file as keyramp writes it (unquoted, every row complete) goes through ``np.loadtxt``
    on just the charted columns (~5x faster than ``csv`` + per-column conversion for a 1-hour
    run); anything else (quotes, ragged or hand-edited rows) takes the tolerant ``csv`` path.
    """
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return {}
    try:
        return _parse_fast(text)
    except (ValueError, IndexError):
        return _parse_tolerant(text)


def _parse_fast(text: str) -> dict[tuple[str, str], dict[str, Any]]:
    if '"' in text:
        raise ValueError("quoted fields: csv module needed")
    head, sep, body = text.partition("\n")
    header = head.rstrip("\r").split(",")
    idx = {name: i for i, name in enumerate(header)}
    if not sep or not {"cell", "op", "second"} <= idx.keys() or idx["cell"] != 0 or idx["op"] != 1:
        raise ValueError("not keyramp's column order")
    if not body.endswith("\n"):
        last = body[body.rfind("\n") + 1:]
        # a torn last line of a run that crashed mid-write (kept if only its newline is missing)
        body = body + "\n" if last.count(",") == len(header) - 1 else body[:len(body) - len(last)]
    lines = body.split("\n")  # csv's "\r\n" leaves a "\r" on the last field, which numpy ignores
    lines.pop()  # "" after the final newline
    if not lines:
        return {}
    if body.count(",") != len(lines) * (len(header) - 1):
        raise ValueError("ragged rows")
    wanted = ["second", *(f for f in _FIELDS if f in idx)]
    numeric = _load_columns(body, [idx[f] for f in wanted], wanted)
    if len(numeric["second"]) != len(lines):
        raise ValueError("blank lines")
    # group id per line from its "cell,op" prefix: one pass, no row splitting
    lookup: dict[str, int] = {}
    code, find = lookup.setdefault, str.find
    group = np.fromiter((code(line[:find(line, ",", find(line, ",") + 1)], len(lookup)) for line in lines),
                        dtype=np.int64, count=len(lines))
    classes: dict[int, str] = {}
    ci = idx.get("error_classes")
    if ci is not None and ":" in body:  # only rows with errors hold a ":"
        classes = {i: line.split(",")[ci].rstrip("\r") for i, line in enumerate(lines) if ":" in line}
    pairs = {g: tuple(key.split(",", 1)) for key, g in lookup.items()}
    return _group(group, pairs, numeric, classes)  # type: ignore[arg-type]


def _load_columns(body: str, usecols: list[int], names: list[str]) -> dict[str, np.ndarray]:
    """The numeric columns via numpy's C reader. Integer columns parse as integers first
    (numpy's integer parser is several times faster than its float one)."""
    if ",," in body:  # an empty field somewhere (e.g. no target in a `users` schedule)
        body = _EMPTY_FIELD.sub(",nan", body)
    try:
        dtype = np.dtype([(name, np.int64 if name in _INT_FIELDS else np.float64) for name in names])
        table = np.loadtxt(io.StringIO(body), delimiter=",", dtype=dtype, usecols=usecols, comments=None, ndmin=1)
        return {name: table[name].astype(np.float64) for name in names}
    except ValueError:  # "nan" or "1.5" in an integer column: plain floats
        table = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.float64, usecols=usecols, comments=None,
                           ndmin=2)
        return {name: table[:, i] for i, name in enumerate(names)}


def _parse_tolerant(text: str) -> dict[tuple[str, str], dict[str, Any]]:
    try:
        reader = csv.reader(io.StringIO(text))
        header = next(reader, None)
        if not header:
            return {}
        width = len(header)
        rows = list(reader)
    except csv.Error:
        return {}
    if rows and len(rows[-1]) != width:
        rows.pop()  # a torn last line
    if any(n != width for n in set(map(len, rows))):
        rows = [row for row in rows if len(row) == width]
    idx = {name: i for i, name in enumerate(header)}
    if not rows or not {"cell", "op", "second"} <= idx.keys():
        return {}
    columns = list(zip(*rows))
    numeric = {"second": _column(columns[idx["second"]])}
    for name in _FIELDS:
        if name in idx:
            numeric[name] = _column(columns[idx[name]])
    lookup: dict[tuple[str, str], int] = {}
    group = np.array([lookup.setdefault(k, len(lookup)) for k in zip(columns[idx["cell"]], columns[idx["op"]])],
                     dtype=np.int64)
    classes: dict[int, str] = {}
    if "error_classes" in idx:
        classes = {i: text for i, text in enumerate(columns[idx["error_classes"]]) if text}
    return _group(group, {g: key for key, g in lookup.items()}, numeric, classes)


def _group(group: np.ndarray, pairs: dict[int, tuple[str, str]], numeric: dict[str, np.ndarray],
           classes: dict[int, str]) -> dict[tuple[str, str], dict[str, Any]]:
    """Split the columns per (cell, op) group id, rows with a valid ``second`` only."""
    n = len(group)
    for name in _FIELDS:
        if name not in numeric:
            numeric[name] = np.full(n, math.nan)
    second = numeric["second"]
    keep = np.flatnonzero(np.isfinite(second) & (second >= 0))
    order = keep[np.argsort(group[keep], kind="stable")]
    bounds = np.searchsorted(group[order], np.arange(len(pairs) + 1))
    out: dict[int, dict[str, Any]] = {}
    for g in pairs:
        rows_g = order[bounds[g]:bounds[g + 1]]
        if rows_g.size:
            out[g] = {name: arr[rows_g] for name, arr in numeric.items()} | {"error_classes": {}}
    if classes:
        # index of each kept row within its group, so only rows with errors are visited
        position = np.full(n, -1, dtype=np.int64)
        position[order] = np.arange(len(order)) - bounds[group[order]]
        _add_classes(out, classes, group, position)
    return {pairs[g]: series for g, series in out.items()}


def _add_classes(out: dict[int, dict[str, Any]], texts: dict[int, str], group: np.ndarray,
                 position: np.ndarray) -> None:
    """``CLASS:n;CLASS:n`` cells (sparse: row -> text) -> per-group {class: per-row counts}."""
    for row, text in texts.items():
        i = int(position[row])
        if i < 0:
            continue  # a row dropped for a bad ``second``
        series = out[int(group[row])]
        for part in text.split(";"):
            name, _, count = part.rpartition(":")
            value = _float(count)
            if not name or math.isnan(value):
                continue
            arr = series["error_classes"].get(name)
            if arr is None:
                arr = series["error_classes"][name] = np.zeros(len(series["second"]))
            arr[i] += value


def _clean(values: np.ndarray, digits: int = 3) -> list[float | None]:
    # JSON has no NaN: missing points become null, which uPlot draws as gaps.
    out = np.round(values, digits).tolist()
    if np.isfinite(values).all():
        return out
    return [v if math.isfinite(v) else None for v in out]


def downsample(series: dict[str, Any], *, max_points: int = MAX_POINTS) -> dict[str, Any]:
    """Chart-ready lists (JSON-safe) with at most ``max_points`` points.

    With ``bucket_s > 1``, ``ops_min_per_s``/``ops_max_per_s`` are the bucket's slowest and
    fastest second (seconds without a row count as 0 ops), so a stall stays visible.
    """
    secs = series["second"]
    if secs.size == 0:
        return {"bucket_s": 1, "t": [], "ops_per_s": [], "ops_min_per_s": [], "ops_max_per_s": [],
                "errors_per_s": [], "p50_ms": [], "p99_ms": [], "target_ops_per_s": [], "error_classes": {}}
    ok = secs >= 0
    isec = secs[ok].astype(np.int64)
    n = int(isec.max()) + 1
    bucket = max(1, math.ceil(n / max_points))
    nb = math.ceil(n / bucket)
    pad = nb * bucket

    def dense(name: str, fill: float) -> np.ndarray:
        arr = np.full(pad, fill)
        arr[isec] = series[name][ok]
        return arr.reshape(nb, bucket)

    # seconds actually covered per bucket (the last one may be partial)
    width = np.minimum(bucket, n - np.arange(nb) * bucket).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN buckets are expected gaps
        per_second = dense("count", 0.0)
        per_second[nb - 1, bucket - (pad - n):] = math.nan  # padding past the end is not "0 ops"
        counts = np.nansum(per_second, axis=1) / width
        errors = np.nansum(dense("errors", math.nan), axis=1) / width
        p50 = np.nanmean(dense("p50_ms", math.nan), axis=1)
        p99 = np.nanmax(dense("p99_ms", math.nan), axis=1)
        target = np.nanmean(dense("target_ops_per_s", math.nan), axis=1)
        classes = {}
        for name, arr in series["error_classes"].items():
            d = np.zeros(pad)
            d[isec] = arr[ok]
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
        "p50_ms": _clean(p50),
        "p99_ms": _clean(p99),
        "target_ops_per_s": _clean(target, 2) if np.isfinite(target).any() else [],
        "error_classes": classes,
    }
