"""A distributed cell's merge: interval *k* of every worker, folded into the master's recorder
in order, so the run directory is written exactly as a single process writes it.

A worker's interval waits until every live worker's interval of that second is in (or the
worker has finished earlier); a failed or interrupted cell flushes whatever arrived."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from keyramp.results import TimeseriesRow
from keyramp.run._cpu import CpuSample
from keyramp.run._exceptions import WarmupTally
from keyramp.run._interval import ClosedInterval
from keyramp.run._messages import IntervalReport
from keyramp.run._pacer import Pacer
from keyramp.run._recorder import Recorder

__all__ = ["CellMerge"]


@dataclass
class CellMerge:
    """Merges interval *k* of every worker into the master's recorder, in order."""

    token: str
    workers: list[str]
    recorder: Recorder
    #: The whole schedule's pacer (share 1), for the merged target rate; None for a closed model.
    pacer: Pacer | None
    ready: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warmup: list[float] = field(default_factory=list)
    #: Each worker's warm-up so far (operations, the workload's own exceptions among them).
    warmup_tally: dict[str, WarmupTally] = field(default_factory=dict)
    #: Records each worker's warm-up inserted, reported as its measured phase starts.
    warmup_inserts: dict[str, int] = field(default_factory=dict)
    #: Intervals that arrived, by second and worker, until every worker's interval of that second is there.
    pending: dict[int, dict[str, ClosedInterval]] = field(default_factory=dict)
    finished: dict[str, int] = field(default_factory=dict)
    next: int = 0
    rows: list[list[TimeseriesRow]] = field(default_factory=list)
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    dropped: Counter[str] = field(default_factory=Counter)
    #: Each worker's ``CpuSample`` since its phase started, from its latest interval in the phase.
    cpu: dict[str, CpuSample] = field(default_factory=dict)
    #: The last second each worker reported (a lost worker's record ends there).
    last_second: dict[str, int] = field(default_factory=dict)

    def add(self, client_id: str, report: IntervalReport) -> None:
        if client_id not in self.workers or client_id in self.finished:
            return
        interval = report.interval
        second = interval.second
        self.last_second[client_id] = max(second, self.last_second.get(client_id, -1))
        if report.cpu and (not interval.final or client_id not in self.cpu):  # the last one includes the drain
            self.cpu[client_id] = report.cpu
        self.pending.setdefault(second, {})[client_id] = interval
        per_op = self.counts.setdefault(client_id, Counter())
        for op, o in interval.ops.items():
            per_op[op] += o.count
        self.dropped[client_id] += interval.dropped
        if interval.final:
            self.finished[client_id] = second
        while self.next in self.pending and self._complete(self.next):
            self._merge(self.next)
            self.next += 1

    def _complete(self, second: int) -> bool:
        parts = self.pending[second]
        return all(w in parts or self.finished.get(w, second) < second for w in self.workers)

    def _merge(self, second: int) -> None:
        parts = self.pending.pop(second).values()
        self.recorder.absorb(parts)
        # the rate at the second's start (the last second closes after the drain)
        target = self.pacer.target_rate(min(p.start_s for p in parts)) if self.pacer else None
        self.rows.append(self.recorder.tick(max(p.end_s for p in parts), target_ops_per_s=target,
                                            dropped=sum(p.dropped for p in parts)))

    @property
    def done(self) -> bool:
        return len(self.finished) == len(self.workers) and not self.pending

    def flush(self) -> None:
        """Merge whatever arrived (a failed or interrupted cell keeps what was recorded)."""
        for second in sorted(self.pending):
            self._merge(second)

    def take_rows(self) -> list[list[TimeseriesRow]]:
        rows, self.rows = self.rows, []
        return rows
