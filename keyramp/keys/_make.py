"""``make_strategy``: a key strategy by profile name, or a key template compiled from one line.

Apart from the strategies (``_strategies``) and the template compiler (``_template``, which
builds on them), so both are imported here at the top and neither imports the other back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keyramp.backends import spec_for
from keyramp.core import UnsupportedOperation, UsageError
from keyramp.keys._base import KeyStrategy, refusal
from keyramp.keys._strategies import STRATEGIES
from keyramp.keys._template import TemplateStrategy, looks_like_template
from keyramp.keys._template_syntax import TemplateError

__all__ = ["make_strategy"]


def _params_for(name: str, cls: type[KeyStrategy], params: Mapping[str, Any]) -> dict[str, Any]:
    """Flat params known to ``cls`` plus its own sub-table; a typo known to no strategy fails."""
    known = set(getattr(cls, "defaults", {}))
    every = {p for c in STRATEGIES.values() for p in getattr(c, "defaults", {})}
    chosen: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, Mapping):
            if key not in STRATEGIES and not looks_like_template(key):
                raise UsageError(f"keys.params.{key}: not a strategy name (one of: {', '.join(STRATEGIES)}) "
                                 "nor a key template")
            continue
        if key not in every:
            raise UsageError(f"keys.params: unknown param '{key}' (known: {', '.join(sorted(every))})")
        if key in known:
            chosen[key] = value
    own = params.get(name)
    if isinstance(own, Mapping):
        chosen.update(own)  # the strategy's constructor rejects unknown names
    return chosen


def make_strategy(
    name: str, *, seed: int = 0, params: Mapping[str, Any] | None = None, backend: str | None = None
) -> KeyStrategy:
    """Build a strategy by profile name, or compile ``name`` as a key template (``shard(8)#timestamp``);
    ``UsageError`` for an unknown name, a template that does not parse, bad params or backend."""
    if backend is not None:
        store = spec_for(backend)  # UsageError for an unknown backend
    cls = STRATEGIES.get(name)
    if cls is None:
        try:
            return TemplateStrategy(name, seed=seed, params=_params_for(name, TemplateStrategy, params or {}))
        except TemplateError as exc:
            if looks_like_template(name):
                raise
            raise UsageError(f"unknown key strategy '{name}' (one of: {', '.join(STRATEGIES)}) "
                             f"and not a key template: {exc}") from None
    if backend is not None:
        why = refusal(cls, store)
        if why is not None:
            raise UnsupportedOperation(f"{name}: {why}")
    return cls(seed=seed, params=_params_for(name, cls, params or {}))
