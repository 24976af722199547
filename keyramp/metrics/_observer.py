"""``MetricsState`` as a run observer (``keyramp.results._observer``): the runner and the distributed
master call it the same way, and its per-cell sink receives the merged intervals on a master."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from keyramp.metrics._state import MetricsState
from keyramp.results import RunObserver

if TYPE_CHECKING:
    from keyramp.profile import Cell, Profile
    from keyramp.results import CellSummary, IntervalSink, RunSummary, TimeseriesRow

__all__ = ["MetricsObserver"]


class MetricsObserver(RunObserver):
    def __init__(self, state: MetricsState) -> None:
        self.state = state

    def run_started(self, *, run_id: str, profile: Profile, path: str) -> None:
        self.state.run_started(run_id=run_id, profile=profile.name)

    def cell_phase(self, cell: Cell, what: str) -> None:
        if what == "measuring":  # the phase starts now: its intervals follow
            self.state.cell_started(cell=cell.id, backend=cell.backend, strategy=cell.strategy,
                                    duration_s=cell.duration_s, users=0)

    def cell_sink(self, cell: Cell) -> IntervalSink | None:
        return self.state

    def second(self, cell: Cell, rows: Sequence[TimeseriesRow], elapsed_s: float, *, users: int) -> None:
        self.state.cell_users(cell=cell.id, users=users)

    def cell_finished(self, cell: Cell, summary: CellSummary) -> None:
        self.state.cell_finished(cell=cell.id, summary=summary)

    def run_finished(self, summary: RunSummary) -> None:
        self.state.run_finished(status=summary.status or "unknown")
