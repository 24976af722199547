"""A cell's latency distribution per operation, from its HdrHistogram logs: the percentile plot
of HdrHistogram's own plotter (latency against ``1/(1-q)`` on a log axis, so 90 %, 99 %, 99.9 % …
are evenly spaced and the tail is as wide as the body).

Every interval of a ``.hlog`` is added into one histogram per log (HdrHistogram addition is
exact), so each point is the whole cell's percentile, exactly as ``summary.json`` computes it.
A running cell's log grows a line a second: ``HlogTotals`` keeps each log's sum with the offset
it was read to and reads only what was appended since.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from keyramp.core import ALL_OPS
from keyramp.results import add_hlog, cell_hlogs
from keyramp.run import bucket_values_us

__all__ = ["HlogTotals", "cell_distribution", "percentile_points"]

#: Points per decade of ``1/(1-q)`` (10: 0 %, 20.6 %, 36.9 % … 90 %, 92.1 % … 99 % …).
_PER_DECADE = 10


class HlogTotals:
    """Each ``.hlog``'s intervals added up, kept with how far the file was read (per app)."""

    def __init__(self, *, max_files: int = 1024) -> None:
        self._max = max_files
        self._lock = threading.Lock()
        #: path -> (inode, bytes read, counts by counter index)
        self._files: OrderedDict[str, tuple[int, int, np.ndarray]] = OrderedDict()

    def total(self, path: Path) -> np.ndarray:
        """The sum of every interval in ``path`` so far, by counter index (empty: no file)."""
        size = len(bucket_values_us()[1])
        try:
            st = os.stat(path)
        except OSError:
            return np.zeros(size, dtype=np.int64)
        key = str(path)
        with self._lock:
            entry = self._files.get(key)
        if entry is None or entry[0] != st.st_ino or st.st_size < entry[1]:  # new, or rewritten: from the start
            offset, counts = 0, np.zeros(size, dtype=np.int64)
        else:
            _, offset, counts = entry
        if st.st_size > offset:
            counts = counts.copy()  # a request still holding the last sum keeps it as it was
            offset = add_hlog(path, counts, offset=offset)
        with self._lock:
            self._files[key] = (st.st_ino, offset, counts)
            self._files.move_to_end(key)
            while len(self._files) > self._max:
                self._files.popitem(last=False)
        return counts


def percentile_points(counts: np.ndarray) -> dict[str, Any] | None:
    """``{"x", "ms", "count"}``: the value at q for ``x = 1/(1-q)`` from 1 (q = 0, the minimum) in
    steps of a tenth of a decade, as ``get_value_at_percentile`` computes it, and the maximum
    last, at x = the count (where HdrHistogram's plotter ends); None for an empty histogram."""
    total = int(counts.sum())
    if total == 0:
        return None
    lowest, highest = bucket_values_us()
    cum = np.cumsum(counts)
    steps = math.floor(math.log10(total) * _PER_DECADE + 1e-9)
    xs = [10 ** (k / _PER_DECADE) for k in range(steps + 1)]
    if xs[-1] < total:
        xs.append(float(total))
    q = 1.0 - 1.0 / np.asarray(xs)
    target = np.maximum((q * total + 0.5).astype(np.int64), 1)
    target[-1] = total  # the maximum
    index = np.searchsorted(cum, target, side="left")
    values = np.where(q > 0, highest[index], lowest[index]) / 1000.0
    return {"x": [round(x, 3) for x in xs], "ms": [round(float(v), 4) for v in values], "count": total}


def cell_distribution(totals: HlogTotals, run_dir: Path, cell: str) -> dict[str, dict[str, Any]]:
    """{op: {"x", "latency_ms", "service_ms", "count"}} for the cell's operations and ``*`` (all of
    them): latency from the intended start and service time at the same ``x``."""
    logs = cell_hlogs(run_dir, cell)
    sums: dict[str, tuple[np.ndarray, np.ndarray]] = {
        op: (totals.total(latency), totals.total(service)) for op, (latency, service) in logs.items()}
    if sums:
        sums[ALL_OPS] = (np.sum([a for a, _ in sums.values()], axis=0), np.sum([b for _, b in sums.values()], axis=0))
    out = {}
    for op, (latency, service) in sums.items():
        points = percentile_points(latency)
        if points is None:
            continue
        served = percentile_points(service)
        # the service log has as many operations: the same x, unless a log was torn
        service_ms = served["ms"] if served is not None and served["x"] == points["x"] else []
        out[op] = {"x": points["x"], "latency_ms": points["ms"], "service_ms": service_ms,
                   "count": points["count"]}
    return out
