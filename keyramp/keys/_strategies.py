"""Key strategies: pure functions ``key(index)`` of the insert index (YCSB ``buildKeyName`` style).

Every strategy is deterministic for a seed, unique over indexes, and cheap (a few µs:
one emulator operation costs 300–700 µs of client CPU, keyramp must stay well below).
Time-based strategies read a *virtual clock* (``start_ms + index * interval_ms``), never
the wall clock, so a run can be reproduced and an existing key found again from its index.

Params come from a profile's ``[keys.params]`` table. Flat params apply to every strategy
that knows them; a sub-table named after a strategy (``[keys.params.sharded]``) applies to
that strategy only — so a matrix of strategies can share one profile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final

from keyramp.backends import spec_for
from keyramp.core import Key, UsageError
from keyramp.keys._base import KeyStrategy, KeyTraits, checked_params

__all__ = [
    "LONG_MAX",
    "STRATEGIES",
    "Domain",
    "FieldPromotion",
    "HashedPrefix",
    "PaddedSequential",
    "PrefixedSequential",
    "RandomUuid",
    "ReverseDomain",
    "ReverseTimestamp",
    "ReversedId",
    "Sequential",
    "ServerAllocated",
    "Sharded",
    "TimeBucketShard",
    "TimestampFirst",
    "TimestampOnly",
    "key_problem",
    "mix64",
    "virtual_clock",
]

#: Java ``Long.MAX_VALUE``: Bigtable's documented reverse-timestamp base (BP-KEY-6).
LONG_MAX: Final = 9_223_372_036_854_775_807
_M64: Final = (1 << 64) - 1
#: 2023-11-14T22:13:20Z: a fixed virtual-clock origin so keys do not depend on today.
_DEFAULT_START_MS: Final = 1_700_000_000_000


def mix64(x: int) -> int:
    """splitmix64's finalizer: a bijection of 64-bit ints that scatters neighbouring inputs."""
    z = (x + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def virtual_clock(start_ms: int = _DEFAULT_START_MS, interval_ms: float = 1.0) -> Callable[[int], int]:
    """The ``index``-th insert happens at ``start_ms + index * interval_ms`` (virtual ms)."""

    def clock(index: int) -> int:
        return start_ms + int(index * interval_ms)

    return clock


def key_problem(key: Key | None, backend: str) -> str | None:
    """Why ``key`` is not a valid key on ``backend`` (BP-KEY-10), or ``None`` if it is: the
    store's ``KeyRules`` (keyramp/backends/<store>/_spec.py) decide."""
    return spec_for(backend).keys.problem(key, backend)


class _Strategy(KeyStrategy):
    """Shared param checking: ``defaults`` lists every accepted param and its default."""

    defaults: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self.params = checked_params(self.name, self.params, self.defaults)

    def _int(self, name: str, *, minimum: int, maximum: int | None = None) -> int:
        value = self.params[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise UsageError(f"{self.name}: param {name} must be an integer ≥ {minimum}, got {value!r}")
        if maximum is not None and value > maximum:
            raise UsageError(f"{self.name}: param {name} must be ≤ {maximum}, got {value!r}")
        return value

    def _float(self, name: str, *, minimum: float) -> float:
        value = self.params[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= minimum:
            raise UsageError(f"{self.name}: param {name} must be a number ≥ {minimum:g}, got {value!r}")
        return float(value)

    def _str(self, name: str) -> str:
        value = self.params[name]
        if not isinstance(value, str):
            raise UsageError(f"{self.name}: param {name} must be a string, got {value!r}")
        return value


class _Clocked(_Strategy):
    """A virtual clock: the ``index``-th insert happens at ``start_ms + index * interval_ms``."""

    defaults: ClassVar[Mapping[str, Any]] = {"start_ms": _DEFAULT_START_MS, "interval_ms": 1.0}
    #: Whether two inserts in the same millisecond would collide (the key is the timestamp).
    needs_unique_ms: ClassVar[bool] = False

    clock: Callable[[int], int]

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self.start_ms = self._int("start_ms", minimum=0, maximum=9_999_999_999_999)
        self.interval_ms = self._float("interval_ms", minimum=0.0)
        if self.needs_unique_ms and self.interval_ms < 1.0:
            raise UsageError(f"{self.name}: param interval_ms must be ≥ 1 so timestamps stay unique")
        self.clock = virtual_clock(self.start_ms, self.interval_ms)


# -- sequential family (BP-KEY-1 anti-patterns) -------------------------------------------


class Sequential(_Strategy):
    """Integer ids 1, 2, 3 … (numeric Datastore ids; ``str`` elsewhere)."""

    name = "sequential"
    traits = KeyTraits(monotonic=True, spreads=False, readable=True, sequential_id=True)
    shard_base = "seq"

    def key(self, index: int) -> Key:
        return index + 1


class PrefixedSequential(_Strategy):
    """``Customer1``, ``Customer2`` …: monotonic per digit count, *not* in byte order
    (``Customer10`` < ``Customer2``), but every new key still lands next to the previous one."""

    name = "prefixed_sequential"
    # Not increasing in byte order, but each new key lands next to the previous one: monotonic (BP-KEY-1).
    traits = KeyTraits(monotonic=True, spreads=False, readable=True)
    shard_base = "seq"
    defaults: ClassVar[Mapping[str, Any]] = {"prefix": "Customer"}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self.prefix = self._str("prefix")

    def key(self, index: int) -> Key:
        return f"{self.prefix}{index + 1}"


class PaddedSequential(_Strategy):
    """``0000000001`` …: byte order equals numeric order up to ``10**digits - 1``."""

    name = "padded_sequential"
    traits = KeyTraits(monotonic=True, spreads=False, readable=True, sequential_id=True)
    shard_base = "seq"
    defaults: ClassVar[Mapping[str, Any]] = {"digits": 10}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self._fmt = f"{{:0{self._int('digits', minimum=1, maximum=40)}d}}".format

    def key(self, index: int) -> Key:
        return self._fmt(index + 1)


class TimestampOnly(_Clocked):
    """Milliseconds since the epoch, 13 digits: the key *is* the time (BP-KEY-5 anti-pattern)."""

    name = "timestamp_only"
    traits = KeyTraits(monotonic=True, spreads=False, readable=True, time_first=True, has_time=True)
    shard_base = "timestamp"
    needs_unique_ms = True

    def key(self, index: int) -> Key:
        return f"{self.clock(index):013d}"


class TimestampFirst(_Clocked):
    """``<ts>#<id>``: time leads, so all new rows go to the end of the key space."""

    name = "timestamp_first"
    traits = KeyTraits(monotonic=True, spreads=False, readable=True, time_first=True, has_time=True)
    shard_base = "timestamp#seq"

    def key(self, index: int) -> Key:
        return f"{self.clock(index):013d}#{index:010d}"


# -- scattered keys (BP-KEY-2/3) ------------------------------------------------------------


class RandomUuid(_Strategy):
    """uuid4 text from a counter-based RNG (splitmix64 over seed and index): deterministic."""

    name = "random"
    traits = KeyTraits(monotonic=False, spreads=True, readable=False)
    fixes = frozenset({"BP-KEY-1"})

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self._salt_hi = mix64(seed & _M64)
        self._salt_lo = mix64(self._salt_hi)

    def key(self, index: int) -> Key:
        # The high half is a bijection of the index; version/variant bits leave 122 random bits.
        hi = mix64((index ^ self._salt_hi) & _M64)
        lo = mix64((index ^ self._salt_lo) & _M64)
        hi = (hi & 0xFFFFFFFFFFFF0FFF) | 0x4000  # version 4
        lo = (lo & 0x3FFFFFFFFFFFFFFF) | 0x8000000000000000  # RFC 4122 variant
        h = f"{hi:016x}{lo:016x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class ServerAllocated(_Strategy):
    """The store allocates the id on insert (Datastore auto ids, Firestore auto document ids)."""

    name = "server_allocated"
    traits = KeyTraits(monotonic=False, spreads=True, readable=False)
    fixes = frozenset({"BP-KEY-1", "BP-KEY-2"})
    server_allocated = True

    def key(self, index: int) -> Key:
        return None  # type: ignore[return-value]


class HashedPrefix(_Strategy):
    """``a3f9#user00000123``: a short hash of the id in front spreads it, the id stays readable.

    The leading hash makes Bigtable's Key Visualizer unreadable (BP-KEY-8), so ``readable``
    is False even though the id can be read.
    """

    name = "hashed_prefix"
    traits = KeyTraits(monotonic=False, spreads=True, readable=False)
    fixes = frozenset({"BP-KEY-3"})
    defaults: ClassVar[Mapping[str, Any]] = {"hash_chars": 4, "id_prefix": "user", "digits": 8}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        chars = self._int("hash_chars", minimum=1, maximum=16)
        self._shift = 64 - 4 * chars
        self._hash_fmt = f"{{:0{chars}x}}#{self._str('id_prefix')}{{:0{self._int('digits', minimum=1, maximum=40)}d}}"
        self._salt = mix64(seed & _M64)

    def append_points(self) -> int | None:
        return None  # 16**hash_chars prefixes: the ids under each are too few to form an append point

    def key(self, index: int) -> Key:
        return self._hash_fmt.format(mix64((index ^ self._salt) & _M64) >> self._shift, index + 1)


class ReversedId(_Strategy):
    """Digits of the sequential id, zero-padded to ``digits`` then reversed: 1234 -> ``4321000000``.

    Fixed width keeps it unique (``10`` and ``1`` differ) and the fast-changing last digit
    leads, spreading consecutive ids (BP-KEY-7).
    """

    name = "reversed_id"
    traits = KeyTraits(monotonic=False, spreads=True, readable=True)
    fixes = frozenset({"BP-KEY-7"})
    defaults: ClassVar[Mapping[str, Any]] = {"digits": 10}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self._fmt = f"{{:0{self._int('digits', minimum=1, maximum=40)}d}}".format

    def key(self, index: int) -> Key:
        return self._fmt(index + 1)[::-1]


class ReverseTimestamp(_Clocked):
    """``(Long.MAX_VALUE - ts)`` zero-padded to 19 digits, ``#<id>``: newest rows sort first (BP-KEY-6)."""

    name = "reverse_timestamp"
    # Every new key lands before the earlier ones: one place takes all inserts (a hotspot at the start).
    traits = KeyTraits(monotonic=True, spreads=False, readable=True)
    fixes = frozenset({"BP-KEY-6"})

    def key(self, index: int) -> Key:
        return f"{LONG_MAX - self.clock(index):019d}#{index:010d}"


class FieldPromotion(_Clocked):
    """``machine_0042#<ts>``: the id you filter by first, then the time (BP-KEY-5).

    Machines report round-robin on the virtual clock; ``machines * interval_ms >= 1`` keeps
    one machine's timestamps distinct.
    """

    name = "field_promotion"
    traits = KeyTraits(monotonic=False, spreads=True, readable=True, has_time=True)
    fixes = frozenset({"BP-KEY-5"})
    defaults: ClassVar[Mapping[str, Any]] = {**_Clocked.defaults, "machines": 100, "field": "machine"}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self.machines = self._int("machines", minimum=1)
        if self.machines * self.interval_ms < 1.0:
            raise UsageError(f"{self.name}: machines × interval_ms must be ≥ 1 so each machine's timestamps are unique")
        width = max(4, len(str(self.machines - 1)))
        self._fmt = f"{self._str('field')}_{{:0{width}d}}#{{:013d}}".format

    def append_points(self) -> int | None:
        return self.machines  # each machine's timestamps grow

    def key(self, index: int) -> Key:
        return self._fmt(index % self.machines, self.clock(index))


_SUBDOMAINS: Final = ("www", "mail", "shop", "api", "blog", "docs", "m", "cdn")
_WORDS_A: Final = ("blue", "fast", "green", "bright", "quiet", "north", "red", "smart",
                   "open", "deep", "clear", "gold", "prime", "wild", "true", "happy")
_WORDS_B: Final = ("river", "cloud", "stone", "forge", "market", "labs", "works", "peak",
                   "field", "harbor", "table", "garden", "bridge", "signal", "motion", "nest")
_TLDS: Final = ("com", "com", "com", "org", "net", "io", "de", "co.uk")


class Domain(_Strategy):
    """``www.example.com#00000042``: host names as written; related hosts sort far apart."""

    name = "domain"
    traits = KeyTraits(monotonic=False, spreads=True, readable=True)
    breaks = frozenset({"BP-KEY-7"})
    defaults: ClassVar[Mapping[str, Any]] = {"domains": 100}
    reverse: ClassVar[bool] = False

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        count = self._int("domains", minimum=1, maximum=1_000_000)
        salt = mix64(seed & _M64)
        hosts = []
        for d in range(count):
            h = mix64(d ^ salt)
            a, b = d % len(_WORDS_A), (d // len(_WORDS_A)) % len(_WORDS_B)
            # The word pair is unique for d < 256; a numeric suffix keeps larger sets unique.
            company = f"{_WORDS_A[a]}{_WORDS_B[b]}" + (str(d // 256) if d >= 256 else "")
            host = f"{_SUBDOMAINS[h % len(_SUBDOMAINS)]}.{company}.{_TLDS[(h >> 8) % len(_TLDS)]}"
            hosts.append(".".join(reversed(host.split("."))) if self.reverse else host)
        self.hosts = tuple(hosts)

    def append_points(self) -> int | None:
        return len(self.hosts)  # each host's counter grows

    def key(self, index: int) -> Key:
        count = len(self.hosts)
        return f"{self.hosts[index % count]}#{index // count:08d}"


class ReverseDomain(Domain):
    """``com.example.www#00000042``: reversed host names keep a company's hosts together (BP-KEY-7)."""

    name = "reverse_domain"
    reverse = True
    fixes = frozenset({"BP-KEY-7"})
    breaks = frozenset()


# -- sharding (BP-SHARD-1) ------------------------------------------------------------------


class Sharded(_Strategy):
    """``shard07#0000000123``: N-way prefix, round-robin, so writes spread over N ranges."""

    name = "sharded"
    traits = KeyTraits(monotonic=False, spreads=True, readable=True)
    fixes = frozenset({"BP-KEY-3"})
    shard_base = "seq"
    defaults: ClassVar[Mapping[str, Any]] = {"shards": 10}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self.shards = self._int("shards", minimum=1, maximum=100_000)
        self._fmt = f"shard{{:0{max(2, len(str(self.shards - 1)))}d}}#{{:010d}}".format

    def append_points(self) -> int | None:
        return self.shards  # each shard's ids grow

    def key(self, index: int) -> Key:
        return self._fmt(index % self.shards, index)


class TimeBucketShard(_Clocked):
    """``<bucket>#shard03#0000000123``: shards *inside* a time bucket — every current write
    still goes to the newest bucket (BP-SHARD-1's "don't shard by time prefix")."""

    name = "time_bucket_shard"
    traits = KeyTraits(monotonic=False, spreads=False, readable=True, time_first=True, has_time=True, moving=True)
    defaults: ClassVar[Mapping[str, Any]] = {**_Clocked.defaults, "shards": 10, "bucket_s": 60}

    def __init__(self, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self.shards = self._int("shards", minimum=1, maximum=100_000)
        self.bucket_ms = max(1, int(self._float("bucket_s", minimum=0.001) * 1000))
        self._fmt = f"{{:013d}}#shard{{:0{max(2, len(str(self.shards - 1)))}d}}#{{:010d}}".format

    def key(self, index: int) -> Key:
        ms = self.clock(index)
        return self._fmt(ms - ms % self.bucket_ms, index % self.shards, index)


STRATEGIES: dict[str, type[KeyStrategy]] = {
    cls.name: cls
    for cls in (
        Sequential,
        PrefixedSequential,
        PaddedSequential,
        TimestampOnly,
        TimestampFirst,
        RandomUuid,
        ServerAllocated,
        HashedPrefix,
        ReversedId,
        ReverseTimestamp,
        FieldPromotion,
        ReverseDomain,
        Domain,
        Sharded,
        TimeBucketShard,
    )
}
