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
are errors naming file and field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from keyramp._durations import format_duration, parse_duration
from keyramp._errors import UsageError
from keyramp.forecast._stores import default_boxes, model_of
from keyramp.profile._schedules import KIND_FIELDS, Schedule, make_schedule

__all__ = ["CLUSTER_FIELDS", "DEFAULT_DURATION_S", "Launch", "cluster_stores", "parse_launch"]

DEFAULT_DURATION_S = 3600.0
#: Fields of stores whose model is a cluster of nodes (Bigtable): how many, and on what storage.
CLUSTER_FIELDS = frozenset({"nodes", "storage"})
_COMMON = frozenset({"kind", "duration", "params"})
_RATE_FIELDS = ("rate", "start_ops", "end_ops", "burst_ops", "increment", "ceiling")


def _fail(src: str, name: str, message: str) -> UsageError:
    return UsageError(f"{src}: launch.{name}: {message}")


def parse_launch(table: Any, *, src: str, backends: Sequence[str]) -> dict[str, Any]:
    """Validate a profile's ``[launch]`` table; returns the resolved table (``Launch.from_resolved``)."""
    if not isinstance(table, Mapping):
        raise UsageError(f"{src}: 'launch' must be a table ([launch])")
    kind = table.get("kind", "constant")
    if not isinstance(kind, str) or kind not in KIND_FIELDS:
        open_kinds = ", ".join(k for k in KIND_FIELDS if k != "users")
        raise _fail(src, "kind", f"unknown kind {kind!r} (one of: {open_kinds})")
    if kind == "users":
        raise _fail(src, "kind", "'users' is a closed model with no rate; a launch needs ops/s "
                                 "(constant, step, linear, ramp_500_50_5, spike, soak)")
    allowed = _COMMON | KIND_FIELDS[kind] | CLUSTER_FIELDS
    for name in table:
        if name not in allowed:
            raise _fail(src, name, f"not a field of a {kind!r} launch (allowed: {', '.join(sorted(allowed))})")
    clusters = cluster_stores(backends)
    if not clusters:
        for name in sorted(CLUSTER_FIELDS & set(table)):
            raise _fail(src, name, f"applies to stores with nodes (bigtable) only; this profile's backends: "
                                   f"{', '.join(backends)}")
    resolved: dict[str, Any] = {k: v for k, v in table.items() if k in KIND_FIELDS[kind]}
    resolved["kind"] = kind
    resolved["duration_s"] = parse_duration(table.get("duration", DEFAULT_DURATION_S), field=f"{src}: launch.duration")
    if "params" in table:
        resolved["params"] = _params_path(table["params"], src=src)
    if clusters:
        nodes = table.get("nodes", 1)
        if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= 10_000:
            raise _fail(src, "nodes", f"an integer from 1 to 10,000, got {nodes!r}")
        models = [model_of(b) for b in clusters]
        storage = table.get("storage", models[0].default)
        if not all(storage in m.boxes for m in models):
            known = sorted({k for m in models for k in m.storage_types})
            raise _fail(src, "storage", f"one of {', '.join(known)}, got {storage!r}")
        resolved["nodes"], resolved["storage"] = nodes, storage
    try:
        Launch.from_resolved(resolved)
    except UsageError as exc:
        # The schedule builder names its fields schedule.x (or "schedule: 'x' is required"): say launch.x.
        message = str(exc)
        required = re.match(r"schedule: '(\w+)' is required (.*)", message)
        if required:
            message = f"{required.group(1)}: required {required.group(2)}"
        elif message.startswith("schedule."):
            message = message[len("schedule."):]
        raise UsageError(f"{src}: launch.{message}") from None
    return resolved


def cluster_stores(backends: Sequence[str]) -> list[str]:
    """The backends whose tablet model is a cluster of nodes (``nodes``/``storage`` apply to them)."""
    from keyramp.backends import STORES

    return [b for b in backends if b in STORES and STORES.get(b).tablets is not None
            and model_of(b).box().kind == "nodes"]


def _params_path(value: Any, *, src: str) -> str:
    """A calibration file, relative to the profile's directory; read now so a bad one fails before any load."""
    from pathlib import Path

    from keyramp.forecast._params import load_params_file

    if not isinstance(value, str) or not value:
        raise _fail(src, "params", f"a path to a parameter file (keyramp calibrate writes one), got {value!r}")
    path = Path(value)
    if not path.is_absolute() and not src.startswith("<"):
        path = Path(src).parent / path
    try:
        load_params_file(path, default_boxes())
    except UsageError as exc:
        raise _fail(src, "params", str(exc)) from None
    return str(path)


@dataclass(frozen=True, kw_only=True)
class Launch:
    """A resolved ``[launch]``: the rate over real time, and the cluster of stores with nodes (Bigtable)."""

    spec: Mapping[str, Any]
    schedule: Schedule
    duration_s: float
    nodes: int | None = None
    storage: str | None = None

    @classmethod
    def from_resolved(cls, spec: Mapping[str, Any]) -> Launch:
        duration = float(spec["duration_s"])
        schedule = make_schedule(spec, horizon=duration)
        if not schedule.open_model:
            raise UsageError("kind: a launch needs an open-model kind")
        return cls(spec=dict(spec), schedule=schedule, duration_s=duration, nodes=spec.get("nodes"),
                   storage=spec.get("storage"))

    @classmethod
    def constant(cls, rate: float, *, duration_s: float = DEFAULT_DURATION_S) -> Launch:
        return cls.from_resolved({"kind": "constant", "rate": rate, "duration_s": duration_s})

    def boxes(self) -> dict[str, Any] | None:
        """The calibrated parameter boxes of ``params``, or None for the defaults."""
        return self._params_boxes

    @cached_property
    def _params_boxes(self) -> dict[str, Any] | None:
        """``boxes()``, read from the ``params`` file once per launch (the run asks after every cell)."""
        if not self.spec.get("params"):
            return None
        from pathlib import Path

        from keyramp.forecast._params import load_params_file

        return load_params_file(Path(self.spec["params"]), default_boxes())

    def rate(self, t: float) -> float:
        return self.schedule.rate(t)

    @property
    def peak(self) -> float:
        return self.schedule.peak(self.duration_s)

    def total_ops(self) -> float:
        return self.schedule.total_ops(self.duration_s, dt=max(0.5, self.duration_s / 20_000))

    def with_overrides(self, *, peak: float | None = None, nodes: int | None = None,
                       duration_s: float | None = None, storage: str | None = None) -> Launch:
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
        return Launch.from_resolved(spec)

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
            out["storage"] = self.storage or model_of(backend).default
        return out
