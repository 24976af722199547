"""A finished run planned (``keyramp plan RUN``), and the run's own plan step (``cells[id].plan``).

The target is ``--target`` or the peak of the run's ``[launch]``; the Bigtable cluster and
the parameter ranges come from the options, else from the ``[launch]``. Every cell with a
key stream is planned with its own ``Planner`` (docs/plan.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from keyramp.backends import default_boxes, load_params_file
from keyramp.core import UsageError, fmt
from keyramp.forecast._prices import LABEL, Prices, load_prices
from keyramp.results import LaunchPlan, Run

if TYPE_CHECKING:
    from keyramp.forecast._forecast import FinishedCell

__all__ = ["criteria", "plan_run", "plan_step", "wants_plan"]


def criteria(throttle: float) -> dict[str, str]:
    """What "passes" means in each check (the same words in JSON, text and docs/plan.md)."""
    # deferred: start-up cost (the planner and the model: the scenario report and the web UI import LaunchPlan)
    from keyramp.forecast._band import PEAK_OK_MAX  # deferred: start-up cost
    from keyramp.forecast._planner import HOLD_S, PROBE_FACTOR  # deferred: start-up cost

    limit = fmt.percent(throttle)
    return {
        "steady": "a constant launch at the rate, 1.5 × as long as the store needs to split to it at the "
                  f"unfavourable end of the band + 10 min: throttled share over its last quarter ≤ {limit} at every "
                  "point of the parameter band",
        "ramp": f"the ramp to the target and {HOLD_S / 60:g} min there: throttled share of its requests ≤ {limit} "
                f"at every point of the band, and no 10-s step above {fmt.percent(PEAK_OK_MAX)}",
        "sustainable": "the highest constant rate passing the steady check, per band end (low: every point, mid: "
                       f"the mid point, high: the favourable corner); null: none below {PROBE_FACTOR:g} × the target",
    }


def plan_run(run: Run, *, target: float | None = None, cell: str | None = None, throttle: float = 0.01,
             nodes: int | None = None, storage: str | None = None, params: Path | None = None,
             prices: Prices | None = None, location: str | None = None, samples: int | None = None) -> LaunchPlan:
    """Plan every cell of a loaded run (``keyramp.results._catalog.Run``) at ``target`` ops/s."""
    from keyramp.forecast._launch import cluster_stores  # deferred: start-up cost (the planner and the model)
    from keyramp.forecast._plan_cell import plan_cell  # deferred: start-up cost
    from keyramp.forecast._planner import Planner  # deferred: start-up cost
    from keyramp.forecast._run_designs import run_designs  # deferred: start-up cost

    designs = run_designs(run, cell=cell)
    if (nodes is not None or storage is not None) and not cluster_stores(designs.backends):
        raise UsageError(f"--nodes/--storage apply to stores with nodes (bigtable) only; this run's backends: "
                         f"{', '.join(designs.backends)}")
    launch = designs.launch
    if target is None and launch is None:
        raise UsageError(f"{run.path}: the run's profile has no [launch]; give --target OPS")
    boxes = load_params_file(params, default_boxes()) if params else (launch.boxes() if launch else None)
    if prices is not None:  # an unknown location fails before anything is planned
        for backend in sorted({c.design.backend for c in designs.cells}):
            prices.for_backend(backend).location(location, src=prices.files[-1] if prices.files else "prices")
    peak = float(target) if target is not None else float(launch.peak)  # type: ignore[union-attr]
    plans = []
    for c in designs.cells:
        planner = Planner(c.design, target=peak, throttle=throttle, recorded=c.samples, boxes=boxes,
                          nodes=nodes or (launch.nodes if launch else None),
                          storage=storage or (launch.storage if launch else None), samples=samples)
        plans.append(plan_cell(planner, cell_id=c.cell_id, prices=prices, location=location))
    return LaunchPlan(run=run.run_id, target_ops_per_s=peak,
                      target_from="--target" if target is not None else "the [launch] peak", throttle=throttle,
                      cost_label=prices.label if prices is not None else LABEL, criteria=criteria(throttle),
                      cells={p.cell_id: p for p in plans})


def wants_plan(thresholds: Iterable[Any]) -> bool:
    """Whether ``[thresholds]`` gate on the plan (``plan.*``): only then does a run plan its cells."""
    return any(str(getattr(t, "metric", "")).startswith("plan.") for t in thresholds)


def plan_step(a: FinishedCell) -> None:
    """The run's analysis step after the forecast: adds ``summary["plan"]`` when the profile has a
    ``[launch]`` (unless ``plan = false`` there) or its ``[thresholds]`` gate on the plan (a plan is
    dozens of forecasts: seconds per cell, docs/performance.md)."""
    launch = a.profile.launch
    if launch is None or not a.measured or not (launch.plan or wants_plan(a.profile.thresholds)):
        return
    from keyramp.forecast._forecast import cell_forecaster  # deferred: start-up cost
    from keyramp.forecast._plan_cell import plan_cell  # deferred: start-up cost
    from keyramp.forecast._planner import Planner  # deferred: start-up cost

    forecaster = cell_forecaster(a)  # the forecast step's: its keys and projections, made once
    planner = Planner(forecaster.design, target=launch.peak, nodes=launch.nodes, storage=launch.storage,
                      boxes=launch.boxes(), forecaster=forecaster)
    a.summary.plan = plan_cell(planner, cell_id=a.cell.id, prices=load_prices())
