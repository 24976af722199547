"""What the store proxy counts, and the configuration it runs with (both cross its control RPC as JSON).

Counting is on the request path, so each RPC's counters are one small slotted object the
handler holds; nothing is looked up or allocated per request beyond what a throttle adds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from keyramp.core import UsageError

__all__ = ["MODES", "MethodCounts", "ProxyConfig", "ProxyCounts"]

#: The proxy's modes and what each means in a view.
MODES = {"store": "store model", "admit": "store proxy, every request admitted (its own cost only)",
         "off": "store proxy, model off (forwarding only)"}


@dataclass(frozen=True, kw_only=True)
class ProxyConfig:
    """The store model a proxy runs. ``mode``: ``store`` (the store model), ``admit`` (every
    request decoded and offered to a model that admits everything: the proxy's own cost, for
    ``bench/bench_proxy.py``), ``off`` (forward only: a cell's preload and warm-up).

    Capacities are divided by ``scale`` (K) and the model's delays by ``time_scale`` (T), at
    the ``point`` of the store's parameter box (``mid``: its middle); ``nodes`` and ``storage``
    are the modelled cluster's (Bigtable). ``exempt``: field paths exempt from single-field
    indexes (Firestore; docs/fidelity.md)."""

    mode: str = "store"
    scale: float = 1.0
    time_scale: float = 1.0
    point: str = "mid"
    nodes: int = 1
    storage: str | None = None
    seed: int = 0
    exempt: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"mode: one of {', '.join(MODES)}, got {self.mode!r}")
        for name in ("scale", "time_scale"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
                raise UsageError(f"{name}: must be a finite number > 0, got {value!r}")
        if self.point not in ("low", "mid", "high"):
            raise UsageError(f"point: one of low, mid, high, got {self.point!r}")
        if isinstance(self.nodes, bool) or not isinstance(self.nodes, int) or self.nodes < 1:
            raise UsageError(f"nodes: must be an integer >= 1, got {self.nodes!r}")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "exempt": list(self.exempt)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProxyConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"proxy configuration: unknown field {unknown[0]!r}")
        values = dict(data)
        if "exempt" in values:
            values["exempt"] = tuple(values["exempt"])
        return cls(**values)

    def describe(self) -> str:
        """One line for views: ``store model at scale 1/100, time scale 10 (mid point)``."""
        if self.mode != "store":
            return MODES[self.mode]
        nodes = f", {self.nodes} node{'s' if self.nodes != 1 else ''}" if self.storage is not None else ""
        return f"store model at scale 1/{self.scale:g}, time scale {self.time_scale:g} ({self.point} point{nodes})"


@dataclass(slots=True)
class MethodCounts:
    """One RPC's counts since the proxy was last configured."""

    what: str
    requests: int = 0
    #: Offered to the model (decoded into a store operation).
    modelled: int = 0
    #: Forwarded without the model: queries, admin calls, transaction bookkeeping, the model off.
    not_modelled: int = 0
    #: Could not be read (forwarded all the same, and counted as not modelled too).
    undecodable: int = 0
    #: Answered with the store's throttling status instead of being forwarded, by cause.
    throttled: dict[str, int] = field(default_factory=dict)
    #: Held for the model's queueing delay (throttled or not), and for how long in all.
    delayed: int = 0
    delay_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "requests": self.requests, "modelled": self.modelled,
                "not_modelled": self.not_modelled, "undecodable": self.undecodable,
                "throttled": dict(self.throttled), "delayed": self.delayed, "delay_s": round(self.delay_s, 6)}


@dataclass(slots=True)
class ProxyCounts:
    """Every RPC's counts (path -> ``MethodCounts``) and their totals."""

    methods: dict[str, MethodCounts] = field(default_factory=dict)

    def method(self, path: str, what: str) -> MethodCounts:
        found = self.methods.get(path)
        if found is None:
            found = self.methods[path] = MethodCounts(what=what)
        return found

    def totals(self) -> dict[str, Any]:
        out: dict[str, Any] = {"requests": 0, "modelled": 0, "not_modelled": 0, "undecodable": 0, "throttled": 0,
                               "delayed": 0, "delay_s": 0.0}
        causes: dict[str, int] = {}
        for counts in self.methods.values():
            for name in ("requests", "modelled", "not_modelled", "undecodable", "delayed"):
                out[name] += getattr(counts, name)
            out["delay_s"] += counts.delay_s
            for cause, n in counts.throttled.items():
                causes[cause] = causes.get(cause, 0) + n
        out["throttled"] = sum(causes.values())
        out["throttled_by_cause"] = causes
        out["delay_s"] = round(out["delay_s"], 6)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"totals": self.totals(), "methods": {p: c.to_json() for p, c in sorted(self.methods.items())}}
