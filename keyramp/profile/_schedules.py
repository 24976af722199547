"""Load schedules: the target rate (ops/s) as a function of *schedule* time.

Schedules are open-model (a rate the pacer turns into intended start times) except
``users`` (closed model: a fixed number of users as fast as they can, Locust's usual
shape). ``time_scale`` compresses wall time: at ``time_scale = 100`` five minutes of
schedule pass in three wall seconds, while the rates stay real ops/s — so a 500/50/5
ramp can be exercised in seconds, and reports can still show schedule time.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from keyramp._durations import parse_duration
from keyramp._errors import UsageError

__all__ = ["KIND_FIELDS", "SCHEDULES", "SCHEDULE_FIELDS", "Schedule", "check_kind_fields", "make_schedule"]

#: Every field a ``[schedule]`` table may hold (validated by the profile loader).
SCHEDULE_FIELDS = frozenset(
    {
        "kind",
        "rate",
        "start_ops",
        "end_ops",
        "growth",
        "increment",
        "steps",
        "step",
        "ceiling",
        "burst_ops",
        "burst_at",
        "burst_for",
        "users",
        "spawn_rate",
        "time_scale",
        "max_users",
        "drop_after",
        "warmup",
    }
)


def _positive(params: Mapping[str, Any], name: str, default: float | None = None) -> float:
    value = params.get(name, default)
    if value is None:
        raise UsageError(f"schedule: '{name}' is required for kind '{params.get('kind')}'")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
        raise UsageError(f"schedule.{name}: must be a positive number, got {value!r}")
    return float(value)


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


def _constant(p: Mapping[str, Any], horizon: float) -> Schedule:
    return Constant(_positive(p, "rate"))


def _soak(p: Mapping[str, Any], horizon: float) -> Schedule:
    return Soak(_positive(p, "rate"))


def _step(p: Mapping[str, Any], horizon: float) -> Schedule:
    step_s = parse_duration(p.get("step", "60s"), field="schedule.step")
    if "steps" in p:
        raw = p["steps"]
        if not isinstance(raw, list) or not raw:
            raise UsageError("schedule.steps: must be a non-empty list of ops/s")
        steps = tuple(_positive({"steps": v}, "steps") for v in raw)
        return Step(steps, step_s)
    return Step((_positive(p, "start_ops"),), step_s, increment=_positive(p, "increment"))


def _linear(p: Mapping[str, Any], horizon: float) -> Schedule:
    return Linear(_positive(p, "start_ops"), _positive(p, "end_ops"), horizon)


def _ramp(p: Mapping[str, Any], horizon: float) -> Schedule:
    ceiling = p.get("ceiling")
    return Ramp50050(
        start_ops=_positive(p, "start_ops", 500.0),
        growth=_positive(p, "growth", 0.5),
        step_s=parse_duration(p.get("step", "5m"), field="schedule.step"),
        ceiling=None if ceiling is None else _positive(p, "ceiling"),
    )


def _spike(p: Mapping[str, Any], horizon: float) -> Schedule:
    burst_at = parse_duration(p.get("burst_at", horizon / 3), field="schedule.burst_at")
    burst_for = parse_duration(p.get("burst_for", horizon / 3), field="schedule.burst_for")
    return Spike(_positive(p, "rate"), _positive(p, "burst_ops"), burst_at, burst_for)


def _users(p: Mapping[str, Any], horizon: float) -> Schedule:
    users = p.get("users")
    if isinstance(users, bool) or not isinstance(users, int) or users < 1:
        raise UsageError(f"schedule.users: must be a positive integer, got {users!r}")
    return Users(users, _positive(p, "spawn_rate", float(users)))


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


#: kind -> the rate fields it reads (the rest of ``SCHEDULE_FIELDS`` is run control: time_scale,
#: max_users, drop_after, warmup). ``[launch]`` allows exactly these per kind.
KIND_FIELDS: dict[str, frozenset[str]] = {
    "constant": frozenset({"rate"}),
    "soak": frozenset({"rate"}),
    "step": frozenset({"steps", "step", "start_ops", "increment"}),
    "linear": frozenset({"start_ops", "end_ops"}),
    "ramp_500_50_5": frozenset({"start_ops", "growth", "step", "ceiling"}),
    "spike": frozenset({"rate", "burst_ops", "burst_at", "burst_for"}),
    "users": frozenset({"users", "spawn_rate"}),
}


#: Run control every open-model kind takes besides its rate fields (``warmup``: every kind).
#: A closed-model ``users`` schedule has no rate to pace, compress or drop against.
_OPEN_CONTROL = frozenset({"time_scale", "max_users", "drop_after"})


def check_kind_fields(params: Mapping[str, Any]) -> None:
    """Refuse a field the schedule's kind does not read (``params`` as written, before defaults)."""
    kind = params.get("kind", "constant")
    allowed = KIND_FIELDS.get(kind) if isinstance(kind, str) else None
    if allowed is None:
        raise UsageError(f"schedule.kind: unknown kind {kind!r} (one of: {', '.join(SCHEDULES)})")
    if kind != "users":
        allowed = allowed | _OPEN_CONTROL
    extra = sorted(set(params) - allowed - {"kind", "warmup"})
    if extra:
        takes = ", ".join(sorted(allowed - _OPEN_CONTROL)) + ("" if kind == "users" else "; and time_scale, "
                                                                                       "max_users, drop_after")
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
        raise UsageError(f"schedule.kind: unknown kind {kind!r} (one of: {', '.join(SCHEDULES)})")
    return builder(params, horizon)
