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

if TYPE_CHECKING:
    from keyramp.forecast._calibrate import DEFAULT_RATES, write_suite
    from keyramp.forecast._cost import CellCost, cell_cost
    from keyramp.forecast._design import CellDesign
    from keyramp.forecast._fit import fit, traces_from_runs, write_params_file
    from keyramp.forecast._forecast import Forecaster, forecast, forecast_cell, forecast_step
    from keyramp.forecast._launch import Launch, parse_launch
    from keyramp.forecast._plan_cell import plan_cell
    from keyramp.forecast._plan_profile import PLACEHOLDER_PROJECT, write_rehearsal
    from keyramp.forecast._plan_run import plan_run, plan_step
    from keyramp.forecast._plan_text import faster_short, faster_text, plan_text, ramp_text
    from keyramp.forecast._plan_verify import CHECKS_WHAT, verify_scale, verify_variants, write_store_rehearsal
    from keyramp.forecast._planner import Planner
    from keyramp.forecast._prices import Prices, as_of_text, load_prices
    from keyramp.forecast._reforecast import format_table, reforecast
    from keyramp.forecast._result import Forecast
    from keyramp.forecast._run_cost import budget_costs
    from keyramp.forecast._text import (
        NO_THROTTLING,
        band_text,
        figure_text,
        forecast_line,
        forecast_short,
        keys_note,
        throttles_nothing,
    )
    from keyramp.forecast._verdict import VERDICT_RANK

if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
