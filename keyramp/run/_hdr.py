"""HdrHistogram helpers: one layout for every histogram, vectorised percentiles.

The ``hdrhistogram`` package records fast (~1 µs) but computes percentiles and resets
in pure-Python loops over 23,552 counters (~2 ms each). keyramp reads percentiles
every second for every operation, so it looks at the counters through a numpy view
instead; results equal ``get_value_at_percentile`` exactly (tested).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable

import numpy as np
from hdrh.histogram import HdrHistogram

from keyramp.results import Latency

__all__ = [
    "PERCENTILES",
    "BucketLayout",
    "bucket_layout",
    "bucket_values_us",
    "counts",
    "counts_index",
    "latency_summary_ms",
    "median_values_us",
    "new_histogram",
    "percentiles_us",
    "record",
    "reset",
    "settle",
    "sum_us",
]

#: Latencies are recorded in microseconds, 1 µs .. 1 h, 3 significant digits.
LOWEST_US = 1
HIGHEST_US = 3_600_000_000
SIGNIFICANT_DIGITS = 3

#: summary.json percentile names -> percentile.
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


# Index arithmetic of the one layout above (lowest 1 => unit magnitude 0; 3 digits =>
# 2,048 sub-buckets). ``record`` inlines the library's four-call chain
# (record_value -> _counts_index_for -> _get_bucket_index/_clz -> _counts_index):
# measured 0.9 -> 0.3 µs per value (bench/bench_hotpath.py). ``Recorder.record`` inlines
# ``counts_index`` itself and leaves the totals to ``settle``. Checked against the
# histogram's own attributes in tests/run/test_hdr.py.
SUB_BUCKET_MASK = 2047
HALF_COUNT_MAGNITUDE = 10
HALF_COUNT = 1 << HALF_COUNT_MAGNITUDE
BUCKET_SHIFT = HALF_COUNT_MAGNITUDE + 1  # + unit magnitude (0)


def counts_index(value: int) -> int:
    """The counter ``hist.record_value(value)`` adds to, for ``LOWEST_US <= value <= HIGHEST_US``."""
    bucket = (value | SUB_BUCKET_MASK).bit_length() - BUCKET_SHIFT
    return ((bucket + 1) << HALF_COUNT_MAGNITUDE) + (value >> bucket) - HALF_COUNT


def record(hist: HdrHistogram, value: int) -> None:
    """``hist.record_value(value)`` for ``LOWEST_US <= value <= HIGHEST_US`` (caller clamps)."""
    bucket = (value | SUB_BUCKET_MASK).bit_length() - BUCKET_SHIFT
    hist.counts[((bucket + 1) << HALF_COUNT_MAGNITUDE) + (value >> bucket) - HALF_COUNT] += 1
    hist.total_count += 1
    if value < hist.min_value:
        hist.min_value = value
    if value > hist.max_value:
        hist.max_value = value


def settle(hist: HdrHistogram) -> None:
    """Set ``hist``'s total count, minimum and maximum from its counters, after values were
    counted straight into them (``counts_index``): what reading it (percentiles, encoding,
    ``add``) needs, with the library's own values (its decoder sets them the same way)."""
    c = counts(hist)
    nonzero = np.flatnonzero(c)
    if not len(nonzero):
        hist.total_count, hist.min_value, hist.max_value = 0, sys.maxsize, 0
        return
    layout = bucket_layout()
    hist.total_count = int(c[nonzero].sum())
    hist.min_value = int(layout.lowest[nonzero[0]])
    hist.max_value = int(layout.highest[nonzero[-1]])


def counts(hist: HdrHistogram) -> np.ndarray:
    """Zero-copy view of the histogram's counters."""
    return np.ctypeslib.as_array(hist.counts)


class BucketLayout:
    """Per-index value tables for the one histogram shape keyramp uses."""

    def __init__(self, hist: HdrHistogram) -> None:
        n = hist.counts_len
        lowest = np.array([hist.get_value_from_index(i) for i in range(n)], dtype=np.int64)
        highest = np.array([hist.get_highest_equivalent_value(int(v)) for v in lowest], dtype=np.int64)
        self.lowest = lowest
        self.highest = highest
        self.median = lowest + ((highest - lowest + 1) >> 1)


@functools.cache
def bucket_layout() -> BucketLayout:
    """The value tables of keyramp's one histogram shape (computed once)."""
    return BucketLayout(new_histogram())


def median_values_us() -> np.ndarray:
    """The value each counter stands for (the middle of its bucket), in µs, by counter index."""
    return bucket_layout().median


def sum_us(hist: HdrHistogram) -> float:
    """The sum of the recorded values in µs (each counter at the middle of its bucket, as the mean).

    Over the non-zero counters, in integers: a float ``np.dot`` of all 23,552 counters went to
    OpenBLAS, whose threads then spin; every second, in a load process, that was 6-12 % of its CPU
    (docs/performance.md, "the driver at Python's limit")."""
    c = counts(hist)
    nz = np.flatnonzero(c)
    return float(np.dot(c[nz], bucket_layout().median[nz]))


def bucket_values_us() -> tuple[np.ndarray, np.ndarray]:
    """The lowest and the highest value each counter stands for, in µs, by counter index:
    ``get_value_at_percentile`` reports the highest for a percentile landing on a counter (the
    lowest for the 0th)."""
    layout = bucket_layout()
    return layout.lowest, layout.highest


def percentiles_us(hist: HdrHistogram, pcts: Iterable[float]) -> list[int]:
    """Values at the given percentiles, identical to ``hist.get_value_at_percentile``."""
    pcts = list(pcts)
    total = hist.get_total_count()
    if total == 0:
        return [0 for _ in pcts]
    cum = np.cumsum(counts(hist), dtype=np.uint64)
    layout = bucket_layout()
    out = []
    for p in pcts:
        target = max(int((min(p, 100.0) * total / 100) + 0.5), 1)
        index = int(np.searchsorted(cum, target, side="left"))
        out.append(int(layout.highest[index] if p else layout.lowest[index]))
    return out


def latency_summary_ms(hist: HdrHistogram) -> Latency:
    """``p50, p90, p95, p99, p999, max, mean`` in milliseconds (summary.json's ``latency_ms``)."""
    total = hist.get_total_count()
    if total == 0:
        return Latency(p50=0.0, p90=0.0, p95=0.0, p99=0.0, p999=0.0, max=0.0, mean=0.0)
    p50, p90, p95, p99, p999 = (round(v / 1000.0, 4) for v in percentiles_us(hist, PERCENTILES.values()))
    mean = sum_us(hist) / total / 1000.0
    return Latency(p50=p50, p90=p90, p95=p95, p99=p99, p999=p999, max=round(hist.get_max_value() / 1000.0, 4),
                   mean=round(mean, 4))


def reset(hist: HdrHistogram) -> None:
    """Clear a histogram (vectorised; the library's ``reset`` loops in Python)."""
    counts(hist)[:] = 0
    hist.total_count = 0
    hist.min_value = sys.maxsize  # the library's "empty" sentinel
    hist.max_value = 0
    hist.start_time_stamp_msec = 0
    hist.end_time_stamp_msec = 0
