"""How much of a cell's scheduled load was generated, and by whom (workers lost mid-cell).

A cell cut short (a lost worker, Ctrl-C), a generator that fell behind (dropped slots) or a
lost worker's share all leave part of the schedule unasked of the store; the summary says
which share (``load_generated``), next to what every worker reported before it was lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from keyramp.results import LoadGenerated

if TYPE_CHECKING:
    from keyramp.profile import Cell

__all__ = ["load_generated", "scheduled_ops"]

#: Integration step of the schedule (wall seconds): fine enough for steps and ramps.
_STEP_S = 0.05


def scheduled_ops(cell: Cell) -> float | None:
    """Operations the cell's schedule asks for over its whole planned duration (None: closed model)."""
    sched = cell.schedule
    if not sched.open_model:
        return None
    steps = max(1, round(cell.duration_s / _STEP_S))
    dt = cell.duration_s / steps
    return sum(sched.rate((i + 0.5) * dt * cell.time_scale) for i in range(steps)) * dt


def load_generated(cell: Cell, generated_ops: int, workers: Sequence[dict[str, Any]] | None) -> LoadGenerated:
    """``load_generated`` of a cell summary: scheduled vs generated, and the workers lost."""
    scheduled = scheduled_ops(cell)
    out = LoadGenerated(
        scheduled_ops=None if scheduled is None else round(scheduled, 1),
        generated_ops=generated_ops,
        not_generated_share=None if not scheduled else round(max(0.0, 1.0 - generated_ops / scheduled), 4),
    )
    lost = [w for w in workers or () if w.get("lost")]
    if lost:
        out.workers_lost = [{k: w.get(k) for k in ("index", "host", "pid", "last_second", "count")} for w in lost]
    return out
