"""Statistics for compare: bootstrap over 1 s interval histograms, two-proportion test.

An HdrHistogram interval is turned into a sparse (value, count) vector; a run's
intervals become a dense matrix over the union of values seen. One bootstrap replicate
draws intervals with replacement (multinomial weights), so the merged histogram of
a replicate is ``weights @ matrix`` and its percentiles come from one cumulative sum:
vectorised, the 1,000 replicates of a 60 s run take milliseconds instead of merging
60,000 HdrHistogram objects in Python.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "MAX_BLOCKS",
    "IntervalMatrix",
    "bootstrap_replicates",
    "interval_matrix",
    "percentiles_from_counts",
    "ratio_ci",
    "two_proportion",
]

#: More intervals than this are merged into consecutive blocks (a block bootstrap):
#: it bounds memory for soak runs and respects the autocorrelation of adjacent seconds.
MAX_BLOCKS = 240


@dataclass(frozen=True)
class IntervalMatrix:
    values_us: np.ndarray  # (K,) highest-equivalent value of each HDR bucket seen, ascending
    counts: np.ndarray  # (n_intervals, K)
    lengths_s: np.ndarray  # (n_intervals,) interval lengths: the last one of a run is often partial

    @property
    def n(self) -> int:
        return int(self.counts.shape[0])

    @property
    def total(self) -> int:
        return int(self.counts.sum())


def _sparse(hist: Any) -> tuple[np.ndarray, np.ndarray]:
    counts = np.ctypeslib.as_array(hist.counts)[: hist.counts_len].astype(np.int64, copy=False)
    idx = np.nonzero(counts)[0]
    if idx.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # HdrHistogram index -> value (value_from_index, then highest equivalent value),
    # vectorised from hdrh's own arithmetic so percentiles match get_value_at_percentile.
    half_mag = hist.sub_bucket_half_count_magnitude
    half = hist.sub_bucket_half_count
    unit = hist.unit_magnitude
    bucket = (idx >> half_mag) - 1
    sub = (idx & (half - 1)) + half
    low = bucket < 0
    sub = np.where(low, sub - half, sub)
    bucket = np.where(low, 0, bucket)
    lowest = sub << (bucket + unit)
    highest = lowest + (np.int64(1) << (bucket + unit)) - 1
    return highest.astype(np.int64), counts[idx]


def interval_matrix(intervals: Sequence[Any], *, max_blocks: int = MAX_BLOCKS) -> IntervalMatrix:
    """Per-interval HdrHistograms -> dense counts over the union of their values."""
    sparse = [_sparse(h) for h in intervals]
    lengths = np.array([_length_s(h) for h in intervals], dtype=np.float64)
    if len(sparse) > max_blocks:
        size = math.ceil(len(sparse) / max_blocks)
        merged = []
        lengths = np.add.reduceat(lengths, np.arange(0, len(sparse), size))
        for start in range(0, len(sparse), size):
            block = sparse[start:start + size]
            vals = np.concatenate([v for v, _ in block]) if block else np.empty(0, np.int64)
            cnts = np.concatenate([c for _, c in block]) if block else np.empty(0, np.int64)
            uniq, inverse = np.unique(vals, return_inverse=True)
            merged.append((uniq, np.bincount(inverse, weights=cnts, minlength=uniq.size).astype(np.int64)))
        sparse = merged
    nonempty = [v for v, _ in sparse if v.size]
    values = np.unique(np.concatenate(nonempty)) if nonempty else np.empty(0, np.int64)
    matrix = np.zeros((len(sparse), values.size), dtype=np.float64)
    for row, (vals, cnts) in enumerate(sparse):
        if vals.size:
            matrix[row, np.searchsorted(values, vals)] = cnts
    return IntervalMatrix(values_us=values, counts=matrix, lengths_s=lengths)


def _length_s(hist: Any) -> float:
    length = (hist.get_end_time_stamp() - hist.get_start_time_stamp()) / 1000.0
    return length if 0 < length < 86_400 else 1.0


def percentiles_from_counts(values: np.ndarray, counts: np.ndarray, percentiles: Sequence[float]) -> np.ndarray:
    """HdrHistogram-style percentiles of each row of ``counts``: shape (rows, len(percentiles)).

    Like ``get_value_at_percentile``: the first value whose cumulative count reaches
    ``max(1, round(p/100 * total))``. Empty rows give NaN.
    """
    counts = np.atleast_2d(counts)
    out = np.full((counts.shape[0], len(percentiles)), np.nan)
    if values.size == 0:
        return out
    cums = np.cumsum(counts, axis=1)
    totals = cums[:, -1]
    for j, p in enumerate(percentiles):
        target = np.maximum(np.floor(p * totals / 100.0 + 0.5), 1.0)
        idx = np.argmax(cums >= target[:, None] - 1e-9, axis=1)
        out[:, j] = np.where(totals > 0, values[idx], np.nan)
    return out


def bootstrap_replicates(
    matrix: IntervalMatrix, percentiles: Sequence[float], *, n: int, rng: np.random.Generator, chunk: int = 250,
) -> tuple[np.ndarray, np.ndarray]:
    """(percentile replicates (n, P) in µs, ops/s replicates (n,)) by resampling intervals.

    Throughput is resampled counts over resampled time, so a short final interval
    weighs by its length instead of counting as a whole second with few operations.
    """
    pct = np.full((n, len(percentiles)), np.nan)
    rate = np.full(n, np.nan)
    if matrix.n == 0:
        return pct, rate
    per_interval = matrix.counts.sum(axis=1)
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        weights = rng.multinomial(matrix.n, np.full(matrix.n, 1.0 / matrix.n), size=size).astype(np.float64)
        # einsum, not ``@``: BLAS threads thrash on a loaded 2-core CI box (5x slower here).
        merged = np.einsum("bi,ik->bk", weights, matrix.counts)
        pct[start:start + size] = percentiles_from_counts(matrix.values_us, merged, percentiles)
        rate[start:start + size] = (weights @ per_interval) / np.maximum(weights @ matrix.lengths_s, 1e-9)
    return pct, rate


def ratio_ci(candidate: np.ndarray, baseline: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """Percentile-bootstrap interval of candidate/baseline from paired replicate arrays."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = candidate / baseline
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size < 0.9 * candidate.size or ratios.size == 0:
        return None, None
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return float(low), float(high)


def two_proportion(x1: int, n1: int, x2: int, n2: int) -> tuple[float, float, float, float]:
    """Two-proportion z-test of p2 vs p1: (z, two-sided p-value, diff CI low, diff CI high at 95 %).

    Identical zero (or total) error rates give z = 0, p = 1.
    """
    if n1 <= 0 or n2 <= 0:
        return 0.0, 1.0, math.nan, math.nan
    p1, p2 = x1 / n1, x2 / n2
    pooled = (x1 + x2) / (n1 + n2)
    var = pooled * (1 - pooled) * (1 / n1 + 1 / n2)
    if var <= 0:
        return 0.0, 1.0, p2 - p1, p2 - p1
    z = (p2 - p1) / math.sqrt(var)
    p_value = math.erfc(abs(z) / math.sqrt(2))
    se = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
    return z, p_value, p2 - p1 - 1.96 * se, p2 - p1 + 1.96 * se
