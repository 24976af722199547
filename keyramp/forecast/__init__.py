"""The launch forecast: a cell's key pattern projected to the launch traffic, with honest uncertainty.

The emulators are single-node stores: they never split or throttle, so what a launch
would do to a range-partitioned store is *modelled* from the recorded key stream. Every
parameter is a range with its source (declared in each store's spec,
``keyramp/backends/<store>/_spec.py``), and every figure a band over those ranges
(``modelled: true``). See docs/keyspace-model.md. What a launch, its ramp or a cloud run
costs at list prices: ``cell_cost`` over ``load_prices()``; what to do instead (the fastest safe ramp,
the shards or nodes a design needs): ``Planner``, ``plan_cell``, ``plan_run`` (docs/plan.md).

The parameter boxes the model runs over are the stores' own (``keyramp.backends``: ``StoreParams``,
``store_params``). Names load on first use: the model pulls in numpy and the key-space analysis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keyramp._lazy import lazy_exports

__all__ = [
    "CellCost",
    "CellDesign",
    "CellPlan",
    "Forecast",
    "Forecaster",
    "Launch",
    "Planner",
    "Prices",
    "RunPlan",
    "cell_cost",
    "forecast",
    "forecast_cell",
    "forecast_run_cell",
    "forecast_step",
    "load_prices",
    "parse_launch",
    "plan_cell",
    "plan_run",
    "plan_step",
]

_LAZY = {
    "CellDesign": "keyramp.forecast._design",
    "Forecast": "keyramp.forecast._result",
    "Forecaster": "keyramp.forecast._forecast",
    "forecast": "keyramp.forecast._forecast",
    "CellCost": "keyramp.forecast._cost",
    "cell_cost": "keyramp.forecast._cost",
    "Prices": "keyramp.forecast._prices",
    "load_prices": "keyramp.forecast._prices",
    "Launch": "keyramp.forecast._launch",
    "parse_launch": "keyramp.forecast._launch",
    "forecast_cell": "keyramp.forecast._forecast",
    "forecast_run_cell": "keyramp.forecast._forecast",
    "forecast_step": "keyramp.forecast._forecast",
    "CellPlan": "keyramp.results._plan_doc",
    "Planner": "keyramp.forecast._planner",
    "plan_cell": "keyramp.forecast._plan_cell",
    "RunPlan": "keyramp.results._plan_doc",
    "plan_run": "keyramp.forecast._plan_run",
    "plan_step": "keyramp.forecast._plan_run",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY, __all__)


if TYPE_CHECKING:
    from keyramp.forecast._cost import CellCost, cell_cost
    from keyramp.forecast._design import CellDesign
    from keyramp.forecast._forecast import Forecaster, forecast, forecast_cell, forecast_run_cell, forecast_step
    from keyramp.forecast._launch import Launch, parse_launch
    from keyramp.forecast._plan_cell import plan_cell
    from keyramp.forecast._plan_run import plan_run, plan_step
    from keyramp.forecast._planner import Planner
    from keyramp.forecast._prices import Prices, load_prices
    from keyramp.forecast._result import Forecast
    from keyramp.results._plan_doc import CellPlan, RunPlan
