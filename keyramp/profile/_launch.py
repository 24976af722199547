"""``[launch]``: the traffic a user expects in production, in real ops/s and real time.

::

    [launch]
    kind = "ramp_500_50_5"     # any open-model [schedule] kind
    start_ops = 500            # the rate fields that kind reads, nothing else
    ceiling = 5000
    duration = "1h"            # real time (default 1h); no time_scale: a launch is not compressed
    nodes = 3                  # Bigtable cells only (default 1)
    storage = "ssd"            # Bigtable cells only: ssd | hdd (default ssd)
    params = "calibration.json"  # optional: parameter ranges fitted by `keyramp calibrate`

Validated strictly: a field the kind does not read, run-control fields of ``[schedule]``
(``time_scale``, ``warmup`` …) and Bigtable fields in a profile without a Bigtable backend
are errors naming file and field. The profile owns the section; the forecast
(``keyramp.forecast``, which calls it ``Launch``) projects each cell to it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from keyramp.backends import STORES, StoreParams
from keyramp.core import UsageError, format_duration, known_names
from keyramp.profile._checks import MISSING, Bool, Context, Duration, Free, Int, Where
from keyramp.profile._schedules import KIND_FIELDS, OPEN_KINDS, Schedule, make_schedule
from keyramp.profile._schema import Section, Sub, option

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CLUSTER_FIELDS", "DEFAULT_DURATION_S", "LaunchSettings", "cluster_stores", "parse_launch"]

DEFAULT_DURATION_S = 3600.0
#: Fields of stores whose model is a cluster of nodes (Bigtable): how many, and on what storage.
CLUSTER_FIELDS = frozenset({"nodes", "storage"})
_RATE_FIELDS = ("rate", "start_ops", "end_ops", "burst_ops", "increment", "ceiling")
_CLUSTER = "stores with nodes (bigtable)"


def _fail(src: str, name: str, message: str) -> UsageError:
    return UsageError(f"{src}: launch.{name}: {message}")


@dataclass(frozen=True, kw_only=True)
class LaunchSettings(Section):
    """``[launch]``: the production traffic each cell is forecast at (modelled): the rate over real
    time, and the cluster of the stores that have nodes (Bigtable)."""

    TABLE: ClassVar = "launch"
    kind: str = field(metadata=option(
        Free(" \\| ".join(f"`{k}`" for k in OPEN_KINDS)), default="constant", bad=("zigzag", "users"),
        doc="an open-model schedule kind, with exactly the rate fields it reads (no `time_scale`: a launch is "
            "real ops/s in real time)"))
    duration_s: float = field(metadata=option(Duration(), toml="duration", default="1h", doc="the launch's length"))
    params: str | None = field(default=None, metadata=option(
        Free("path"), legacy=None, bad=("", "missing.json"),
        doc="parameter ranges fitted by `keyramp calibrate fit` (relative to the profile)"))
    plan: bool = field(default=True, metadata=option(
        Bool(), default=True, legacy=False,
        doc="plan each cell after the run (modelled: the safe ramp or the fix, and the cost; seconds per "
            "cell, docs/plan.md); `false`: only when `[thresholds]` name a `plan.*` metric"))
    nodes: int | None = field(default=None, metadata=option(
        Int(1, 10_000), default=1, legacy=None, applies=_CLUSTER, doc="the cluster's nodes"))
    storage: str | None = field(default=None, metadata=option(
        Free("`ssd` \\| `hdd`"), legacy=None, applies=_CLUSTER, bad=("tape",),
        doc="the nodes' storage (default: the store's, `ssd`)"))
    #: The resolved table (what the manifest holds).
    spec: Mapping[str, Any] = field(repr=False)
    schedule: Schedule = field(repr=False)

    @classmethod
    def resolve(cls, given: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
        src, backends = ctx.src, ctx.resolved["backend"]
        kind = given.get("kind", "constant")
        if not isinstance(kind, str) or kind not in KIND_FIELDS:
            raise _fail(src, "kind", f"unknown kind {kind!r} {known_names(kind, OPEN_KINDS, label='one of')}")
        if kind not in OPEN_KINDS:
            raise _fail(src, "kind", f"{kind!r} is a closed model with no rate; a launch needs ops/s "
                                     f"({', '.join(OPEN_KINDS)})")
        allowed = {*cls.toml_names(), *KIND_FIELDS[kind]}
        for name in given:
            if name not in allowed:
                raise _fail(src, name, f"not a field of a {kind!r} launch (allowed: {', '.join(sorted(allowed))})")
        clusters = cluster_stores(backends)
        stray = sorted(CLUSTER_FIELDS & set(given))
        if stray and not clusters:
            raise _fail(src, stray[0], f"applies to {_CLUSTER} only; this profile's backends: {', '.join(backends)}")
        resolved: dict[str, Any] = {k: v for k, v in given.items() if k in KIND_FIELDS[kind]}
        resolved["kind"] = kind
        rest = [o for o in cls.options() if o.toml != "kind" and (clusters or not o.applies)]
        cls.resolve_options(given, ctx, rest, into=resolved)
        if "params" in resolved:
            resolved["params"] = _params_path(resolved["params"], src=src)
        if clusters:
            resolved["storage"] = _storage(resolved.get("storage", MISSING), clusters, src)
        try:
            cls.from_data(resolved)
        except UsageError as exc:
            raise _launch_error(str(exc), src) from None
        return resolved

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> LaunchSettings:
        """The launch from its resolved table (a profile's, a manifest's or ``--launch FILE``)."""
        duration = float(data["duration_s"])
        schedule = make_schedule(data, horizon=duration)
        if not schedule.open_model:
            raise UsageError("kind: a launch needs an open-model kind")
        return cls(kind=str(data["kind"]), duration_s=duration, params=data.get("params"), nodes=data.get("nodes"),
                   storage=data.get("storage"), plan=bool(data.get("plan", False)), spec=dict(data),
                   schedule=schedule)

    from_resolved = from_data

    @classmethod
    def constant(cls, rate: float, *, duration_s: float = DEFAULT_DURATION_S) -> LaunchSettings:
        return cls.from_data({"kind": "constant", "rate": rate, "duration_s": duration_s})

    def boxes(self) -> dict[str, StoreParams] | None:
        """The calibrated parameter boxes of ``params``, or None for the stores' own."""
        return self._params_boxes

    @cached_property
    def _params_boxes(self) -> dict[str, StoreParams] | None:
        """``boxes()``, read from the ``params`` file once per launch (the run asks after every cell)."""
        return STORES.tablet_boxes(Path(self.params)) if self.params else None

    def rate(self, t: float) -> float:
        return self.schedule.rate(t)

    def rates(self, times: np.ndarray) -> np.ndarray:
        """``rate`` at many times (kept: a forecast asks for the same step times at every point of its band)."""
        import numpy as np  # deferred: start-up cost (numpy: every command loads the profile, few forecast)

        memo = self._rates
        out = np.empty(len(times))
        for i, t in enumerate(np.asarray(times, dtype=np.float64).tolist()):
            value = memo.get(t)
            if value is None:
                value = memo[t] = self.schedule.rate(t)
            out[i] = value
        return out

    @cached_property
    def _rates(self) -> dict[float, float]:
        return {}

    @property
    def peak(self) -> float:
        return self.schedule.peak(self.duration_s)

    def total_ops(self) -> float:
        return self._total_ops

    @cached_property
    def _total_ops(self) -> float:
        return self.schedule.total_ops(self.duration_s, dt=max(0.5, self.duration_s / 20_000))

    def with_overrides(self, *, peak: float | None = None, nodes: int | None = None,
                       duration_s: float | None = None, storage: str | None = None) -> LaunchSettings:
        """The launch with a new peak rate (a ramp's ceiling; other kinds scale every rate), cluster or length."""
        spec = dict(self.spec)
        if duration_s is not None:
            spec["duration_s"] = float(duration_s)
        if peak is not None:
            if not peak > 0 or math.isinf(peak):
                raise UsageError(f"--rate: must be a positive number, got {peak!r}")
            if spec["kind"] == "ramp_500_50_5":
                spec["ceiling"] = float(peak)
            else:
                scale = float(peak) / self.peak
                for name in _RATE_FIELDS:
                    if name in spec:
                        spec[name] = float(spec[name]) * scale
                if "steps" in spec:
                    spec["steps"] = [float(v) * scale for v in spec["steps"]]
        if nodes is not None:
            if nodes < 1:
                raise UsageError(f"--nodes: must be at least 1, got {nodes}")
            spec["nodes"] = int(nodes)
        if storage is not None:
            spec["storage"] = storage
        return LaunchSettings.from_data(spec)

    def describe(self) -> str:
        return f"{self.schedule.describe()} for {format_duration(self.duration_s)}"

    def for_backend(self, backend: str) -> dict[str, Any]:
        """What ``forecast.launch`` says: the traffic, and the cluster where the store has one."""
        out: dict[str, Any] = {
            "kind": self.spec["kind"],
            "description": self.describe(),
            "duration_s": self.duration_s,
            "peak_ops_per_s": round(self.peak, 3),
            "total_ops": round(self.total_ops()),
        }
        if cluster_stores([backend]):
            out["nodes"] = int(self.nodes or 1)
            out["storage"] = self.storage or _tablets(backend).default
        return out


def parse_launch(table: Any, *, src: str, backends: Sequence[str]) -> dict[str, Any]:
    """A ``[launch]`` table (a profile's, or ``keyramp forecast --launch FILE``) validated: its resolved table."""
    ctx = Context(src=src, resolved={"backend": list(backends)})
    return Sub(LaunchSettings).resolve(table, Where(ctx, "", "launch"))


def _tablets(backend: str) -> Any:
    return STORES.get(backend).tablets


def cluster_stores(backends: Sequence[str]) -> list[str]:
    """The backends whose tablet model is a cluster of nodes (``nodes``/``storage`` apply to them)."""
    return [b for b in backends if b in STORES and _tablets(b) is not None and _tablets(b).box().kind == "nodes"]


def _storage(value: Any, clusters: list[str], src: str) -> str:
    models = [_tablets(b) for b in clusters]
    storage = models[0].default if value is MISSING else value
    if not isinstance(storage, str) or not all(storage in m.boxes for m in models):
        known = sorted({k for m in models for k in m.storage_types})
        raise _fail(src, "storage", f"one of {', '.join(known)}, got {storage!r}")
    return storage


def _params_path(value: Any, *, src: str) -> str:
    """A calibration file, relative to the profile's directory; read now so a bad one fails before any load."""
    if not isinstance(value, str) or not value:
        raise _fail(src, "params", f"a path to a parameter file (keyramp calibrate writes one), got {value!r}")
    path = Path(value)
    if not path.is_absolute() and not src.startswith("<"):
        path = Path(src).parent / path
    try:
        STORES.tablet_boxes(path)
    except UsageError as exc:
        raise _fail(src, "params", str(exc)) from None
    return str(path)


def _launch_error(message: str, src: str) -> UsageError:
    """The schedule builder names its fields schedule.x (or "schedule: 'x' is required"): say launch.x."""
    required = re.match(r"schedule: '(\w+)' is required (.*)", message)
    if required:
        message = f"{required.group(1)}: required {required.group(2)}"
    elif message.startswith("schedule."):
        message = message[len("schedule."):]
    return UsageError(f"{src}: launch.{message}")

