"""What a key design is to Google's rules, read from what the strategy declares once.

A strategy states its traits (``KeyTraits``: monotonic, time first, sequential ids …), the
rules whose fix Google names it as (``fixes``) and any rule it breaks beyond its traits
(``breaks``). Lint, the scenario report, the forecast and the planner ask here; none of them
keeps its own list of strategy names (``tests/keys/test_roles.py`` fails if one does).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Final

from keyramp.core import UsageError
from keyramp.keys._base import KeyStrategy, KeyTraits
from keyramp.keys._make import make_strategy
from keyramp.keys._strategies import STRATEGIES

__all__ = ["ANTI_PATTERN", "BEST_PRACTICE", "KEY_RULES", "fix_strategies", "rule_role", "rule_strategies",
           "shard_template", "strategy_of"]

ANTI_PATTERN: Final = "anti-pattern"
BEST_PRACTICE: Final = "best practice"
#: The key rules a trait makes a design an anti-pattern of (docs/best-practices.md).
_BROKEN_BY: Final[Mapping[str, str]] = {
    "BP-KEY-1": "monotonic",
    "BP-KEY-2": "sequential_id",
    "BP-KEY-3": "monotonic",
    "BP-KEY-5": "time_first",
    "BP-KEY-6": "time_first",
    "BP-KEY-7": "sequential_id",
}
#: Rules that compare key designs (the scenario report shows a cell under them by its role).
KEY_RULES: Final = tuple(sorted({*_BROKEN_BY, *(r for c in STRATEGIES.values() for r in (*c.fixes, *c.breaks))}))


def _role(traits: KeyTraits, fixes: Iterable[str], breaks: Iterable[str], rule: str) -> str | None:
    trait = _BROKEN_BY.get(rule)
    if rule in breaks or (trait is not None and getattr(traits, trait)):
        return ANTI_PATTERN
    return BEST_PRACTICE if rule in fixes else None


def rule_role(strategy: KeyStrategy | type[KeyStrategy], rule: str) -> str | None:
    """``anti-pattern`` or ``best practice`` of ``strategy`` under ``rule``, or None: the design says
    nothing about that rule."""
    return _role(strategy.traits, strategy.fixes, strategy.breaks, rule)


@functools.cache
def strategy_of(name: str) -> KeyStrategy | None:
    """The strategy (or compiled template) a cell's strategy name stands for, default params; None: unknown."""
    try:
        return make_strategy(name)
    except UsageError:
        return None


def rule_strategies(rule: str) -> dict[str, str]:
    """The named strategies with a role under ``rule``: name -> role (registration order)."""
    out = {}
    for name, cls in STRATEGIES.items():
        role = rule_role(cls, rule)
        if role is not None:
            out[name] = role
    return out


def fix_strategies(rules: Iterable[str], *, readable: bool = False, python: bool = False) -> list[str]:
    """The named strategies Google names as the fix of any of ``rules`` (a store's ``hotspot_fix``),
    best first: in the order of ``rules``, then of registration. ``readable``: only readable keys
    (a store that keeps BP-KEY-8); ``python``: never ``server_allocated`` (a Python workload chooses
    its own keys)."""
    out: list[str] = []
    for rule in rules:
        for name, cls in STRATEGIES.items():
            if rule_role(cls, rule) != BEST_PRACTICE or name in out:
                continue
            if (readable and not cls.traits.readable) or (python and cls.server_allocated):
                continue
            out.append(name)
    return out


def shard_template(strategy: str, shards: int) -> str | None:
    """``shard(N)#<the design's key>`` for a design with append points, or None (no such template)."""
    made = strategy_of(strategy)
    base = None if made is None else made.shard_base
    if base is None:
        return None
    template = f"shard({shards})#{base}"
    sharded = strategy_of(template)
    return template if sharded is not None and sharded.append_points() else None
