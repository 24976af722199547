"""The launch forecast: a cell's key pattern projected to the launch traffic, with honest uncertainty.

The emulators are single-node stores: they never split or throttle, so what a launch
would do to a range-partitioned store is *modelled* from the recorded key stream. Every
parameter is a range with its source (``_stores``), and every figure a band over those
ranges (``modelled: true``). See docs/keyspace-model.md.
"""

from __future__ import annotations

from keyramp.forecast._forecast import forecast_cell, forecast_run_cell, forecast_step
from keyramp.forecast._launch import Launch, parse_launch
from keyramp.forecast._params import POINTS, ParamRange, StoreParams, load_params_file
from keyramp.forecast._stores import SOURCES, STORES, store_params, tablet_capacity_band

__all__ = [
    "Launch",
    "POINTS",
    "SOURCES",
    "STORES",
    "ParamRange",
    "StoreParams",
    "forecast_cell",
    "forecast_run_cell",
    "forecast_step",
    "load_params_file",
    "parse_launch",
    "store_params",
    "tablet_capacity_band",
]
