"""The ``KeyStrategy`` and ``Distribution`` seams (YCSB ``generator/`` style).

A strategy is a *pure function of an insert index*: ``key(i)`` for ``i = 0, 1, 2 …``.
The runner hands out indexes from one counter per cell (interleaved across worker
processes), so keys are deterministic for a seed, unique, and an existing key can be
found again from its index (reads/updates pick an index through a ``Distribution``).
Strategies whose key depends on time use a virtual clock derived from the index and
seed, never the wall clock, so they stay deterministic.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from keyramp.backends import STORES, StoreSpec
from keyramp.core import Key, UsageError

__all__ = ["Distribution", "KeyStrategy", "KeyTraits", "checked_params", "refusal"]


def checked_params(
    owner: str, params: Mapping[str, Any], defaults: Mapping[str, Any], *, what: str = "param"
) -> dict[str, Any]:
    """``defaults`` overlaid with ``params``; an unknown name is a one-line ``UsageError``."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        known = ", ".join(sorted(defaults)) or "none"
        raise UsageError(f"{owner}: unknown {what} '{unknown[0]}' (known: {known})")
    return {**defaults, **params}


@dataclass(frozen=True, kw_only=True)
class KeyTraits:
    """What a strategy claims about itself, declared once: lint, the scenario report, the forecast
    and the planner read these (never lists of strategy names); property tests hold them to it."""

    #: Every new key lands next to the previous one: one place in the key range takes all inserts
    #: (``1, 2, 3``, timestamps, ``Customer1, Customer2 …`` whose digits roll over, reverse timestamps
    #: at the start). The one definition of "monotonic" (BP-KEY-1).
    monotonic: bool
    spreads: bool  # keys land roughly uniformly over the key space
    readable: bool  # a human can read the key (BP-KEY-8)
    #: The key starts with a timestamp: every current write lands at the end of the range (BP-KEY-5).
    time_first: bool = False
    #: A growing time part (not reversed): a scan for the newest rows reads the end (BP-KEY-6).
    has_time: bool = False
    #: Numeric ids in insert order (BP-KEY-2, BP-KEY-7).
    sequential_id: bool = False
    #: The places new keys land move as time passes (time buckets lead them, BP-SHARD-1).
    moving: bool = False


class _SupportedBackends:
    """``Strategy.backends``: the registered stores that can serve the strategy (their specs say)."""

    def __get__(self, obj: object, owner: type[KeyStrategy]) -> frozenset[str]:
        return frozenset(s.name for s in STORES.specs() if refusal(owner, s) is None)


class KeyStrategy(ABC):
    name: ClassVar[str]
    traits: ClassVar[KeyTraits]
    #: Rules whose fix Google names this design as (``keys.rule_role``: "best practice" there).
    fixes: ClassVar[frozenset[str]] = frozenset()
    #: Rules this design is a named anti-pattern of beyond what its traits say (``keys.rule_role``).
    breaks: ClassVar[frozenset[str]] = frozenset()
    #: The key part a shard prefix goes in front of to spread this design's append points
    #: (``shard(N)#<base>``, ``keys.shard_template``); None: no such template.
    shard_base: ClassVar[str | None] = None
    #: Backends this strategy produces valid keys for.
    backends: ClassVar[_SupportedBackends] = _SupportedBackends()
    #: ``key()`` returns ``None``: the store allocates the id on insert.
    server_allocated: ClassVar[bool] = False
    #: Virtual clock (insert index -> ms) of time-based strategies, ``None`` for the others;
    #: records take their ``created`` value from it so it agrees with the keys.
    clock: Callable[[int], int] | None = None

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        self.seed = seed
        self.params = dict(params or {})

    @abstractmethod
    def key(self, index: int) -> Key:
        """The key of the ``index``-th inserted record (``index >= 0``)."""

    def append_points(self) -> int | None:
        """How many places new keys land at, each past every earlier key of its own part of the
        range: 1 for monotonic keys, n for an n-way prefix in front of a growing part. None: keys
        land spread, or the places move (time buckets). The launch forecast treats that many
        append points exactly instead of sampling them."""
        return 1 if self.traits.monotonic else None


class Distribution(ABC):
    """Which existing record an operation hits: an index in ``[0, n)``."""

    name: ClassVar[str]

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        self.seed = seed
        self.params = dict(params or {})

    @abstractmethod
    def next_index(self, n: int) -> int:
        """An index in ``[0, n)``; ``n >= 1`` is the number of records inserted so far."""

    @abstractmethod
    def hottest(self, n: int) -> float:
        """The share of picks the single hottest of ``n`` records takes (its shape, declared once)."""

    @abstractmethod
    def over_limit(self, n: Any, picks: Any, limit: float) -> Any:
        """Picks/s beyond ``limit`` per record, summed over the records: ``Σ_k max(0, picks·p_k(n) −
        limit)`` for ``n`` records picked ``picks`` times a second (numpy arrays of equal shape): what a
        per-key limit refuses when writes pick records this way (the launch forecast's per-key load)."""


def refusal(cls: type[KeyStrategy], spec: StoreSpec) -> str | None:
    """Why the store of ``spec`` cannot serve strategy ``cls`` (one line), or None if it can."""
    if cls.server_allocated and not spec.has("server_allocated_keys"):
        return spec.why_not("server_allocated_keys")
    return spec.keys.unsupported_strategies.get(cls.name)
