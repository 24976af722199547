"""The recorder: measures every operation exactly once (YCSB's ``DBWrapper`` idea).

Per operation it keeps a 1-second interval HdrHistogram of latency from the intended
start (coordinated-omission corrected) and of service time (from the actual start),
error counts by gRPC status class, late starts, and a budgeted sample of keys. Every
second ``tick()`` hands the interval to a sink (hlog lines, timeseries rows, key
samples — flushed to disk), folds it into the cell totals and starts a new interval,
so a crash loses at most the last second.

``record()`` is on the request path of the load test: it does a few integer
operations, two histogram records and, on errors only, a classification.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hdrh.histogram import HdrHistogram

from keyramp.backends import classify
from keyramp.core import ALL_OPS, KIND_OF_OP, Key, KeySample, key_sort_text
from keyramp.results import CellSummary, ErrorClass, ExceptionExample, IntervalSink, OpStats, TargetPoint, TimeseriesRow
from keyramp.run._exceptions import example_of
from keyramp.run._hdr import (
    BUCKET_SHIFT,
    HALF_COUNT,
    HALF_COUNT_MAGNITUDE,
    HIGHEST_US,
    SUB_BUCKET_MASK,
    latency_summary_ms,
    new_histogram,
    percentiles_us,
    reset,
    settle,
    sum_us,
)

if TYPE_CHECKING:
    from keyramp.backends import Decoder
    from keyramp.run._interval import ClosedInterval

__all__ = ["LATE_AFTER_S", "Recorder"]

#: An operation that starts this much after its intended time counts as late.
LATE_AFTER_S = 0.010


@dataclass(slots=True)
class _OpStats:
    latency: HdrHistogram = field(default_factory=new_histogram)
    service: HdrHistogram = field(default_factory=new_histogram)
    latency_total: HdrHistogram = field(default_factory=new_histogram)
    service_total: HdrHistogram = field(default_factory=new_histogram)
    count: int = 0
    errors: int = 0
    late: int = 0
    classes: Counter[str] = field(default_factory=Counter)
    total_count: int = 0
    total_errors: int = 0
    total_late: int = 0
    total_classes: Counter[str] = field(default_factory=Counter)
    #: Error class -> its first occurrence in the cell, if it is the workload's own exception
    #: (None: a store status, or not captured). Every class seen is a key: one lookup per error.
    examples: dict[str, ExceptionExample | None] = field(default_factory=dict)
    #: Examples first seen in the current interval.
    fresh: list[ExceptionExample] = field(default_factory=list)
    #: The interval histograms' counters, which ``Recorder.record`` counts into directly.
    latency_counts: Any = field(init=False)
    service_counts: Any = field(init=False)

    def __post_init__(self) -> None:
        self.latency_counts = self.latency.counts
        self.service_counts = self.service.counts

    def settle(self) -> None:
        """The interval's totals from its counters (``Recorder.record`` counts only)."""
        settle(self.latency)
        settle(self.service)

    def add(
        self,
        latency: HdrHistogram | None,
        service: HdrHistogram | None,
        count: int,
        errors: int,
        late: int,
        classes: Mapping[str, int] | None,
        examples: Iterable[ExceptionExample] = (),
    ) -> None:
        """Fold another interval (another op's, or another process's) into this interval."""
        if latency is not None:
            self.latency.add(latency)
        if service is not None:
            self.service.add(service)
        self.count += count
        self.errors += errors
        self.late += late
        if classes:
            self.classes.update(classes)
        for example in examples:
            self.keep(example.error_class, example)

    def keep(self, error_class: str, example: ExceptionExample | None) -> None:
        """The first example of ``error_class`` (or that it has none)."""
        if self.examples.get(error_class) is None:
            self.examples[error_class] = example
            if example is not None:
                self.fresh.append(example)

    @property
    def total_workload_errors(self) -> int:
        return sum(n for cls, n in self.total_classes.items() if self.examples.get(cls) is not None)

    def rotate(self) -> None:
        self.latency_total.add(self.latency)
        self.service_total.add(self.service)
        self.total_count += self.count
        self.total_errors += self.errors
        self.total_late += self.late
        self.total_classes.update(self.classes)
        reset(self.latency)
        reset(self.service)
        self.count = self.errors = self.late = 0
        self.classes.clear()
        self.fresh = []


def _ms(us: int) -> float:
    return round(us / 1000.0, 4)


def errors_by_class(classes: Mapping[str, int],
                    examples: Mapping[str, ExceptionExample | None]) -> dict[str, ErrorClass]:
    """summary.json's ``errors_by_class``: class -> its count, and for the workload's own
    exceptions their first occurrence (``op``, ``message``, ``traceback``, ``where``)."""
    out: dict[str, ErrorClass] = {}
    for cls, n in sorted(classes.items()):
        example = examples.get(cls)
        out[cls] = ErrorClass(count=n) if example is None else example.entry(n)
    return out


def _op_summary(stats: _OpStats, duration_s: float, dropped: int | None) -> OpStats:
    count = stats.total_count
    return OpStats(
        count=count,
        errors=stats.total_errors,
        error_rate=round(stats.total_errors / count, 6) if count else 0.0,
        errors_by_class=errors_by_class(stats.total_classes, stats.examples),
        # Exceptions of the workload's own code (not store statuses): a broken op.
        workload_errors=stats.total_workload_errors,
        # Client retries are disabled, so every attempt is one recorded operation.
        attempts=count,
        ops_per_s=round(count / duration_s, 3) if duration_s > 0 else 0.0,
        latency_ms=latency_summary_ms(stats.latency_total),
        service_ms=latency_summary_ms(stats.service_total),
        late=stats.total_late,
        dropped=dropped,
    )


class Recorder:
    """Measures one cell. Not thread-safe: gevent runs all users on one thread."""

    def __init__(
        self,
        *,
        cell: str,
        ops: Iterable[str],
        sink: IntervalSink,
        key_samples_per_s: int = 500,
        capture_exceptions: bool = False,
        kinds: Mapping[str, str] | None = None,
        decode: tuple[Decoder, str] | None = None,
    ) -> None:
        self.cell = cell
        #: What each op does to the key it returns (``keyramp.core._types.KIND_OF_OP`` for the built-in ones; a
        #: Python workload's inserts and, undecoded, reads); ``decode``: a Python workload's store decoder and
        #: the cell's namespace, for the requests its ops really sent (``backends._capture``).
        self._kinds = {**KIND_OF_OP, **(kinds or {})}
        self._decode = decode
        #: Keep the first occurrence of each of the workload's own exceptions (a Python
        #: workload's cell; built-in operations raise only what keyramp itself measures).
        self._capture = capture_exceptions
        self._ops: dict[str, _OpStats] = {op: _OpStats() for op in ops}
        self._all = _OpStats()  # merged view, filled at each tick
        self._sink = sink
        self._budget = key_samples_per_s
        self._stride = 1
        self._seen = 0
        self._samples: list[KeySample] = []
        self.start = 0.0
        self._interval_start = 0.0
        #: End of the measured phase (``begin(duration_s=)``): the last interval runs past it
        #: by the drain, so its achieved rate counts only the time within the phase.
        self._phase_end: float | None = None
        self._second = 0
        self.dropped_total = 0
        self.target_timeline: list[TargetPoint] = []

    # -- request path -------------------------------------------------------------------
    def record(
        self,
        op: str,
        key: Key | None,
        intended: float,
        started: float,
        ended: float,
        error: BaseException | None = None,
        calls: list[tuple[str, Any]] | None = None,
    ) -> None:
        """Record one finished operation (times from ``time.perf_counter()``). ``calls``: the requests a
        Python workload's op sent (``backends._capture``), decoded only if the op is sampled."""
        stats = self._ops[op]
        # Each value goes straight into its histogram's counter (``_hdr.counts_index``,
        # inlined; ``tick`` settles the totals once a second): no call, no min/max per value.
        us = int((ended - started) * 1e6)
        us = 1 if us < 1 else (us if us < HIGHEST_US else HIGHEST_US)
        bucket = (us | SUB_BUCKET_MASK).bit_length() - BUCKET_SHIFT
        index = ((bucket + 1) << HALF_COUNT_MAGNITUDE) + (us >> bucket) - HALF_COUNT
        stats.service_counts[index] += 1
        if intended != started:  # else latency is the service time (a closed model's, an on-time start)
            us = int((ended - intended) * 1e6)
            us = 1 if us < 1 else (us if us < HIGHEST_US else HIGHEST_US)
            bucket = (us | SUB_BUCKET_MASK).bit_length() - BUCKET_SHIFT
            index = ((bucket + 1) << HALF_COUNT_MAGNITUDE) + (us >> bucket) - HALF_COUNT
        stats.latency_counts[index] += 1
        stats.count += 1
        if started - intended > LATE_AFTER_S:
            stats.late += 1
        if error is not None:
            stats.errors += 1
            cls = classify(error)
            stats.classes[cls] += 1
            if cls not in stats.examples:  # the first of its class in this op: once per cell
                stats.keep(cls, example_of(op, cls, error) if self._capture else None)
        if (key is not None or calls) and self._budget:
            self._seen += 1
            if self._seen % self._stride == 0:
                self._sample(round(ended - self.start, 4), op, key, calls)

    def _sample(self, t: float, op: str, key: Key | None, calls: list[tuple[str, Any]] | None) -> None:
        """The sampled op's accesses: what its requests did (decoded), else the key it returned."""
        if calls and self._decode is not None:
            decoder, namespace = self._decode
            accesses = decoder(calls, namespace)
            if accesses:
                self._samples.extend((t, op, a.key, a.kind, a.index, i) for i, a in enumerate(accesses))
                return
        if key is not None:
            self._samples.append((t, op, key_sort_text(key), self._kinds.get(op, "read"), (), 0))

    # -- merging (the master of a distributed run) -----------------------------------------
    def absorb(self, intervals: Iterable[ClosedInterval]) -> None:
        """Add other processes' closed intervals (interval *k* of each worker) to the current one.

        The next ``tick()`` then writes the merged interval exactly as if every operation
        had been recorded here: counts summed, percentiles from the merged histograms, the
        first example of each of the workload's exception classes kept, key samples in time order.
        """
        samples: list[KeySample] = []
        for interval in intervals:
            for op, o in interval.ops.items():
                self._ops[op].add(o.latency, o.service, o.count, o.errors, o.late, o.classes, o.exceptions)
            samples.extend(interval.keys)
        samples.sort(key=lambda s: s[0])
        self._samples.extend(samples)

    # -- once a second --------------------------------------------------------------------
    def begin(self, start: float, *, duration_s: float | None = None) -> None:
        self.start = self._interval_start = start
        self._phase_end = None if duration_s is None else start + duration_s

    @property
    def interval_start_s(self) -> float:
        """Where the open interval starts, in seconds since ``begin`` (its schedule time)."""
        return self._interval_start - self.start

    def tick(self, now: float, *, target_ops_per_s: float | None, dropped: int = 0) -> list[TimeseriesRow]:
        """Close the current interval at ``now``: write it out and fold it into the totals."""
        length = max(now - self._interval_start, 1e-9)
        start_s = self._interval_start - self.start
        rows: list[TimeseriesRow] = []
        all_ops = self._all
        for op, stats in self._ops.items():
            stats.settle()
            self._sink.interval(
                cell=self.cell, op=op, start_s=start_s, length_s=length, latency=stats.latency, service=stats.service
            )
            rows.append(self._row(op, stats, length, target_ops_per_s=None, dropped=0))
            all_ops.add(stats.latency, stats.service, stats.count, stats.errors, stats.late, stats.classes,
                        stats.fresh)
            stats.rotate()
        rows.append(self._row(ALL_OPS, all_ops, length, target_ops_per_s=target_ops_per_s, dropped=dropped))
        self._sink.interval(
            cell=self.cell,
            op=ALL_OPS,
            start_s=start_s,
            length_s=length,
            latency=all_ops.latency,
            service=all_ops.service,
        )
        # The last interval closes after the drain: its in-flight operations belong to the
        # phase's last second, so the rate is over the part within the phase, never over the
        # drain (which made every cell end on a 0 %-achieved second).
        within = length if self._phase_end is None else min(now, self._phase_end) - self._interval_start
        achieved = all_ops.count / (within if within > 0.05 else length)
        if target_ops_per_s is not None:
            self.target_timeline.append(
                TargetPoint(t=self._second, target=round(target_ops_per_s, 3), achieved=round(achieved, 3),
                            errors=all_ops.errors))
        self.dropped_total += dropped
        # Adapt the key-sampling stride so about ``budget`` samples land per second.
        if self._budget:
            self._stride = max(1, -(-all_ops.count // self._budget))
            if self._samples:
                self._sink.keys(self.cell, self._samples)
                self._samples = []
        all_ops.rotate()
        self._sink.timeseries(rows)
        self._sink.flush()
        self._interval_start = now
        self._second += 1
        return rows

    def _row(self, op: str, stats: _OpStats, length_s: float, *, target_ops_per_s: float | None,
             dropped: int) -> TimeseriesRow:
        # a second in which nothing completed has no latency: null (a gap in every chart), never 0 ms
        p50: float | None = None
        p95 = p99 = svc99 = top = p50
        if stats.count:
            p50, p95, p99 = (_ms(v) for v in percentiles_us(stats.latency, (50.0, 95.0, 99.0)))
            svc99 = _ms(percentiles_us(stats.service, (99.0,))[0])
            top = _ms(stats.latency.get_max_value())
        return TimeseriesRow(
            cell=self.cell,
            op=op,
            second=self._second,
            count=stats.count,
            errors=stats.errors,
            p50_ms=p50,
            p99_ms=p99,
            service_p99_ms=svc99,
            max_ms=top,
            target_ops_per_s=target_ops_per_s,
            late=stats.late,
            dropped=dropped,
            error_classes=dict(stats.classes),
            exceptions=tuple(stats.fresh),
            p95_ms=p95,
            # operations in service on average (Little's law: the service time of those that completed in
            # the interval over its length); unknown, not 0, when none completed
            in_flight=round(sum_us(stats.service) / 1e6 / length_s, 3) if stats.count else None,
        )

    # -- end of cell ----------------------------------------------------------------------
    def summary(self, *, duration_s: float) -> CellSummary:
        """The cell's measured figures (``operations``, ``total``, the target timeline, late and
        dropped; call after the last ``tick``): the runner adds what ran and the analyses."""
        return CellSummary(
            # a dropped operation was never started, so no operation was ever chosen for it: only the
            # total counts them (an operation's 0 would not add up to the total's 100)
            operations={op: _op_summary(s, duration_s, None) for op, s in self._ops.items() if s.total_count},
            total=_op_summary(self._all, duration_s, self.dropped_total),
            target_ops_per_s=self.target_timeline,
            late=self._all.total_late,
            dropped=self.dropped_total,
        )

    def merged_latency(self, op: str = ALL_OPS) -> HdrHistogram:
        """The cell's whole-run latency histogram for ``op`` (for tests and compare)."""
        return (self._all if op == ALL_OPS else self._ops[op]).latency_total
