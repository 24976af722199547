"""``[acknowledge]``: lint findings a profile accepts, each rule with its reason.

Lint holds Google's general figures (a new key range at ≤ 500 ops/s, 500 writes/s an append
point …) against a plan. Where there is evidence that a design survives a load the rule
would flag (``keyramp plan --write-profile`` writes the model's: docs/plan.md), the profile
says so, rule by rule, and lint reports those findings as *acknowledged*, with the reason,
instead of failing. Only a rule lint checks, on a store it applies to, can be acknowledged:
anything else is a field that does not apply (exit 2).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from keyramp.backends import STORES, spec_for
from keyramp.core import UsageError
from keyramp.profile._checks import Check, Where
from keyramp.profile._lint_schedule import SCHEDULE_RULE

__all__ = ["Acknowledge", "applies", "lint_rules"]

#: Rules lint checks on every store (the key stream's shape, the key's validity).
_EVERY_STORE = frozenset({"BP-KEY-1", "BP-KEY-10", "BP-SHARD-1", SCHEDULE_RULE})
#: Rules lint checks on the stores with a feature (``keyramp.backends.FEATURES``).
_BY_FEATURE = {"BP-KEY-2": "server_allocated_keys", "BP-IDX-1": "secondary_indexes"}


@functools.cache
def lint_rules() -> tuple[str, ...]:
    """Every rule id lint reports: the general ones and each store's own (``StoreSpec.rules``)."""
    own = {rule for spec in STORES.specs() for rule in spec.rules}
    return tuple(sorted(_EVERY_STORE | _BY_FEATURE.keys() | own))


def applies(rule: str, backend: str) -> bool:
    """Whether lint checks ``rule`` on ``backend``'s cells."""
    spec = spec_for(backend)
    if rule in _BY_FEATURE:
        return spec.has(_BY_FEATURE[rule])
    return rule in _EVERY_STORE or rule in spec.rules


@dataclass(frozen=True)
class Acknowledge(Check):
    """A table of rule id -> reason (non-empty): each a rule lint checks on one of the profile's stores."""

    bad: ClassVar = (5, {"BP-NOPE-1": "why"}, {"BP-RAMP-1": ""}, {"BP-RAMP-1": 3})

    def resolve(self, value: Any, at: Where) -> Any:
        if not isinstance(value, dict):
            raise UsageError(f"{at.src}: '{at.name}' must be a table ([{at.name}]) of rule id = \"reason\"")
        backends = at.ctx.resolved.get("backend", ())
        for rule, reason in value.items():
            where = f"{at.path}.{rule}"
            if rule not in lint_rules():
                raise UsageError(f"{where}: not a rule keyramp lint checks (one of: {', '.join(lint_rules())})")
            if not any(applies(rule, b) for b in backends):
                stores = [name for name in STORES.names() if applies(rule, name)]
                raise UsageError(f"{where}: does not apply to {', '.join(backends)} (lint checks it on "
                                 f"{', '.join(stores)})")
            if not isinstance(reason, str) or not reason.strip():
                raise UsageError(f"{where}: the reason must be a non-empty string (why the finding is safe here)")
        return dict(value)

    def typed(self, value: Any) -> Any:
        return dict(value) if isinstance(value, Mapping) else {}

    def describe(self) -> str:
        return "table: rule id = \"reason\" (a rule lint checks on one of the profile's stores)"
