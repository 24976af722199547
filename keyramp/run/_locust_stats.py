"""Locust's own statistics, fed once a second from the recorder instead of once per request.

Every operation is recorded once, into the ``Recorder``. Locust's web UI and CSV files
(``results/<run>/locust/``, plain ``locust -f``) still want ``RequestStats``; this sink
turns each closed interval into the same entries Locust's ``events.request`` listener
would have made — counts per second, response times in Locust's rounded buckets (from the
interval's service-time HdrHistogram: Locust times from the actual start), failures by
error class — at a cost per second and operation, not per request. The workload's own
exceptions (``run._exceptions``) also go where Locust puts a task's exception: the runner's
``exceptions`` (its ``_exceptions.csv``), with message, traceback and count.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from hdrh.histogram import HdrHistogram
from locust.runners import ExceptionDict, Runner
from locust.stats import RequestStats, StatsEntry, StatsError, bucket_response_time

from keyramp.core import ALL_OPS, KeySample
from keyramp.results import TimeseriesRow
from keyramp.run._exceptions import ExceptionExample
from keyramp.run._hdr import counts, median_values_us

__all__ = ["LocustStatsSink"]


class LocustStatsSink:
    """An ``IntervalSink`` that adds each closed interval to a Locust ``RequestStats``."""

    def __init__(self, stats: RequestStats, *, request_type: str, runner: Runner | None = None,
                 node: str = "local") -> None:
        self.stats = stats
        self.request_type = request_type
        #: The Locust runner whose ``exceptions`` get the workload's (None: not kept; Locust
        #: replaces that dict when a test starts), and the node its rows name.
        self.runner = runner
        self.node = node
        #: (op, error class) -> the failure's text and its ``exceptions`` row, once its example is seen.
        self._examples: dict[tuple[str, str], tuple[str, ExceptionDict | None]] = {}

    def interval(self, *, cell: str, op: str, start_s: float, length_s: float, latency: HdrHistogram,
                 service: HdrHistogram) -> None:
        if op == ALL_OPS or not service.get_total_count():
            return
        now = time.time()
        for entry in (self.stats.get(op, self.request_type), self.stats.total):
            _add_times(entry, service, now)

    def timeseries(self, rows: Sequence[TimeseriesRow]) -> None:
        now = time.time()
        for row in rows:
            if row.op == ALL_OPS or not row.errors:
                continue
            for entry in (self.stats.get(row.op, self.request_type), self.stats.total):
                entry.num_failures += row.errors
                entry.num_fail_per_sec[int(now)] += row.errors
            for example in row.exceptions:
                self._add_example(row.op, example)
            for cls, n in row.error_classes.items():
                text, exception = self._examples.get((row.op, cls), (cls, None))
                key = StatsError.create_key(self.request_type, row.op, text)
                error = self.stats.errors.get(key)
                if error is None:
                    error = self.stats.errors[key] = StatsError(self.request_type, row.op, text)
                error.occurrences += n
                if exception is not None:
                    exception["count"] += n

    def _add_example(self, op: str, example: ExceptionExample) -> None:
        """A workload exception's first occurrence: its failure text names the message, and it
        gets a row in the runner's exceptions as Locust's ``log_exception`` makes one."""
        row = None
        if self.runner is not None:
            trace = "\n".join(example.traceback)
            fresh: ExceptionDict = {"count": 0, "msg": example.message, "traceback": trace, "nodes": set()}
            row = self.runner.exceptions.setdefault(hash(trace), fresh)  # as Locust's log_exception keys it
            row["nodes"].add(self.node)
        self._examples[(op, example.error_class)] = (f"{example.error_class}: {example.message}", row)

    def keys(self, cell: str, samples: Sequence[KeySample]) -> None:
        pass

    def flush(self) -> None:
        pass


def _add_times(entry: StatsEntry, hist: HdrHistogram, now: float) -> None:
    """What ``entry.log(ms, 0)`` for every value in ``hist`` would add, in one step."""
    c = counts(hist)
    index = np.flatnonzero(c)
    n = int(hist.get_total_count())
    values_ms = median_values_us()[index] / 1000.0
    weights = c[index]
    if entry.use_response_times_cache and entry.last_request_timestamp and int(now) > int(
            entry.last_request_timestamp):
        entry._cache_response_times(int(now) - 1)
    entry.num_requests += n
    entry.num_reqs_per_sec[int(now)] += n
    entry.last_request_timestamp = now
    # Locust annotates the field int, but its own ``log`` adds float milliseconds to it too.
    entry.total_response_time += float((values_ms * weights).sum())  # type: ignore[assignment]  # no BLAS: _hdr.sum_us
    low, high = hist.get_min_value() / 1000.0, hist.get_max_value() / 1000.0
    entry.min_response_time = low if entry.min_response_time is None else min(entry.min_response_time, low)
    entry.max_response_time = max(entry.max_response_time, high)
    for value, weight in zip(values_ms.tolist(), weights.tolist(), strict=True):
        entry.response_times[bucket_response_time(value)] += weight
