"""The ``Backend`` seam and the store registry: one package per store, one ``StoreSpec`` each.

``spec_for(name)`` answers everything that differs by store (emulator, drivers, operations,
batch limits, key rules, lint rules, tablet-model defaults, cloud plan text); ``BACKENDS``
and ``EMULATOR_FOR`` are live views of the registry. ``registered(spec)`` adds a store for
the length of a ``with`` block (tests, embedding programs). Each spec owns its tablet-model
parameters (``TabletModel``, boxes of ``ParamRange``s, ``store_params``): the forecast, a layer up,
runs over them. See docs/stores.md.
"""

from __future__ import annotations

from keyramp.backends._base import Backend, QuerySpec, Record, Target
from keyramp.backends._boxes import default_boxes, store_params, tablet_capacity_band
from keyramp.backends._params import ParamRange, StoreParams, TabletModel, load_params_file
from keyramp.backends._registry import (
    BACKENDS,
    DEFAULT_BACKEND,
    EMULATOR_FOR,
    STORES,
    emulator_specs,
    registered,
    spec_for,
    store_names,
)
from keyramp.backends._spec import (
    FEATURES,
    BatchLimits,
    CloudSpec,
    EmulatorSpec,
    InProcessSpec,
    KeyRules,
    Operation,
    PriceSheet,
    StoreSpec,
    WorkloadUserSpec,
)

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "EMULATOR_FOR",
    "FEATURES",
    "STORES",
    "Backend",
    "BatchLimits",
    "CloudSpec",
    "EmulatorSpec",
    "InProcessSpec",
    "KeyRules",
    "Operation",
    "ParamRange",
    "PriceSheet",
    "QuerySpec",
    "Record",
    "StoreParams",
    "StoreSpec",
    "TabletModel",
    "Target",
    "WorkloadUserSpec",
    "default_boxes",
    "emulator_specs",
    "load_params_file",
    "registered",
    "spec_for",
    "store_names",
    "store_params",
    "tablet_capacity_band",
]
