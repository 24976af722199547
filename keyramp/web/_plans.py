"""Where a run page's plans come from: the run's own plan step, a saved ``plan.json``, or planned on view.

A run whose ``[thresholds]`` gate on ``plan.*`` holds each cell's plan in summary.json. Any
other finished run with a ``[launch]`` is planned here, once: the first cell is planned and
timed, the rest only when all of them together would take at most ``BUDGET_S`` (a 12-cell
run takes about a minute, docs/performance.md); the result is saved as ``plan.json`` in the
run directory, the format of ``keyramp plan RUN --json``, so the next view (and the next
server) reads it instead of planning again. Cells left out get the command that plans them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keyramp import _format as fmt
from keyramp._errors import UsageError
from keyramp.forecast._plan_run import criteria, plan_run
from keyramp.forecast._prices import load_prices
from keyramp.results._catalog import Run
from keyramp.results._doc import DocError
from keyramp.results._plan_doc import CellPlan, RunPlan, read_run_plan

__all__ = ["BUDGET_S", "PLAN_FILE", "RunPlans", "run_plans"]

#: The saved plan of a run planned on view (or by ``keyramp plan RUN --json > RUN/plan.json``).
PLAN_FILE = "plan.json"
#: The longest a page view may spend planning a run (seconds, projected from its first cell).
BUDGET_S = 12.0


@dataclass(frozen=True, kw_only=True)
class RunPlans:
    """Each cell's plan and where it came from; ``hint``: why cells have none."""

    cells: dict[str, CellPlan] = field(default_factory=dict)
    #: "summary" (the run's plan step), "plan.json" (saved), "planned on view", or None.
    source: str | None = None
    target: str | None = None
    pending: tuple[str, ...] = ()
    hint: str | None = None
    seconds_per_cell: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "pending": list(self.pending), "hint": self.hint,
                "seconds_per_cell": self.seconds_per_cell, "modelled": True}


def _command(run: Run) -> str:
    return f"keyramp plan {run.path} --json > {run.path / PLAN_FILE}"


def _saved(run: Run) -> RunPlans | None:
    try:
        return _from_doc(run, read_run_plan(Path(run.path) / PLAN_FILE), source=PLAN_FILE)
    except (OSError, DocError):  # none, or unreadable: planned again
        return None


def _from_doc(run: Run, plan: RunPlan, *, source: str) -> RunPlans:
    """``plan.json`` (with ``pending`` and ``seconds_per_cell`` when planned on view)."""
    pending = tuple(plan.pending or ())
    hint = None
    if pending:
        hint = (f"{fmt.plural(len(pending), 'cell')} not planned on view (planning one took "
                f"{fmt.duration(plan.seconds_per_cell)}): {_command(run)}")
    return RunPlans(cells=dict(plan.cells), source=source, target=fmt.ops_per_s(plan.target_ops_per_s),
                    pending=pending, hint=hint, seconds_per_cell=plan.seconds_per_cell)


def _plan_on_view(run: Run, budget_s: float) -> RunPlans:
    """Plans the first cell, then the rest if all of them fit ``budget_s``; saves ``plan.json``."""
    cell_ids = [c.id for c in run.manifest.cells] if run.manifest is not None else []
    prices = load_prices()
    planned: list[CellPlan] = []
    pending, first_s = list(cell_ids), None
    while pending:
        cell, started = pending.pop(0), time.perf_counter()
        try:
            got = plan_run(run, cell=cell, prices=prices).cells
        except (UsageError, KeyError, TypeError, ValueError) as exc:  # a damaged manifest: a hint, not a 500
            return RunPlans(hint=f"not planned ({type(exc).__name__}: {exc}): {_command(run)}")
        planned += got.values()
        if first_s is None and got:  # the first cell with a key stream measures what the others cost
            first_s = time.perf_counter() - started
            if first_s * (len(pending) + 1) > budget_s:
                break
    if not planned:
        return RunPlans(hint="no cell with a key stream to plan")
    whole = RunPlan(run=run.run_id, target_ops_per_s=planned[0].target_ops_per_s, target_from="the [launch] peak",
                    throttle=planned[0].throttle, criteria=criteria(planned[0].throttle),
                    cells={c.cell_id: c for c in planned}, pending=pending,
                    seconds_per_cell=round(first_s or 0.0, 2), planned_by="keyramp web, on the run page's first view")
    doc = whole.to_json()
    try:
        (Path(run.path) / PLAN_FILE).write_text(json.dumps(doc, indent=1))
    except OSError:
        pass  # a read-only results directory: planned again by the next server, cached by this one
    return _from_doc(run, RunPlan.from_json(doc), source="planned on view")  # as saved: rates at 0.1 ops/s


def run_plans(run: Run, *, budget_s: float | None = None) -> RunPlans:
    """The plans a run page shows (the caller caches them per summary.json and plan.json);
    ``budget_s``: ``BUDGET_S`` unless given."""
    summary = run.summary
    cells = {cid: c.plan for cid, c in summary.cells.items() if c.plan is not None} if summary is not None else {}
    if cells:
        first = next(iter(cells.values()))
        return RunPlans(cells=cells, source="summary", target=fmt.ops_per_s(first.target_ops_per_s))
    saved = _saved(run)
    if saved is not None:
        return saved
    manifest = run.manifest
    if manifest is None or not isinstance((manifest.profile or {}).get("launch"), dict):
        return RunPlans(hint=f"the profile has no [launch]: keyramp plan {run.path} --target OPS")
    if run.status != "complete":
        return RunPlans(hint=f"the run is {run.status}: planned once it is complete")
    return _plan_on_view(run, BUDGET_S if budget_s is None else budget_s)
