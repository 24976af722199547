"""Where a run page's plans come from: the run's own plan step, a saved ``plan.json``, or the background planner.

A run whose ``[thresholds]`` gate on ``plan.*`` holds each cell's plan in summary.json. Any
other complete run with a ``[launch]`` is planned once in the background (``_planner``: every
cell, the page shows the progress and updates itself); the result is saved as ``plan.json`` in
the run directory, the format of ``keyramp plan RUN --json``, so the next view (and the next
server) reads it instead of planning again. ``RunPlans.status`` says which: ``planned``,
``planning`` (``done`` of ``total`` cells), ``failed`` (``reason``) or ``none`` (``hint``: why).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from keyramp.core import fmt
from keyramp.results import CellLaunchPlan, DocError, LaunchPlan, Run, read_launch_plan

__all__ = ["PLAN_FILE", "RunPlans", "plan_command", "planned_plans", "run_plans"]

#: The saved plan of a run planned by the UI (or by ``keyramp plan RUN --json > RUN/plan.json``).
PLAN_FILE = "plan.json"


@dataclass(frozen=True, kw_only=True)
class RunPlans:
    """Each cell's plan, where it came from and, while the run is planned, how far; ``hint``: why cells have none."""

    cells: dict[str, CellLaunchPlan] = field(default_factory=dict)
    #: "planned", "planning" (in the background: ``done`` of ``total`` cells), "failed" (``reason``) or "none".
    status: str = "none"
    #: "summary" (the run's plan step), "plan.json" (saved), "planned in the background", or None.
    source: str | None = None
    target: str | None = None
    pending: tuple[str, ...] = ()
    hint: str | None = None
    seconds_per_cell: float | None = None
    done: int | None = None
    total: int | None = None
    reason: str | None = None
    #: How long the background planning took (seconds; this server's, once it has finished).
    seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "source": self.source, "target": self.target, "pending": list(self.pending),
                "hint": self.hint, "seconds_per_cell": self.seconds_per_cell, "done": self.done, "total": self.total,
                "reason": self.reason, "seconds": self.seconds, "planned": list(self.cells), "modelled": True}


def plan_command(run: Run) -> str:
    """The command that plans every cell of ``run`` into its ``plan.json``."""
    return f"keyramp plan {run.path} --json > {run.path / PLAN_FILE}"


def _saved(run: Run) -> RunPlans | None:
    """``plan.json``'s plans; None when there is none. One that does not read is shown as such and
    never planned over: it may be a ``keyramp plan RUN --json > RUN/plan.json`` still writing."""
    try:
        return _from_doc(run, read_launch_plan(Path(run.path) / PLAN_FILE), source=PLAN_FILE)
    except FileNotFoundError:
        return None
    except (OSError, DocError) as exc:
        return RunPlans(status="failed", reason=str(exc),
                        hint=f"{PLAN_FILE} does not read ({exc}): {plan_command(run)}")


def _from_doc(run: Run, plan: LaunchPlan, *, source: str) -> RunPlans:
    """``plan.json`` (older UIs added ``pending`` and ``seconds_per_cell``: cells left out)."""
    pending = tuple(plan.pending or ())
    hint = None
    if pending:
        hint = (f"{fmt.plural(len(pending), 'cell')} not planned on view (planning one took "
                f"{fmt.duration(plan.seconds_per_cell)}): {plan_command(run)}")
    return RunPlans(cells=dict(plan.cells), status="planned", source=source,
                    target=fmt.ops_per_s(plan.target_ops_per_s), pending=pending, hint=hint,
                    seconds_per_cell=plan.seconds_per_cell)


def planned_plans(run: Run, plan: LaunchPlan, *, seconds: float) -> RunPlans:
    """A run the background planner has planned, read as its ``plan.json`` is (rates at 0.1 ops/s;
    ``seconds``: how long it took)."""
    saved = LaunchPlan.from_json(plan.to_json())
    return replace(_from_doc(run, saved, source="planned in the background"), seconds=round(seconds, 1))


def run_plans(run: Run) -> RunPlans | None:
    """The plans a run page shows when the run has them (summary.json, plan.json) or cannot have them
    (``hint``: why); None for a complete run with a ``[launch]`` and no plan yet: the background
    planner's (``_planner``). The caller caches this per summary.json and plan.json."""
    summary = run.summary
    cells = {cid: c.plan for cid, c in summary.cells.items() if c.plan is not None} if summary is not None else {}
    if cells:
        first = next(iter(cells.values()))
        return RunPlans(cells=cells, status="planned", source="summary", target=fmt.ops_per_s(first.target_ops_per_s))
    saved = _saved(run)
    if saved is not None:
        return saved
    manifest = run.manifest
    if manifest is None or manifest.launch is None:
        return RunPlans(hint=f"the profile has no [launch]: keyramp plan {run.path} --target OPS")
    if run.status != "complete":
        return RunPlans(hint=f"the run is {run.status}: planned once it is complete")
    return None
