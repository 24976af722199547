"""KR-SCHED-1: a schedule that cannot reach its shape within the cell.

``kind = "ramp_500_50_5"`` in a 20 s cell never ramps (its first step comes after 5 minutes): the
run says "peak 500 ops/s" and the profile looks like a ramp test. keyramp's own check, not one of
Google's rules: it names what the cell will really run and how to make it run the shape (a longer
``duration``, or ``time_scale`` to compress the schedule's time).
"""

from __future__ import annotations

import math
from typing import Final

from keyramp.core import fmt
from keyramp.profile._schedules import Ramp50050, Schedule, Spike, Step

__all__ = ["SCHEDULE_RULE", "schedule_shape"]

SCHEDULE_RULE: Final = "KR-SCHED-1"


def _fix(needed_s: float, duration_s: float, time_scale: float) -> str:
    """How to fit ``needed_s`` schedule seconds into the cell: a duration, or a time_scale."""
    scale = math.ceil(needed_s / duration_s) if duration_s > 0 else 0
    return (f"make the cell longer (duration ≥ {fmt.duration(needed_s / time_scale)}), or compress the schedule's "
            f"time (time_scale = {scale}: {fmt.duration(needed_s)} of schedule in {fmt.duration(duration_s)})")


def _stepped(schedule: Ramp50050 | Step, horizon: float) -> tuple[int, int] | None:
    """(steps that start within the cell, steps the shape needs) when too few fit, else None."""
    shown = max(1, math.ceil(horizon / schedule.step_s - 1e-9))
    needed = len(schedule.steps) if isinstance(schedule, Step) and not schedule.increment else 2
    return (shown, needed) if shown < needed else None


def schedule_shape(schedule: Schedule, *, duration_s: float, time_scale: float) -> str | None:
    """Why the schedule cannot reach its shape within the cell (one line with the fix), or None."""
    horizon = duration_s * time_scale
    where = f"in a {fmt.duration(duration_s)} cell" + (f" (time_scale {time_scale:g})" if time_scale != 1 else "")
    if isinstance(schedule, Ramp50050 | Step) and (short := _stepped(schedule, horizon)) is not None:
        shown, needed = short
        runs = (f"never steps: it runs at {fmt.ops_per_s(schedule.rate(0.0))} throughout" if shown == 1 else
                f"runs only {shown} of its {needed} steps (peak {fmt.ops_per_s(schedule.peak(horizon))})")
        return (f"{schedule.describe()} {where} {runs}, as a step lasts {fmt.duration(schedule.step_s)}: "
                + _fix(schedule.step_s * max(needed, 3), duration_s, time_scale))
    if isinstance(schedule, Spike) and schedule.burst_at_s + schedule.burst_s > horizon:
        what = "never bursts" if schedule.burst_at_s >= horizon else "cuts its burst short"
        return (f"{schedule.describe()} {where} {what}: "
                + _fix(schedule.burst_at_s + 2 * schedule.burst_s, duration_s, time_scale))
    return None
