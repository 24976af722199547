"""The per-operation store model: a range-partitioned store, one operation at a time.

The slow, obviously correct reference the fast forecast (``keyramp.forecast``) is checked
against, and the model a proxy in front of an emulator asks about every request (at
capacities ÷ ``scale``, delays ÷ ``time_scale``). docs/keyspace-model.md, "The per-operation
reference model".
"""

from keyramp.storemodel._driver import ReferenceOutcome, reference_run
from keyramp.storemodel._limits import MIN_BURST
from keyramp.storemodel._model import WINDOW_BUCKETS, StoreModel, resolve_params
from keyramp.storemodel._types import CAUSES, OP_KINDS, Access, Decision, ModelParams, ModelState, StoreOp

__all__ = [
    "CAUSES",
    "MIN_BURST",
    "OP_KINDS",
    "WINDOW_BUCKETS",
    "Access",
    "Decision",
    "ModelParams",
    "ModelState",
    "ReferenceOutcome",
    "StoreModel",
    "StoreOp",
    "reference_run",
    "resolve_params",
]
