"""Request distributions (YCSB ``CoreWorkload``): which existing record an operation hits.

``next_index(n)`` picks an index in ``[0, n)`` where ``n`` grows while inserts run
concurrently; the zipfian generators extend their zeta sum incrementally (YCSB does the
same) instead of recomputing it, so a growing ``n`` costs O(new items), not O(n).
Each instance owns a seeded ``random.Random``: deterministic per seed, no shared state.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from keyramp.core import UsageError
from keyramp.keys._base import Distribution, checked_params

__all__ = [
    "DISTRIBUTIONS",
    "SCRAMBLED_ITEM_COUNT",
    "ZIPFIAN_CONSTANT",
    "Hotspot",
    "Latest",
    "Uniform",
    "Zipfian",
    "fnv_hash64",
    "hottest_share",
    "make_distribution",
    "zeta",
]

#: YCSB ``ZipfianGenerator.ZIPFIAN_CONSTANT``.
ZIPFIAN_CONSTANT: Final = 0.99
#: YCSB ``ScrambledZipfianGenerator.ITEM_COUNT``: ranks are drawn over this many items,
#: hashed, then folded onto ``[0, n)`` — so ``n`` may grow without any zeta update.
SCRAMBLED_ITEM_COUNT: Final = 10_000_000_000
_M64: Final = (1 << 64) - 1
_EXACT_TERMS: Final = 1_000_000  # beyond this many terms, Euler–Maclaurin is exact to ~1e-12
_CHUNK: Final = 1_000_000


def _sum_exact(a: int, b: int, theta: float) -> float:
    """sum_{i=a+1}^{b} i^-theta, exactly (numpy in chunks for long ranges)."""
    if b - a <= 64:
        return math.fsum(i**-theta for i in range(a + 1, b + 1))
    import numpy as np  # deferred: start-up cost (numpy: every command loads profiles and their keys)

    total = 0.0
    for lo in range(a + 1, b + 1, _CHUNK):
        hi = min(b, lo + _CHUNK - 1)
        total += float(np.sum(np.arange(lo, hi + 1, dtype=np.float64) ** -theta))
    return total


def _sum_tail(a: int, b: int, theta: float) -> float:
    """sum_{i=a+1}^{b} i^-theta by Euler–Maclaurin (accurate for a ≥ 10^3)."""

    def f(x: float) -> float:
        return x**-theta

    def d1(x: float) -> float:
        return -theta * x ** (-theta - 1)

    def d3(x: float) -> float:
        return -theta * (theta + 1) * (theta + 2) * x ** (-theta - 3)

    integral = (b ** (1 - theta) - a ** (1 - theta)) / (1 - theta)
    # sum over [a, b] minus f(a) gives (a, b].
    return integral + (f(a) + f(b)) / 2 + (d1(b) - d1(a)) / 12 - (d3(b) - d3(a)) / 720 - f(a)


def zeta(n: int, theta: float, *, start: int = 0, initial: float = 0.0) -> float:
    """``initial + sum_{i=start+1}^{n} i^-theta`` (YCSB's incremental ``zeta``)."""
    if n <= start:
        return initial
    if n - start <= _EXACT_TERMS or start + _EXACT_TERMS >= n:
        return initial + _sum_exact(start, n, theta)
    mid = max(start + _EXACT_TERMS, _EXACT_TERMS)
    return initial + _sum_exact(start, mid, theta) + _sum_tail(mid, n, theta)


def fnv_hash64(value: int) -> int:
    """YCSB ``Utils.fnvhash64``: FNV-1a over the 8 bytes of a long, then ``Math.abs``."""
    h = 0xCBF29CE484222325
    for _ in range(8):
        h = ((h ^ (value & 0xFF)) * 1099511628211) & _M64
        value >>= 8
    return (1 << 64) - h if h >> 63 else h


class _Dist(Distribution):
    defaults: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self.params = checked_params(self.name, self.params, self.defaults, what="distribution param")
        self.rng = random.Random(seed)

    def _fraction(
        self, name: str, *, low: float, high: float, open_low: bool = False, open_high: bool = False
    ) -> float:
        value = self.params[name]
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok:
            ok = (value > low if open_low else value >= low) and (value < high if open_high else value <= high)
        if not ok:
            lb, rb = "(" if open_low else "[", ")" if open_high else "]"
            raise UsageError(f"{self.name}: param {name} must be in {lb}{low:g}, {high:g}{rb}, got {value!r}")
        return float(value)

    @staticmethod
    def _check_n(n: int) -> None:
        if n < 1:
            raise ValueError(f"next_index needs n >= 1 records, got {n}")


def _excess(count: Any, total: Any, limit: float) -> Any:
    """``count`` records sharing ``total`` picks/s evenly: what a per-record ``limit`` refuses."""
    import numpy as np  # deferred: start-up cost (numpy)

    return np.maximum(0.0, total - count * limit)


class Uniform(_Dist):
    name = "uniform"

    def next_index(self, n: int) -> int:
        self._check_n(n)
        return self.rng.randrange(n)

    def hottest(self, n: int) -> float:
        return 1.0 / max(1, n)

    def over_limit(self, n: Any, picks: Any, limit: float) -> Any:
        return _excess(n, picks, limit)


class _ZipfRanks:
    """YCSB ``ZipfianGenerator``: rank 0 is the most popular; zeta grows with the item count."""

    def __init__(self, theta: float, rng: random.Random, items: int = 0) -> None:
        self.theta = theta
        self.rng = rng
        self.alpha = 1.0 / (1.0 - theta)
        self.zeta2 = 1.0 + 0.5**theta
        self.half_pow = 0.5**theta
        self.count = 0
        self.zetan = 0.0
        self.eta = 0.0
        if items:
            self.resize(items)

    def resize(self, items: int) -> None:
        if items > self.count:
            self.zetan = zeta(items, self.theta, start=self.count, initial=self.zetan)
        else:  # shrinking (deletes): recompute, as YCSB does when allowed
            self.zetan = zeta(items, self.theta)
        self.count = items
        if items >= 3:  # with 1 or 2 items the first two branches of rank() cover every u
            self.eta = (1 - (2.0 / items) ** (1 - self.theta)) / (1 - self.zeta2 / self.zetan)

    def rank(self, items: int) -> int:
        if items != self.count:
            self.resize(items)
        return self.rank_at(self.rng.random())

    def rank_at(self, u: float) -> int:
        """The rank for a uniform ``u`` in ``[0, 1)`` over the current item count (a pure
        function: key templates draw ranks from a hash of the insert index)."""
        items = self.count
        uz = u * self.zetan
        if uz < 1.0 or items == 1:
            return 0
        if uz < 1.0 + self.half_pow:
            return 1
        return min(items - 1, int(items * (self.eta * u - self.eta + 1) ** self.alpha))


class Zipfian(_Dist):
    """YCSB zipfian (constant 0.99); ``scrambled = true`` (default) hashes the rank so the hot
    items are scattered over the key space (``ScrambledZipfianGenerator``) instead of being
    the first-inserted records."""

    name = "zipfian"
    defaults: ClassVar[Mapping[str, Any]] = {"scrambled": True, "constant": ZIPFIAN_CONSTANT}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        scrambled = self.params["scrambled"]
        if not isinstance(scrambled, bool):
            raise UsageError(f"zipfian: param scrambled must be true or false, got {scrambled!r}")
        self.scrambled = scrambled
        self.theta = self._fraction("constant", low=0.0, high=1.0, open_low=True, open_high=True)
        # Scrambled ranks are over a fixed huge item count: one zeta, computed once.
        self._ranks = _ZipfRanks(self.theta, self.rng, SCRAMBLED_ITEM_COUNT if scrambled else 0)

    def next_index(self, n: int) -> int:
        self._check_n(n)
        if self.scrambled:
            return fnv_hash64(self._ranks.rank(SCRAMBLED_ITEM_COUNT)) % n
        return self._ranks.rank(n)

    def hottest(self, n: int) -> float:
        n = max(1, n)
        if not self.scrambled:
            return 1.0 / zeta(n, self.theta)
        # Ranks over 10^10 items hashed onto n records: the top rank, and an even share of the rest.
        return min(1.0, 1.0 / self._ranks.zetan + 1.0 / n)

    def over_limit(self, n: Any, picks: Any, limit: float) -> Any:
        if not self.scrambled:
            return _zipf_excess(n, picks, limit, self.theta, None)
        return _zipf_excess(n, picks, limit, self.theta, self._ranks.zetan)


class Latest(_Dist):
    """YCSB ``SkewedLatestGenerator``: zipfian over recency, the newest record is the hottest."""

    name = "latest"
    defaults: ClassVar[Mapping[str, Any]] = {"constant": ZIPFIAN_CONSTANT}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self.theta = self._fraction("constant", low=0.0, high=1.0, open_low=True, open_high=True)
        self._ranks = _ZipfRanks(self.theta, self.rng)

    def next_index(self, n: int) -> int:
        self._check_n(n)
        return n - 1 - self._ranks.rank(n)

    def hottest(self, n: int) -> float:
        return 1.0 / zeta(max(1, n), self.theta)

    def over_limit(self, n: Any, picks: Any, limit: float) -> Any:
        return _zipf_excess(n, picks, limit, self.theta, None)


class Hotspot(_Dist):
    """YCSB ``HotspotIntegerGenerator``: ``hot_ops_fraction`` of operations go uniformly to the
    first ``hot_data_fraction`` of the records, the rest uniformly to the others."""

    name = "hotspot"
    defaults: ClassVar[Mapping[str, Any]] = {"hot_ops_fraction": 0.8, "hot_data_fraction": 0.2}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self.hot_ops = self._fraction("hot_ops_fraction", low=0.0, high=1.0)
        self.hot_data = self._fraction("hot_data_fraction", low=0.0, high=1.0, open_low=True)

    def hot_count(self, n: int) -> int:
        return min(n, max(1, int(n * self.hot_data)))

    def next_index(self, n: int) -> int:
        self._check_n(n)
        hot = self.hot_count(n)
        if hot >= n or self.rng.random() < self.hot_ops:
            return self.rng.randrange(hot)
        return hot + self.rng.randrange(n - hot)

    def hottest(self, n: int) -> float:
        n = max(1, n)
        hot = self.hot_count(n)
        cold_share = (1.0 - self.hot_ops) / (n - hot) if n > hot else 0.0
        hot_share = (self.hot_ops if n > hot else 1.0) / hot
        return max(hot_share, cold_share)

    def over_limit(self, n: Any, picks: Any, limit: float) -> Any:
        import numpy as np  # deferred: start-up cost (numpy)

        n = np.maximum(1, np.asarray(n, dtype=np.float64))
        hot = np.minimum(n, np.maximum(1.0, np.floor(n * self.hot_data)))
        split = _excess(hot, picks * self.hot_ops, limit) + _excess(n - hot, picks * (1.0 - self.hot_ops), limit)
        return np.where(hot >= n, _excess(n, picks, limit), split)


DISTRIBUTIONS: dict[str, type[Distribution]] = {
    cls.name: cls for cls in (Uniform, Zipfian, Latest, Hotspot)
}


def make_distribution(name: str, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> Distribution:
    """Build a distribution by profile name; ``UsageError`` for an unknown name or bad params."""
    cls = DISTRIBUTIONS.get(name)
    if cls is None:
        raise UsageError(f"unknown distribution '{name}' (one of: {', '.join(DISTRIBUTIONS)})")
    return cls(seed=seed, params=params)


def hottest_share(name: str, n: int, params: Mapping[str, Any] | None = None) -> float:
    """Theoretical share of operations that hit the single hottest record out of ``n``
    (lint uses it to plan per-entity write rates, BP-RATE-1)."""
    return make_distribution(name, params=params).hottest(max(1, n))


#: Terms of sum k^-theta kept as a table (beyond: Euler–Maclaurin, exact to ~1e-12 there).
_TABLE_TERMS: Final = 1 << 18
_TABLES: dict[float, Any] = {}


def _power_sums(m: Any, theta: float) -> Any:
    """``sum_{k=1}^{m} k^-theta`` for an array of counts ``m ≥ 0`` (vectorised)."""
    import numpy as np  # deferred: start-up cost (numpy)

    table = _TABLES.get(theta)
    if table is None:
        table = _TABLES[theta] = np.concatenate([[0.0], np.cumsum(np.arange(1, _TABLE_TERMS + 1.0) ** -theta)])
    m = np.asarray(m, dtype=np.float64)
    inside = table[np.clip(m, 0, _TABLE_TERMS).astype(np.int64)]
    a, b = float(_TABLE_TERMS), np.maximum(m, _TABLE_TERMS)
    # Euler–Maclaurin over (a, b]: the integral, the end corrections, minus f(a) (the table holds it).
    tail = ((b ** (1 - theta) - a ** (1 - theta)) / (1 - theta) + (a**-theta + b**-theta) / 2
            - theta * (b ** (-theta - 1) - a ** (-theta - 1)) / 12 - a**-theta)
    return np.where(m > _TABLE_TERMS, table[-1] + tail, inside)


def _zipf_excess(n: Any, picks: Any, limit: float, theta: float, zetan: float | None) -> Any:
    """``over_limit`` of a zipfian over ``n`` records (rank k takes k^-theta / zeta(n)); with ``zetan``
    the ranks are over that many items, hashed onto the n records (scrambled): each record also takes
    an even share of the ranks beyond n."""
    import numpy as np  # deferred: start-up cost (numpy)

    n = np.maximum(1.0, np.floor(np.asarray(n, dtype=np.float64)))
    picks = np.asarray(picks, dtype=np.float64)
    z = _power_sums(n, theta) if zetan is None else np.full_like(n, zetan)
    rest = np.zeros_like(n) if zetan is None else np.maximum(0.0, 1.0 - _power_sums(n, theta) / zetan) / n
    # Records of rank k take picks · (k^-theta / z + rest): over the limit while that exceeds it.
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(picks > 0, limit / np.where(picks > 0, picks, 1.0), np.inf) - rest
        k = np.where(room <= 0, n, np.floor((1.0 / (np.maximum(room, 1e-300) * z)) ** (1.0 / theta)))
    k = np.clip(np.nan_to_num(k, nan=0.0, posinf=0.0), 0.0, n)
    return np.maximum(0.0, picks * (_power_sums(k, theta) / z + k * rest) - k * limit)
