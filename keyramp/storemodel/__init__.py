"""The per-operation store model: a range-partitioned store, one operation at a time.

The slow, obviously correct reference the fast forecast (``keyramp.forecast``) is checked
against, and the model a proxy in front of an emulator asks about every request (at
capacities ÷ ``scale``, delays ÷ ``time_scale``). docs/keyspace-model.md, "The per-operation
reference model".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keyramp.storemodel._driver import ReferenceOutcome, reference_run
from keyramp.storemodel._limits import MIN_BURST
from keyramp.storemodel._model import WINDOW_BUCKETS, StoreModel, resolve_params
from keyramp.storemodel._types import CAUSES, OP_KINDS, Access, Decision, ModelParams, ModelState, StoreOp

if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
