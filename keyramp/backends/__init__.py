"""The ``Backend`` seam and the store registry: one package per store, one ``StoreSpec`` each.

``spec_for(name)`` answers everything that differs by store (emulator, drivers, operations,
batch limits, key rules, lint rules, tablet-model defaults, cloud budget text); ``BACKENDS``
and ``EMULATOR_FOR`` are live views of the registry. ``registered(spec)`` adds a store for
the length of a ``with`` block (tests, embedding programs). Each spec owns its tablet-model
parameters (``TabletModel``, boxes of ``ParamRange``s, ``store_params``): the forecast, a layer up,
runs over them. See docs/stores.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from keyramp.backends._boxes import model_of, store_key
    from keyramp.backends._capture import Capture, Decoder
    from keyramp.backends._errors import classify, raised_by_workload
    from keyramp.backends._fidelity import DecodeOptions, ModelTypes, Rpc, Throttle
    from keyramp.backends._params import param_name


if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
