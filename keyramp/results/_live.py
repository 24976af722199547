"""``live.json``: what a run is doing right now, for ``keyramp ui`` and scripts.

A run observer: rewritten atomically when a cell changes phase and once a second while it
measures (a few hundred bytes; never on the request path). It names the current cell and
its phase ("preloading", "warming up …", "measuring"), the second of the measured phase,
the scheduled and achieved rate, the schedule step for stepped schedules, and when it was
last written — a run whose process died leaves ``status: "running"`` in its manifest, and
the age of ``live.json`` is how a reader tells it is stale. At the end it records the
run's final status and no current cell.
"""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from keyramp.results._live_doc import LiveCell, LiveStatus, LiveStep
from keyramp.results._observer import RunObserver
from keyramp.results._rundir import utc_now, write_json_atomic
from keyramp.results._summary import CellSummary, RunSummary

__all__ = ["LIVE_FILE", "STEPPED", "LiveFile", "schedule_step", "warmup_phase"]

LIVE_FILE = "live.json"
#: Schedules whose rate moves in discrete steps (the UI shows "step k of n").
STEPPED = frozenset({"step", "ramp_500_50_5", "spike"})
_WARMUP = re.compile(r"^warming up (\d+(?:\.\d+)?)s(?: \+ until settled \(≤ (\d+(?:\.\d+)?)s\))?$")


def warmup_phase(seconds: float, *, settle_up_to: float | None) -> str:
    """The warm-up's phase as observers get it: ``warming up 10s`` (the profile's warm-up), or
    ``warming up 10s + until settled (≤ 30s)`` on a fresh emulator; ``LiveFile`` reads the figures
    back out of it for the UI's countdown."""
    return f"warming up {seconds:g}s" + (f" + until settled (≤ {settle_up_to:g}s)" if settle_up_to else "")


def schedule_step(cell: Any, elapsed_s: float) -> LiveStep | None:
    """The schedule step at ``elapsed_s`` wall seconds into ``cell``'s measured phase (1-based
    ``index`` of ``of``, and its rate), or None for a schedule without steps."""
    schedule = cell.schedule
    if schedule.name not in STEPPED:
        return None
    horizon = cell.duration_s * cell.time_scale
    starts = sorted({p for p in schedule.change_points(horizon) if p < horizon})
    t = min(max(elapsed_s, 0.0) * cell.time_scale, horizon)
    index = max(1, bisect.bisect_right(starts, t))
    return LiveStep(index=index, of=len(starts), ops_per_s=round(schedule.rate(min(t, horizon - 1e-9)), 3))


class LiveFile(RunObserver):
    """Keeps ``<run dir>/live.json`` current."""

    def __init__(self, *, cells: int) -> None:
        self.cells = cells
        self.path: Path | None = None
        self.doc = LiveStatus()

    def _write(self) -> None:
        if self.path is None:
            return
        self.doc.updated_at = utc_now()
        self.doc.updated_epoch = round(time.time(), 3)
        try:
            write_json_atomic(self.path, self.doc.to_json())
        except OSError:  # a view of the run, not part of it: the measurements go on regardless
            pass

    def run_started(self, *, run_id: str, profile: Any = None, path: str) -> None:
        self.path = Path(path) / LIVE_FILE
        self.doc = LiveStatus(schema=1, run_id=run_id, status="running", cells=self.cells, finished=[], cell=None)
        self._write()

    def cell_phase(self, cell: Any, what: str) -> None:
        current = self.doc.cell
        if current is None or current.id != cell.id:
            current = self.doc.cell = LiveCell(
                id=cell.id, index=cell.index, backend=cell.backend, strategy=cell.strategy,
                duration_s=cell.duration_s, schedule=cell.schedule.describe(), elapsed_s=0.0,
                target_ops_per_s=None, achieved_ops_per_s=None, users=None, step=schedule_step(cell, 0.0),
            )
        if current.phase != what:
            current.phase_since_epoch = round(time.time(), 3)
        warming = _WARMUP.match(what)
        current.warmup_s = float(warming[1]) if warming else None
        current.warmup_up_to_s = float(warming[2]) if warming and warming[2] else None
        current.phase = what
        self._write()

    def second(self, cell: Any, rows: Sequence[Any], elapsed_s: float, *, users: int | None) -> None:
        if not rows:
            return
        total = rows[-1]  # the all-operations row
        if self.doc.cell is None or self.doc.cell.id != cell.id:
            self.cell_phase(cell, "measuring")
        current = self.doc.cell
        assert current is not None
        current.phase, current.elapsed_s = "measuring", round(min(elapsed_s, cell.duration_s), 3)
        current.target_ops_per_s, current.achieved_ops_per_s = total.target_ops_per_s, total.count
        current.users, current.step = users, schedule_step(cell, max(0.0, elapsed_s - 1.0))
        self._write()

    def cell_finished(self, cell: Any, summary: CellSummary) -> None:
        self.doc.finished.append(cell.id)
        self.doc.cell = None
        self._write()

    def run_finished(self, summary: RunSummary) -> None:
        self.doc.status = summary.status or "unknown"
        self.doc.cell = None
        self._write()
