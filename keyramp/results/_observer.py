"""Run observers: who watches a run while it happens (the live status line, a metrics
exporter, …). The runner and the distributed master call them the same way; on a master
every second is the merged view of all workers.

An observer overrides what it needs. ``cell_sink`` may return an ``IntervalSink`` that
receives each closed 1-second interval of the cell with its HdrHistograms (what the run
directory receives), for observers that need more than the per-second rows. The protocol lives
with the results, below the runner, so what writes results while a run happens (``live.json``,
``results/_live.py``) is an observer too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from keyramp.core import KeySample

if TYPE_CHECKING:
    from keyramp.profile import Cell, Profile
    from keyramp.results._rows import IntervalSink, TimeseriesRow
    from keyramp.results._summary import CellSummary, RunSummary

__all__ = ["Observers", "RunObserver", "TeeSink"]


class RunObserver:
    """No-op base: override the events you care about. Must not raise (a broken observer
    is reported by the runner as a warning, never fails the run)."""

    def run_started(self, *, run_id: str, profile: Profile, path: str) -> None: ...

    def cell_phase(self, cell: Cell, what: str) -> None:
        """A cell moved on: "resetting store", "preloading", "warming up …", "measuring"."""

    def cell_sink(self, cell: Cell) -> IntervalSink | None:
        return None

    def second(self, cell: Cell, rows: Sequence[TimeseriesRow], elapsed_s: float, *, users: int) -> None:
        """A second of the measured phase closed: one row per op, the last one is all ops."""

    def cell_finished(self, cell: Cell, summary: CellSummary) -> None: ...

    def run_finished(self, summary: RunSummary) -> None: ...


class Observers(RunObserver):
    """Fans every event out to several observers; an observer that raises is dropped and
    its error kept in ``problems`` (the runner lists them under the summary's warnings)."""

    def __init__(self, observers: Iterable[RunObserver] = ()) -> None:
        self.items = list(observers)
        self.problems: list[str] = []

    def _each(self, method: str, *args: Any, **kw: Any) -> None:
        for o in list(self.items):
            try:
                getattr(o, method)(*args, **kw)
            except Exception as exc:  # noqa: BLE001 - a broken observer must not stop the run
                self.items.remove(o)
                self.problems.append(f"observer {type(o).__name__} failed in {method} and was dropped: "
                                     f"{type(exc).__name__}: {exc}")

    def run_started(self, *, run_id: str, profile: Profile, path: str) -> None:
        self._each("run_started", run_id=run_id, profile=profile, path=path)

    def cell_phase(self, cell: Cell, what: str) -> None:
        self._each("cell_phase", cell, what)

    def cell_sinks(self, cell: Cell) -> list[IntervalSink]:
        return [s for s in (o.cell_sink(cell) for o in self.items) if s is not None]

    def second(self, cell: Cell, rows: Sequence[TimeseriesRow], elapsed_s: float, *, users: int) -> None:
        self._each("second", cell, rows, elapsed_s, users=users)

    def cell_finished(self, cell: Cell, summary: CellSummary) -> None:
        self._each("cell_finished", cell, summary)

    def run_finished(self, summary: RunSummary) -> None:
        self._each("run_finished", summary)


class TeeSink:
    """One ``IntervalSink`` that hands every call to several (run directory first)."""

    def __init__(self, sinks: Sequence[IntervalSink]) -> None:
        self.sinks = list(sinks)

    def interval(self, **kw: Any) -> None:
        for s in self.sinks:
            s.interval(**kw)

    def timeseries(self, rows: Sequence[TimeseriesRow]) -> None:
        for s in self.sinks:
            s.timeseries(rows)

    def keys(self, cell: str, samples: Sequence[KeySample]) -> None:
        for s in self.sinks:
            s.keys(cell, samples)

    def flush(self) -> None:
        for s in self.sinks:
            s.flush()
