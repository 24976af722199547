"""Load schedules: the target rate (ops/s) as a function of *schedule* time.

Schedules are open-model (a rate the pacer turns into intended start times) except
``users`` (closed model: a fixed number of users as fast as they can, Locust's usual
shape). ``time_scale`` compresses wall time: at ``time_scale = 100`` five minutes of
schedule pass in three wall seconds, while the rates stay real ops/s — so a 500/50/5
ramp can be exercised in seconds, and reports can still show schedule time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from keyramp.core import UsageError, known_names
from keyramp.profile._checks import MISSING, Context, Duration, Free, Int, Known, Number, Where
from keyramp.profile._schema import Option, Section, option

__all__ = ["KIND_FIELDS", "OPEN_KINDS", "PARAMS", "SCHEDULES", "Schedule", "ScheduleSettings", "check_kind_fields",
           "make_schedule"]


class Schedule(ABC):
    name: ClassVar[str]
    #: Open model (rate-driven) or closed model (fixed users, ``users`` kind).
    open_model: ClassVar[bool] = True

    @abstractmethod
    def rate(self, t: float) -> float:
        """Target ops/s at schedule time ``t`` seconds (``t >= 0``)."""

    @abstractmethod
    def describe(self) -> str:
        """One line for the terminal and reports."""

    def peak(self, horizon: float) -> float:
        """Highest rate within ``[0, horizon)`` schedule seconds (sampled at change points).

        The cell ends at ``horizon``: a step that would start exactly then never runs, so the
        end point is taken as its left limit.
        """
        end = horizon - max(horizon * 1e-9, 1e-9)
        return max(self.rate(min(t, end)) for t in self.change_points(horizon))

    def change_points(self, horizon: float) -> list[float]:
        """Schedule times where the rate may change, for plots and peak finding."""
        n = 200
        return [horizon * i / n for i in range(n + 1)]

    def total_ops(self, horizon: float, *, dt: float = 0.5) -> float:
        """Operations planned over ``[0, horizon]`` schedule seconds (numerical integral)."""
        steps = max(1, int(horizon / dt))
        width = horizon / steps
        return sum(self.rate((i + 0.5) * width) for i in range(steps)) * width


@dataclass(frozen=True)
class Constant(Schedule):
    name: ClassVar[str] = "constant"
    ops: float

    def rate(self, t: float) -> float:
        return self.ops

    def describe(self) -> str:
        return f"constant {self.ops:g} ops/s"

    def change_points(self, horizon: float) -> list[float]:
        return [0.0, horizon]


@dataclass(frozen=True)
class Soak(Constant):
    """A constant rate held for a long time; kept separate so reports and lint say 'soak'."""

    name: ClassVar[str] = "soak"

    def describe(self) -> str:
        return f"soak {self.ops:g} ops/s"


def _every(step_s: float, horizon: float) -> list[float]:
    """The starts of fixed-length steps over ``horizon``, and its end."""
    return [k * step_s for k in range(int(horizon // step_s) + 1)] + [horizon]


@dataclass(frozen=True)
class Step(Schedule):
    """Rates held for ``step_s`` each: an explicit list, or ``start + k * increment``."""

    name: ClassVar[str] = "step"
    steps: tuple[float, ...]
    step_s: float
    increment: float = 0.0

    def rate(self, t: float) -> float:
        k = int(t // self.step_s)
        if k < len(self.steps):
            return self.steps[k]
        return self.steps[-1] + (k - len(self.steps) + 1) * self.increment

    def describe(self) -> str:
        if self.increment:
            return f"step {self.steps[0]:g} ops/s +{self.increment:g} every {self.step_s:g}s"
        return "step " + " → ".join(f"{s:g}" for s in self.steps) + f" ops/s, {self.step_s:g}s each"

    def change_points(self, horizon: float) -> list[float]:
        return _every(self.step_s, horizon)


@dataclass(frozen=True)
class Linear(Schedule):
    name: ClassVar[str] = "linear"
    start_ops: float
    end_ops: float
    over_s: float

    def rate(self, t: float) -> float:
        frac = min(1.0, t / self.over_s)
        return self.start_ops + (self.end_ops - self.start_ops) * frac

    def describe(self) -> str:
        return f"linear {self.start_ops:g} → {self.end_ops:g} ops/s over {self.over_s:g}s"


@dataclass(frozen=True)
class Ramp50050(Schedule):
    """Google's "500/50/5": start ≤ 500 ops/s, +50 % every 5 minutes (BP-RAMP-1)."""

    name: ClassVar[str] = "ramp_500_50_5"
    start_ops: float = 500.0
    growth: float = 0.5
    step_s: float = 300.0
    ceiling: float | None = None

    def rate(self, t: float) -> float:
        value = self.start_ops * (1.0 + self.growth) ** int(t // self.step_s)
        return min(value, self.ceiling) if self.ceiling else value

    def describe(self) -> str:
        text = f"ramp {self.start_ops:g} ops/s +{self.growth * 100:g}% every {self.step_s:g}s"
        return text + (f" up to {self.ceiling:g}" if self.ceiling else "")

    def change_points(self, horizon: float) -> list[float]:
        return _every(self.step_s, horizon)


@dataclass(frozen=True)
class Spike(Schedule):
    """Baseline, a burst for ``burst_s`` starting at ``burst_at_s``, then baseline again."""

    name: ClassVar[str] = "spike"
    ops: float
    burst_ops: float
    burst_at_s: float
    burst_s: float

    def rate(self, t: float) -> float:
        return self.burst_ops if self.burst_at_s <= t < self.burst_at_s + self.burst_s else self.ops

    def describe(self) -> str:
        return f"spike {self.ops:g} → {self.burst_ops:g} ops/s at {self.burst_at_s:g}s for {self.burst_s:g}s"

    def change_points(self, horizon: float) -> list[float]:
        return [0.0, self.burst_at_s, self.burst_at_s + self.burst_s, horizon]


@dataclass(frozen=True)
class Users(Schedule):
    """Closed model: ``users`` users, each as fast as it can (no target rate)."""

    name: ClassVar[str] = "users"
    open_model: ClassVar[bool] = False
    users: int
    spawn_rate: float

    def rate(self, t: float) -> float:
        return 0.0

    def describe(self) -> str:
        return f"{self.users} users (closed model)"

    def change_points(self, horizon: float) -> list[float]:
        return [0.0, horizon]


#: The rate fields of the kinds, each with the kinds that read it -> its default there
#: (``MISSING``: required, or computed from the horizon). ``[launch]`` takes the same fields.
PARAMS: Final[Mapping[str, Option]] = {o.toml: o for o in (
    Option(toml="rate", check=Number(), kinds={"constant": MISSING, "soak": MISSING, "spike": MISSING},
           doc="ops/s: the rate (`constant`, `soak`) or the baseline (`spike`)"),
    Option(toml="steps", check=Free("list of numbers > 0"), kinds={"step": MISSING}, bad=([], [0], "x"),
           doc="ops/s held for one step each, e.g. `[100, 200, 400]`"),
    Option(toml="step", check=Duration(), kinds={"step": "60s", "ramp_500_50_5": "5m"},
           doc="schedule time per step"),
    Option(toml="start_ops", check=Number(), kinds={"step": MISSING, "linear": MISSING, "ramp_500_50_5": 500.0},
           doc="ops/s at the start (`step`: with `increment`, instead of `steps`)"),
    Option(toml="increment", check=Number(), kinds={"step": MISSING}, doc="ops/s added every step"),
    Option(toml="end_ops", check=Number(), kinds={"linear": MISSING},
           doc="ops/s at the end of the cell's schedule horizon"),
    Option(toml="growth", check=Number(), kinds={"ramp_500_50_5": 0.5}, doc="growth per step (0.5: +50 %)"),
    Option(toml="ceiling", check=Number(), kinds={"ramp_500_50_5": MISSING}, doc="optional cap, ops/s"),
    Option(toml="burst_ops", check=Number(), kinds={"spike": MISSING}, doc="ops/s during the burst"),
    Option(toml="burst_at", check=Duration(), kinds={"spike": MISSING},
           doc="when the burst starts (default: a third of the horizon)"),
    Option(toml="burst_for", check=Duration(), kinds={"spike": MISSING},
           doc="how long it lasts (default: a third of the horizon)"),
    Option(toml="users", check=Int(1, what="a positive integer"), kinds={"users": MISSING},
           doc="users (closed model: each as fast as it can)"),
    Option(toml="spawn_rate", check=Number(), kinds={"users": MISSING},
           doc="users started per second (default: `users`, all in the first second)"),
)}
#: How a builder's errors name a field (``make_schedule`` has no file: the loader prefixes it).
_NO_FILE = Context()


def _param(p: Mapping[str, Any], name: str, *, default: Any = MISSING) -> Any:
    """Field ``name`` of a ``[schedule]``-like table, validated: its kind's declared default when
    absent, else ``default`` (computed from the horizon; None: the field is optional)."""
    kind = p.get("kind", "constant")
    value = p.get(name, PARAMS[name].default_of(kind))
    if value is MISSING:
        value = default
    if value is MISSING:
        raise UsageError(f"schedule: '{name}' is required for kind '{kind}'")
    return None if value is None else PARAMS[name].check.resolve(value, Where(_NO_FILE, "schedule", name))


def _constant(p: Mapping[str, Any], horizon: float) -> Schedule:
    return Constant(_param(p, "rate"))


def _soak(p: Mapping[str, Any], horizon: float) -> Schedule:
    return Soak(_param(p, "rate"))


def _step(p: Mapping[str, Any], horizon: float) -> Schedule:
    step_s = _param(p, "step")
    if "steps" in p:
        raw = p["steps"]
        if not isinstance(raw, list) or not raw:
            raise UsageError("schedule.steps: must be a non-empty list of ops/s")
        return Step(tuple(Number().resolve(v, Where(_NO_FILE, "schedule", "steps")) for v in raw), step_s)
    return Step((_param(p, "start_ops"),), step_s, increment=_param(p, "increment"))


def _linear(p: Mapping[str, Any], horizon: float) -> Schedule:
    return Linear(_param(p, "start_ops"), _param(p, "end_ops"), horizon)


def _ramp(p: Mapping[str, Any], horizon: float) -> Schedule:
    return Ramp50050(start_ops=_param(p, "start_ops"), growth=_param(p, "growth"), step_s=_param(p, "step"),
                     ceiling=_param(p, "ceiling", default=None))


def _spike(p: Mapping[str, Any], horizon: float) -> Schedule:
    burst_at = _param(p, "burst_at", default=horizon / 3)
    burst_for = _param(p, "burst_for", default=horizon / 3)
    return Spike(_param(p, "rate"), _param(p, "burst_ops"), burst_at, burst_for)


def _users(p: Mapping[str, Any], horizon: float) -> Schedule:
    users = PARAMS["users"].check.resolve(p.get("users"), Where(_NO_FILE, "schedule", "users"))
    return Users(users, _param(p, "spawn_rate", default=float(users)))


#: kind -> builder(params, horizon_schedule_seconds)
SCHEDULES = {
    "constant": _constant,
    "soak": _soak,
    "step": _step,
    "linear": _linear,
    "ramp_500_50_5": _ramp,
    "spike": _spike,
    "users": _users,
}
#: Every kind but the closed-model ``users``: a rate to pace, compress and drop against.
OPEN_KINDS: Final = tuple(k for k in SCHEDULES if k != "users")

#: kind -> the rate fields it reads (``PARAMS``). ``[launch]`` allows exactly these per kind.
KIND_FIELDS: Final[dict[str, frozenset[str]]] = {
    kind: frozenset(name for name, o in PARAMS.items() if kind in (o.kinds or ())) for kind in SCHEDULES
}


@dataclass(frozen=True, kw_only=True)
class ScheduleSettings(Section):
    """``[schedule]``: the load of each cell's measured phase, in schedule time."""

    TABLE: ClassVar = "schedule"
    #: Defaults of ``[schedule]`` beyond the kinds' own (``[launch]`` must say its rate), written
    #: into the resolved table (manifests have always carried them).
    KIND_DEFAULTS: ClassVar[Mapping[str, Mapping[str, Any]]] = {"constant": {"rate": 200.0}}
    kind: str = field(metadata=option(
        Known(lambda: tuple(SCHEDULES), noun="kind"), default="constant",
        doc="the shape of the load; its fields below (open model: a rate; `users`: closed)"))
    time_scale: float = field(metadata=option(
        Number(), default=1.0, kinds=dict.fromkeys(OPEN_KINDS, MISSING),
        doc="compress wall time: at 100, 5 min of schedule pass in 3 s; rates stay real ops/s"))
    max_users: int = field(metadata=option(
        Int(1), default=50, kinds=dict.fromkeys(OPEN_KINDS, MISSING),
        doc="cap on Locust users (concurrency) for open-model schedules"))
    drop_after_s: float = field(metadata=option(
        Duration(), toml="drop_after", default="1s", kinds=dict.fromkeys(OPEN_KINDS, MISSING),
        doc="an intended operation this late is dropped (and counted)"))
    warmup_s: float = field(metadata=option(
        Duration(zero=True), toml="warmup", default="2s",
        doc="unmeasured operations before each cell; the first cell on each emulator: then until latency "
            "settles (≥ 10 s on an emulator the run started, ≤ 30 s)"))
    #: The whole resolved table (what ``make_schedule`` builds the kind from).
    table: Mapping[str, Any]

    @classmethod
    def toml_names(cls) -> tuple[str, ...]:
        return (*super().toml_names(), *PARAMS)

    @classmethod
    def applies(cls, given: Mapping[str, Any], ctx: Context) -> None:
        # Before defaults are filled in: only what the profile wrote can be a stray field.
        try:
            check_kind_fields(given)
        except UsageError as exc:
            raise UsageError(f"{ctx.src}: {exc}") from None

    @classmethod
    def finish(cls, out: dict[str, Any], given: Mapping[str, Any], ctx: Context) -> None:
        for name in given.keys() & PARAMS.keys():  # validated when the kind's schedule is built
            out[name] = given[name]
        for name, default in cls.KIND_DEFAULTS.get(out["kind"], {}).items():
            out.setdefault(name, default)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ScheduleSettings:
        return cls(**cls.typed_fields(data), table=dict(data))


def check_kind_fields(params: Mapping[str, Any]) -> None:
    """Refuse a field the schedule's kind does not read (``params`` as written, before defaults)."""
    kind = params.get("kind", "constant")
    if not isinstance(kind, str) or kind not in SCHEDULES:
        raise UsageError(f"schedule.kind: unknown kind {kind!r} {known_names(kind, SCHEDULES, label='one of')}")
    control = {o.toml: o for o in ScheduleSettings.options() if o.kinds is not None}
    reads = {name for name, o in {**PARAMS, **control}.items() if kind in (o.kinds or ())}
    extra = sorted((set(params) & (PARAMS.keys() | control.keys())) - reads)
    if extra:
        takes = ", ".join(sorted(KIND_FIELDS[kind]))
        if kind in OPEN_KINDS:
            takes += "; and " + ", ".join(control)
        raise UsageError(f"schedule.{extra[0]}: not used by kind {kind!r} (it takes {takes})")
    if kind == "step" and "steps" in params and ({"start_ops", "increment"} & set(params)):
        other = sorted({"start_ops", "increment"} & set(params))[0]
        raise UsageError(f"schedule.{other}: not used by kind 'step' when 'steps' is given (steps lists every "
                         "rate; or give start_ops + increment instead)")


def make_schedule(params: Mapping[str, Any], *, horizon: float) -> Schedule:
    """Build a schedule from a profile's ``[schedule]`` table; ``horizon`` is schedule seconds."""
    kind = params.get("kind", "constant")
    builder = SCHEDULES.get(kind) if isinstance(kind, str) else None
    if builder is None:
        raise UsageError(f"schedule.kind: unknown kind {kind!r} {known_names(kind, SCHEDULES, label='one of')}")
    return builder(params, horizon)
