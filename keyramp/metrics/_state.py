"""What ``/metrics`` shows, accumulated from the recorder's closed 1-second intervals.

``MetricsState`` is an ``IntervalSink`` (behind a tee with the run directory): every
closed interval of every cell adds to per-operation counters and to cumulative latency
histograms in Prometheus buckets, computed once from the interval's HdrHistogram. In a
distributed run the master's recorder ticks the merged intervals through the same sink,
so the state is the merged view. The lifecycle calls (run/cell started and finished, from
``MetricsObserver``) give the labels (profile, backend, strategy) and the gauges that are not
in an interval (users, ``generator_limited``). Everything runs on the run's gevent thread; a scrape reads it there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from hdrh.histogram import HdrHistogram

from keyramp.core import ALL_OPS, KeySample
from keyramp.results import CellSummary, TimeseriesRow
from keyramp.run import bucket_layout, counts

__all__ = ["BUCKETS_S", "CellState", "MetricsState", "OpState", "RunState"]

#: Histogram bucket upper bounds in seconds: 1-2-5 steps from 0.1 ms to 10 s (emulators answer
#: in 1–10 ms, a saturated generator or a cloud hotspot in 100 ms – 10 s); +Inf is implicit.
BUCKETS_S: tuple[float, ...] = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
                                1.0, 2.0, 5.0, 10.0)


class _Buckets:
    """HdrHistogram counters -> counts at or below each bucket bound, in one numpy pass.

    A value is recorded in an HdrHistogram index covering ``[lowest, highest]`` (3 significant
    digits); it counts for a bound when its index's lowest value is at or below it. Below 2,048 µs
    every index is one microsecond wide, so the bounds up to 2 ms are exact; above, the
    uncertainty is the histogram's own (under 0.1 %)."""

    def __init__(self) -> None:
        layout = bucket_layout()
        bounds_us = np.array([round(b * 1e6) for b in BUCKETS_S], dtype=np.int64)
        self.index = np.searchsorted(layout.lowest, bounds_us, side="right") - 1
        self.median_s = layout.median.astype(np.float64) / 1e6

    def add(self, hist: HdrHistogram, into: np.ndarray) -> float:
        """Add ``hist``'s counts per bucket into ``into``; return the sum of its values (s).

        Works on the non-zero counters only (a second's histogram fills a few hundred of its
        23,552), and without ``np.dot``: BLAS threads made one dot cost 0.2–2 ms on a loaded box."""
        c = counts(hist)
        nz = np.flatnonzero(c)
        if not len(nz):
            return 0.0
        values = c[nz].astype(np.int64)
        cumulative = np.cumsum(values)
        pos = np.searchsorted(nz, self.index, side="right")  # non-zero counters at or below each bound
        into += np.where(pos > 0, cumulative[pos - 1], 0)
        return float((values * self.median_s[nz]).sum())


@dataclass
class OpState:
    count: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    late: int = 0
    latency: np.ndarray = field(default_factory=lambda: np.zeros(len(BUCKETS_S), dtype=np.int64))
    latency_sum_s: float = 0.0
    service: np.ndarray = field(default_factory=lambda: np.zeros(len(BUCKETS_S), dtype=np.int64))
    service_sum_s: float = 0.0
    #: Values in the histograms (= ``count``; the +Inf bucket).
    recorded: int = 0


@dataclass
class CellState:
    id: str
    backend: str
    strategy: str
    duration_s: float
    users: int = 0
    active: bool = True
    ops: dict[str, OpState] = field(default_factory=dict)
    dropped: int = 0
    #: The last closed second: scheduled and achieved ops/s (None: closed model / none yet).
    target_ops_per_s: float | None = None
    achieved_ops_per_s: float | None = None
    elapsed_s: float = 0.0
    #: From the cell summary once the cell finished (``None``: not judged, or not yet).
    generator_limited: bool | None = None
    #: ``(start_s, length_s)`` of the all-operations interval being closed (seen before its rows).
    _span: tuple[float, float] = (0.0, 1.0)
    #: The finished cell's samples per family, rendered once (``_exposition.render``).
    rendered: dict[str, list[str]] | None = None


@dataclass
class RunState:
    run_id: str
    profile: str
    active: bool = True
    status: str = "running"
    cells: dict[str, CellState] = field(default_factory=dict)


class MetricsState:
    """Every run of this process, in start order (``keyramp run a.toml b.toml`` is two runs)."""

    def __init__(self) -> None:
        self.runs: dict[str, RunState] = {}
        self._current: RunState | None = None
        self._buckets = _Buckets()
        #: Bumped on every change: the server waits for a scrape that saw the last one.
        self.version = 0

    # -- lifecycle (called by the runner) -------------------------------------------------------
    def run_started(self, *, run_id: str, profile: str) -> None:
        self._current = self.runs[run_id] = RunState(run_id=run_id, profile=profile)
        self.version += 1

    def cell_started(self, *, cell: str, backend: str, strategy: str, duration_s: float, users: int = 0) -> None:
        """At the start of the measured phase (labels; the user count follows with each second)."""
        run = self._run()
        run.cells[cell] = CellState(id=cell, backend=backend, strategy=strategy, duration_s=duration_s, users=users)
        self.version += 1

    def cell_users(self, *, cell: str, users: int) -> None:
        state = self._run().cells.get(cell)
        if state is not None and state.users != users:
            state.users = users
            self.version += 1

    def cell_finished(self, *, cell: str, summary: CellSummary | None = None) -> None:
        state = self._run().cells.get(cell)
        if state is None:
            return
        state.active = False
        state.rendered = None
        state.generator_limited = summary.generator_limited if summary is not None else None
        self.version += 1

    def run_finished(self, *, status: str) -> None:
        run = self._run()
        run.active, run.status = False, status
        for cell in run.cells.values():
            if cell.active:
                cell.active, cell.rendered = False, None
        self.version += 1

    def _run(self) -> RunState:
        if self._current is None:
            raise RuntimeError("MetricsState: run_started() was not called")
        return self._current

    # -- IntervalSink ---------------------------------------------------------------------------
    def _cell(self, cell: str) -> CellState | None:
        return self._current.cells.get(cell) if self._current is not None else None

    def interval(self, *, cell: str, op: str, start_s: float, length_s: float, latency: HdrHistogram,
                 service: HdrHistogram) -> None:
        state = self._cell(cell)
        if state is None:  # a probe cell or a warm-up: no measured phase announced
            return
        state.rendered = None
        if op == ALL_OPS:
            state._span = (start_s, length_s)
            return
        if not latency.get_total_count():
            return
        o = state.ops.setdefault(op, OpState())
        o.latency_sum_s += self._buckets.add(latency, o.latency)
        o.service_sum_s += self._buckets.add(service, o.service)
        o.recorded += latency.get_total_count()

    def timeseries(self, rows: Sequence[TimeseriesRow]) -> None:
        if not rows:
            return
        state = self._cell(rows[0].cell)
        if state is None:
            return
        state.rendered = None
        for row in rows:
            if row.op == ALL_OPS:
                start_s, length_s = state._span
                # As the recorder's timeline: the last second (closed after the drain) is rated
                # over its part within the phase.
                within = min(start_s + length_s, state.duration_s) - start_s
                state.achieved_ops_per_s = row.count / (within if within > 0.05 else length_s)
                state.target_ops_per_s = row.target_ops_per_s
                state.dropped += row.dropped
                state.elapsed_s = min(start_s + length_s, state.duration_s)
                continue
            o = state.ops.setdefault(row.op, OpState())
            o.count += row.count
            o.late += row.late
            if row.error_classes:
                o.errors.update(row.error_classes)
        self.version += 1

    def keys(self, cell: str, samples: Sequence[KeySample]) -> None:
        pass

    def flush(self) -> None:
        pass
