"""Key templates: a key format composed from parts, written in one line of the profile.

``strategy = ["timestamp", "shard(8)#timestamp", "device#reverse_ts", "hash4(user)#user",
"tenant#yyyymmddhh#seq"]``: every entry that is not a named strategy is a template. A
template is parsed and compiled once into a ``KeyStrategy`` whose ``key(index)`` joins
precompiled part functions: like every strategy it is a pure function of the insert
index, so preload, reads of existing keys and the key-space reference rebuild the same
keys. The grammar is in ``_template_syntax``.

Besides the key, a compiled template states what its format implies (``TemplatePlan``):
whether it leads with time, how many append points it has (``shard(8)#timestamp``: 8,
``timestamp``: 1, hashed: none), whether it is unique per insert (a template that could
give two inserts the same key is refused).
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from keyramp.core import Key, UsageError, parse_duration
from keyramp.keys._base import KeyStrategy, KeyTraits, checked_params
from keyramp.keys._distributions import ZIPFIAN_CONSTANT, _ZipfRanks
from keyramp.keys._strategies import _DEFAULT_START_MS, _M64, LONG_MAX, RandomUuid, mix64, virtual_clock
from keyramp.keys._template_syntax import NAME, Node, Parser, TemplateError

__all__ = [
    "ENTITIES",
    "PARTS",
    "TemplatePlan",
    "TemplateStrategy",
    "looks_like_template",
]

_HASH = re.compile(r"hash([0-9]+)?")
_LEADING_SHARD = re.compile(r"^\s*shard\(\s*\d+\s*\)\s*#")
#: Entity nouns: ``name -> (population, how an insert picks one)``. ``None``: each record is
#: its own entity (``user`` of record 42 is ``user00000042``), like an id column.
ENTITIES: Final[Mapping[str, tuple[int | None, str]]] = {
    "tenant": (1000, "zipfian"),
    "device": (1000, "round_robin"),
    "machine": (1000, "round_robin"),
    "sensor": (1000, "round_robin"),
    "host": (1000, "round_robin"),
    "room": (1000, "zipfian"),
    "user": (None, "identity"),
    "customer": (None, "identity"),
    "account": (None, "identity"),
    "order": (None, "identity"),
}
_PICKS: Final = ("round_robin", "uniform", "zipfian")
_PARAM_DEFAULTS: Final[Mapping[str, Any]] = {"start_ms": _DEFAULT_START_MS, "interval_ms": 1.0}


# -- parts ------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class _Part:
    """One compiled part: ``render(index) -> str`` plus what it implies for the key space."""

    render: Callable[[int], str]
    text: str  # as written, for messages
    unique: bool = False  # distinct for distinct indexes
    order: int = 0  # +1 grows with the index, -1 shrinks, 0 neither
    time: bool = False  # derived from the virtual clock at full resolution
    bucketed: bool = False  # a coarse time bucket (grows, but repeats)
    cardinality: int | None = None  # distinct values (None: unbounded)
    period: int | None = None  # round-robin period over indexes
    readable: bool = True
    hashed: bool = False
    constant: bool = False


class _Clock:
    """The clock a template's time parts read, through one indirection: ``TemplateStrategy.clock = f``
    swaps what they read (a launch's clock, as for the named strategies), not only the attribute."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[int], int]) -> None:
        self.fn = fn

    def __call__(self, index: int) -> int:
        return self.fn(index)


class _Compiler:
    def __init__(self, template: str, *, seed: int, start_ms: int, interval_ms: float) -> None:
        self.src = template
        self.seed = seed
        self.clock = _Clock(virtual_clock(start_ms, interval_ms))
        self.interval_ms = interval_ms
        self.uses_clock = False
        self._salts = 0

    def fail(self, node: Node, problem: str) -> TemplateError:
        return TemplateError(self.src, node.column + 1, problem)

    def salt(self) -> int:
        self._salts += 1
        return mix64((self.seed * 0x9E3779B1 + self._salts) & _M64)

    # argument helpers
    def int_arg(self, node: Node, arg: Node, what: str, *, minimum: int, maximum: int) -> int:
        if arg.text is None or not arg.text.isdigit() or not minimum <= int(arg.text) <= maximum:
            raise self.fail(arg, f"{node.name}: {what} must be an integer in [{minimum:,}, {maximum:,}]")
        return int(arg.text)

    def arity(self, node: Node, low: int, high: int) -> None:
        if not low <= len(node.args) <= high:
            want = f"{low}" if low == high else f"{low} to {high}"
            raise self.fail(node, f"{node.name} takes {want} argument{'' if high == 1 else 's'}, got {len(node.args)}")

    def compile(self, node: Node) -> _Part:
        if node.text is not None:
            text = node.text
            return _Part(render=lambda i: text, text=text, constant=True, cardinality=1)
        name = node.name
        hashed = _HASH.fullmatch(name)
        if hashed:
            return self.hash_part(node, int(hashed.group(1) or 4))
        build = _BUILDERS.get(name)
        if build is not None:
            return build(self, node)
        if name in ENTITIES:
            return self.entity(node)
        raise self.fail(node, f"unknown part {name!r} (parts: {', '.join(part_names())})")

    def seq(self, node: Node) -> _Part:
        self.arity(node, 0, 1)
        digits = self.int_arg(node, node.args[0], "digits", minimum=1, maximum=40) if node.args else 10
        fmt = f"{{:0{digits}d}}".format
        return _Part(render=lambda i: fmt(i + 1), text=node.name, unique=True, order=1)

    def uuid(self, node: Node) -> _Part:
        self.arity(node, 0, 0)
        gen = RandomUuid(seed=self.salt())
        return _Part(render=gen.key, text="uuid", unique=True, readable=False, hashed=True)  # type: ignore[arg-type]

    def timestamp(self, node: Node) -> _Part:
        self.arity(node, 0, 0)
        self.uses_clock = True
        clock = self.clock
        return _Part(render=lambda i: f"{clock(i):013d}", text=node.name, order=1, time=True)

    def reverse_ts(self, node: Node) -> _Part:
        self.arity(node, 0, 0)
        self.uses_clock = True
        clock = self.clock
        return _Part(render=lambda i: f"{LONG_MAX - clock(i):019d}", text=node.name, order=-1, time=True)

    def calendar(self, node: Node) -> _Part:
        """``yyyymmddhh`` and friends: the UTC calendar bucket of the virtual clock (cached:
        consecutive inserts share a bucket, so formatting runs once per bucket)."""
        self.arity(node, 0, 0)
        self.uses_clock = True
        fmt, granule_ms = _CALENDAR[node.name]
        clock = self.clock
        cache: list[Any] = [None, ""]

        def render(i: int) -> str:
            g = clock(i) // granule_ms
            if g != cache[0]:
                cache[0], cache[1] = g, time.strftime(fmt, time.gmtime(g * granule_ms // 1000))
            return cache[1]

        return _Part(render=render, text=node.name, order=1, bucketed=True)

    def bucket(self, node: Node) -> _Part:
        self.arity(node, 1, 1)
        arg = node.args[0]
        try:
            ms = round(parse_duration(arg.text or arg.name, field="bucket") * 1000)
        except UsageError:
            raise self.fail(arg, "bucket: expected a duration like 1h, 5m, 60s") from None
        if ms < 1:
            raise self.fail(arg, "bucket: at least 1ms")
        self.uses_clock = True
        clock = self.clock
        return _Part(render=lambda i: f"{clock(i) // ms * ms:013d}", text=f"bucket({arg.text})", order=1, bucketed=True)

    def shard(self, node: Node) -> _Part:
        self.arity(node, 1, 1)
        n = self.int_arg(node, node.args[0], "shard count", minimum=1, maximum=1_000_000)
        fmt = f"{{:0{len(str(n - 1))}d}}".format
        return _Part(render=lambda i: fmt(i % n), text=f"shard({n})", cardinality=n, period=n)

    def entity(self, node: Node) -> _Part:
        """``tenant``, ``device(500)``, ``room(200, uniform)``: an id drawn from a population."""
        self.arity(node, 0, 2)
        default_n, default_pick = ENTITIES[node.name]
        n = self.int_arg(node, node.args[0], "population", minimum=1, maximum=10**12) if node.args else default_n
        pick = default_pick if default_pick != "identity" or n is None else "uniform"
        if len(node.args) == 2:
            word = node.args[1].name if not node.args[1].called else ""
            if word not in _PICKS:
                raise self.fail(node.args[1], f"{node.name}: how to pick must be one of {', '.join(_PICKS)}")
            pick = word
        prefix = node.name
        if n is None:  # its own id: like seq, readable with the noun in front
            fmt = f"{prefix}{{:08d}}".format
            return _Part(render=lambda i: fmt(i + 1), text=node.name, unique=True, order=1)
        fmt = f"{prefix}{{:0{max(4, len(str(n - 1)))}d}}".format
        if pick == "round_robin":
            # Each entity once per cycle of n inserts, in a golden-ratio stride order: devices
            # report in turn, but not sorted by id (that would sweep the key range in time).
            stride = _coprime_stride(n)
            return _Part(render=lambda i: fmt(i * stride % n), text=node.name, cardinality=n, period=n)
        salt = self.salt()
        if pick == "uniform":
            return _Part(render=lambda i: fmt(mix64((i ^ salt) & _M64) % n), text=node.name, cardinality=n)
        ranks = _ZipfRanks(ZIPFIAN_CONSTANT, random.Random(0), n)
        rank_at = ranks.rank_at
        scale = 1.0 / (1 << 53)
        return _Part(render=lambda i: fmt(rank_at((mix64((i ^ salt) & _M64) >> 11) * scale)), text=node.name,
                     cardinality=n)

    def hash_part(self, node: Node, chars: int) -> _Part:
        if not 1 <= chars <= 16:
            raise self.fail(node, f"{node.name}: 1 to 16 hex characters")
        if len(node.args) != 1:
            raise self.fail(node, f"{node.name} takes one part to hash, e.g. {node.name}(user)")
        inner = self.compile(node.args[0])
        if inner.constant:
            raise self.fail(node.args[0], f"{node.name}: hashing a literal gives a constant")
        render_inner = inner.render

        def render(i: int) -> str:
            return hashlib.blake2b(render_inner(i).encode(), digest_size=8).hexdigest()[:chars]

        card = 16**chars if inner.cardinality is None else min(16**chars, inner.cardinality)
        return _Part(render=render, text=f"{node.name}({inner.text})", cardinality=card, readable=False, hashed=True)

    def reverse(self, node: Node) -> _Part:
        """``reverse(seq)``: the text reversed, so the fastest-changing digit leads (BP-KEY-7)."""
        self.arity(node, 1, 1)
        inner = self.compile(node.args[0])
        if inner.constant:
            raise self.fail(node.args[0], "reverse: reversing a literal gives a constant")
        render_inner = inner.render
        # Order is lost (the last digit leads); injectivity is kept.
        return _Part(render=lambda i: render_inner(i)[::-1], text=f"reverse({inner.text})", unique=inner.unique,
                     time=inner.time, cardinality=inner.cardinality, period=inner.period, readable=inner.readable,
                     hashed=inner.hashed)


def _coprime_stride(n: int) -> int:
    """The integer nearest n/φ that is coprime with n: ``i * stride % n`` visits all of ``[0, n)``."""
    stride = max(1, round(n * 0.6180339887498949))
    while math.gcd(stride, n) != 1:
        stride += 1
    return stride


_CALENDAR: Final[Mapping[str, tuple[str, int]]] = {
    "yyyymm": ("%Y%m", 86_400_000),
    "yyyymmdd": ("%Y%m%d", 86_400_000),
    "yyyymmddhh": ("%Y%m%d%H", 3_600_000),
    "yyyymmddhhmm": ("%Y%m%d%H%M", 60_000),
}
_BUILDERS: Final[Mapping[str, Callable[[_Compiler, Node], _Part]]] = {
    "seq": _Compiler.seq,
    "uuid": _Compiler.uuid,
    "timestamp": _Compiler.timestamp,
    "ts": _Compiler.timestamp,
    "reverse_ts": _Compiler.reverse_ts,
    "bucket": _Compiler.bucket,
    "shard": _Compiler.shard,
    "reverse": _Compiler.reverse,
    **{name: _Compiler.calendar for name in _CALENDAR},
}
PARTS: Final = tuple(_BUILDERS)


def part_names() -> list[str]:
    return [*PARTS, "hashN(part)", *ENTITIES]


# -- the strategy -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TemplatePlan:
    """What a template's format implies for the key space (planned, from the format alone)."""

    #: The first varying part: ``time`` (grows with the clock), ``sequence`` (grows with the
    #: index), ``reverse_time`` (shrinks), ``spread`` (hash, uuid, shard, entity).
    leads_with: str
    #: Ranges that receive every new key at their end (or start): the distinct values in front
    #: of the first growing/shrinking part. ``0``: no part grows, nothing appends.
    append_points: int
    #: Append points are at the start of their ranges (reverse timestamps).
    prepends: bool
    hashed: bool  # a hash or uuid part (Key Visualizer unreadable, BP-KEY-8)
    has_time: bool
    #: The growing part is a coarse time bucket: the append points move to a new bucket as time passes.
    moving: bool = False


class TemplateStrategy(KeyStrategy):
    """A key strategy compiled from a template (see the module docstring)."""

    name = "template"
    traits = KeyTraits(monotonic=False, spreads=True, readable=True)  # replaced per instance
    defaults: ClassVar[Mapping[str, Any]] = _PARAM_DEFAULTS

    def __init__(self, template: str, *, seed: int = 0, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(seed=seed, params=params)
        self.params = checked_params(f"template {template!r}", self.params, _PARAM_DEFAULTS)
        start_ms, interval = self.params["start_ms"], self.params["interval_ms"]
        if isinstance(start_ms, bool) or not isinstance(start_ms, int) or not 0 <= start_ms <= 9_999_999_999_999:
            raise UsageError(f"template {template!r}: param start_ms must be an integer in [0, 9999999999999]")
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval >= 0:
            raise UsageError(f"template {template!r}: param interval_ms must be a number ≥ 0, got {interval!r}")
        self.name = template  # type: ignore[misc]
        self.template = template
        compiler = _Compiler(template, seed=seed, start_ms=start_ms, interval_ms=float(interval))
        parts = [compiler.compile(node) for node in Parser(template).items()]
        self.plan = _plan(template, parts, interval_ms=float(interval))
        plan = self.plan
        self.traits = KeyTraits(  # type: ignore[misc]
            monotonic=plan.leads_with != "spread" and plan.append_points == 1 and not plan.moving,
            spreads=plan.leads_with == "spread" and plan.append_points != 1,
            readable=not plan.hashed,
            time_first=plan.leads_with == "time",
            has_time=plan.has_time and not plan.prepends,
            sequential_id=plan.leads_with == "sequence" and plan.append_points == 1,
            moving=plan.moving,
        )
        # A shard prefix goes in front of the whole template (one already there is replaced).
        self.shard_base = _LEADING_SHARD.sub("", template) if plan.append_points and not plan.moving else None  # type: ignore[misc]
        self._clock: _Clock | None = compiler.clock if compiler.uses_clock else None
        self._other: Callable[[int], int] | None = None
        # The compiled function takes ``index`` positionally only (no caller passes it by name).
        self.key = _join(parts)  # type: ignore[assignment]

    @property
    def clock(self) -> Callable[[int], int] | None:
        """The clock the time parts read (None: the template has none)."""
        return self._clock if self._clock is not None else self._other

    @clock.setter
    def clock(self, fn: Callable[[int], int] | None) -> None:
        if self._clock is not None and fn is not None:
            self._clock.fn = fn
        else:
            self._other = fn

    def key(self, index: int) -> Key:  # replaced by the compiled function in __init__
        raise NotImplementedError

    def append_points(self) -> int | None:
        plan = self.plan
        return plan.append_points if plan.append_points and not plan.moving else None


def _join(parts: list[_Part]) -> Callable[[int], str]:
    """One function for the whole key: constants folded into a format string once."""
    fmt = "".join(p.render(0).replace("{", "{{").replace("}", "}}") if p.constant else "{}" for p in parts).format
    fns = tuple(p.render for p in parts if not p.constant)
    if not fns:
        return lambda i: fmt()
    if len(fns) == 1:
        (a,) = fns
        return lambda i: fmt(a(i))
    if len(fns) == 2:
        a, b = fns
        return lambda i: fmt(a(i), b(i))
    if len(fns) == 3:
        a, b, c = fns
        return lambda i: fmt(a(i), b(i), c(i))
    return lambda i: fmt(*[f(i) for f in fns])


def _plan(template: str, parts: list[_Part], *, interval_ms: float) -> TemplatePlan:
    varying = [p for p in parts if not p.constant]
    if not varying:
        raise TemplateError(template, 1, "only literals: every insert would get the same key")
    # Unique per insert: a unique part, or a full-resolution time part whose same-valued
    # neighbours (the round-robin period of the other parts) are ≥ 1 ms apart.
    period = 1
    for p in varying:
        if p.period:
            period = period * p.period // math.gcd(period, p.period)
    if not any(p.unique for p in varying) and not (any(p.time for p in varying) and period * interval_ms >= 1.0):
        raise TemplateError(template, 1, "two inserts could get the same key: add seq or uuid "
                            "(or a timestamp with interval_ms × round-robin period ≥ 1)")
    first = varying[0]
    if first.hashed or (first.order == 0):
        leads = "spread"
    elif first.order < 0:
        leads = "reverse_time"
    else:
        leads = "time" if (first.time or first.bucketed) else "sequence"
    # Append points: distinct values in front of the first growing/shrinking part.
    points, prepends, moving = 0, False, False
    count = 1
    for at, p in enumerate(varying):
        if p.order != 0:
            points, prepends, moving = count, p.order < 0, _moves(varying[at:])
            break
        count = count * (p.cardinality or 1 << 62)
    return TemplatePlan(
        leads_with=leads,
        append_points=min(points, 1 << 62),
        prepends=prepends,
        hashed=any(p.hashed for p in varying),
        has_time=any(p.time or p.bucketed for p in varying),
        moving=moving,
    )


def _moves(parts: list[_Part]) -> bool:
    """Whether append points whose key goes on with ``parts`` (the first growing or shrinking part
    first) move as time passes. A coarse time bucket repeats: within one bucket the next parts
    decide. If they keep growing the same way (``tenant#yyyymmddhh#seq``) every new key of a point
    still lands past its earlier ones, at one stationary place; a part that does not
    (``yyyymmddhh#shard(8)#seq``, ``tenant#yyyymmddhh#uuid``) puts the new keys in a new region each
    bucket."""
    direction = parts[0].order
    for p in parts:
        if p.order != direction:
            return True
        if not p.bucketed:
            return False
    return True


def looks_like_template(text: str) -> bool:
    """More than a bare word, or a part's name: read as a template, not as a mistyped strategy."""
    return not NAME.fullmatch(text) or text in PARTS or text in ENTITIES or bool(_HASH.fullmatch(text))
