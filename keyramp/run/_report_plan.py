"""The plan lines under ``keyramp run``'s summary table: one per cell whose summary holds a plan.

A run plans its cells when the profile has a ``[launch]`` and ``[thresholds]`` gate on ``plan.*``
(``forecast._plan_run.plan_step``); every figure is modelled (docs/plan.md), and the lines say so.
"""

from __future__ import annotations

from keyramp.core import fmt
from keyramp.forecast import faster_short, ramp_text
from keyramp.results import CellLaunchPlan, RunSummary

__all__ = ["PLAN_NOTE", "plan_line", "plan_lines"]

PLAN_NOTE = ("* plan modelled at the [launch] peak: forecasts of each key design over the model's parameter "
             "ranges and list prices, not measurements (keyramp plan RUN for the whole plan; docs/plan.md)")


def plan_line(plan: CellLaunchPlan) -> str:
    """``c01-… plan* 5,000 ops/s: reachable — start 500 ops/s, +50 % every 4.2 min: …; $16.20/h, ramp $2.37``."""
    if plan.reachable:
        answer = "reachable" + (f" — {ramp_text(plan.ramp)}{faster_short(plan.ramp)}" if plan.ramp is not None else "")
    elif plan.fix is not None:
        fix = plan.fix
        value = "" if fix.value is None else f" {fmt.count(fix.value)}"
        answer = f"not reachable — fix: {fix.kind.replace('_', ' ')}{value} ({fix.design})"
        if fix.ramp is not None:
            answer += f", then {ramp_text(fix.ramp)}{faster_short(fix.ramp)}"
    else:
        answer = f"not reachable — {plan.why}"
    cost = plan.cost
    money = "" if cost is None else f"; {fmt.usd(cost.launch_usd_per_hour)}/h" + (
        "" if cost.ramp_usd is None else f", ramp {fmt.usd(cost.ramp_usd)}")
    return f"{plan.cell_id}  plan* {fmt.ops_per_s(plan.target_ops_per_s)}: {answer}{money}"


def plan_lines(summary: RunSummary) -> list[str]:
    """One line per planned cell, then what the star means; empty when no cell holds a plan."""
    lines = [plan_line(cell.plan) for cell in summary.cells.values() if cell.plan is not None]
    return [*lines, PLAN_NOTE] if lines else []
