"""A cell's launch plan as typed objects, and their JSON (``keyramp plan --json``, ``cells[id].plan``).

Every figure here is modelled: it comes from forecasts of the cell's key design (the tablet
model over its parameter ranges, docs/keyspace-model.md) and a price table, never from a
measurement. ``CellPlan`` answers, for one cell and one target rate: what the key design
sustains once the store has split, whether the target is reachable under the throttle
limit across the whole band, the fastest safe ramp of the 500/50/5 family, the fix when
it is not reachable, and what it costs (docs/plan.md). The searches are in ``_planner``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from keyramp.forecast._cost import CellCost

__all__ = ["FIX_KINDS", "GOOGLE_RAMP", "CellPlan", "Fix", "PlanCheck", "Ramp", "RampShape", "RateBand"]

#: What a fix changes: the shard count of an append-point design, Bigtable nodes, or the key design.
FIX_KINDS = ("shards", "nodes", "key_design")
_ENDS = ("low", "mid", "high")


def _band(doc: Any) -> dict[str, float | None]:
    doc = doc if isinstance(doc, Mapping) else {}
    return {end: None if doc.get(end) is None else float(doc[end]) for end in _ENDS}


@dataclass(frozen=True, kw_only=True)
class RateBand:
    """Ops/s at the unfavourable end of the parameter band (``low``), its mid point and its
    favourable end (``high``); None at an end: no ceiling there below the rate checked."""

    low: float | None
    mid: float | None
    high: float | None

    def to_json(self) -> dict[str, float | None]:
        return {end: None if v is None else round(v, 1) for end, v in zip(_ENDS, (self.low, self.mid, self.high),
                                                                          strict=True)}

    @classmethod
    def from_json(cls, doc: Any) -> RateBand | None:
        return None if doc is None else cls(**_band(doc))


@dataclass(frozen=True, kw_only=True)
class PlanCheck:
    """One forecast a plan rests on, judged against the throttle limit.

    ``measure``: ``launch`` (the share of the launch's requests throttled, and its worst 10-s
    step) or ``steady`` (the share over the last quarter of a constant launch: the store has
    split by then). ``throttled_fraction``: low / mid / high over the band's points.
    """

    launch: str
    measure: str
    throttled_fraction: dict[str, float | None]
    passes: bool
    peak_throttled_fraction: dict[str, float | None] | None = None
    verdict: str | None = None
    nodes: int | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"launch": self.launch, "measure": self.measure,
                               "throttled_fraction": self.throttled_fraction, "passes": self.passes,
                               "verdict": self.verdict}
        if self.peak_throttled_fraction is not None:
            out["peak_throttled_fraction"] = self.peak_throttled_fraction
        if self.nodes is not None:
            out["nodes"] = self.nodes
        if self.reason:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> PlanCheck:
        peak = doc.get("peak_throttled_fraction")
        return cls(launch=str(doc["launch"]), measure=str(doc["measure"]),
                   throttled_fraction=_band(doc.get("throttled_fraction")), passes=bool(doc["passes"]),
                   peak_throttled_fraction=None if peak is None else _band(peak), verdict=doc.get("verdict"),
                   nodes=doc.get("nodes"), reason=doc.get("reason"))


@dataclass(frozen=True, kw_only=True)
class RampShape:
    """A ramp of the 500/50/5 family: ``start_ops``, then ×(1 + ``growth``) every ``step_s``, up to the target."""

    start_ops: float
    growth: float
    step_s: float

    def steps_to(self, target: float) -> int:
        if self.start_ops >= target:
            return 0
        return max(0, math.ceil(math.log(target / self.start_ops) / math.log1p(self.growth) - 1e-9))

    def time_to(self, target: float) -> float:
        """Seconds until the ramp's rate reaches ``target`` (0: it starts there)."""
        return self.steps_to(target) * self.step_s

    def spec(self, target: float, *, hold_s: float) -> dict[str, Any]:
        """The ``[launch]`` table of this ramp to ``target``, held there for ``hold_s``."""
        return {"kind": "ramp_500_50_5", "start_ops": float(min(self.start_ops, target)), "growth": self.growth,
                "step": self.step_s, "ceiling": float(target), "duration_s": self.time_to(target) + hold_s}

    def to_json(self) -> dict[str, float]:
        return {"start_ops": self.start_ops, "growth": self.growth, "step_s": self.step_s}


#: Google's rule for a new key range: 500 ops/s, +50 % every 5 minutes (BP-RAMP-1).
GOOGLE_RAMP = RampShape(start_ops=500.0, growth=0.5, step_s=300.0)


@dataclass(frozen=True, kw_only=True)
class Ramp:
    """The fastest safe ramp found, its own forecast, and 500/50/5's forecast to the same target."""

    shape: RampShape
    target_ops_per_s: float
    hold_s: float
    check: PlanCheck
    google: PlanCheck

    @property
    def time_to_target_s(self) -> float:
        return self.shape.time_to(self.target_ops_per_s)

    @property
    def google_time_to_target_s(self) -> float:
        return GOOGLE_RAMP.time_to(self.target_ops_per_s)

    def to_json(self) -> dict[str, Any]:
        mine, google = self.time_to_target_s, self.google_time_to_target_s
        return {**self.shape.to_json(), "time_to_target_s": mine, "target_ops_per_s": self.target_ops_per_s,
                "hold_s": self.hold_s, "check": self.check.to_json(),
                "vs_500_50_5": {**GOOGLE_RAMP.to_json(), "time_to_target_s": google, "safe": self.google.passes,
                                "check": self.google.to_json(),
                                "time_ratio": None if google <= 0 else round(mine / google, 3)}}

    @classmethod
    def from_json(cls, doc: Any) -> Ramp | None:
        if doc is None:
            return None
        shape = RampShape(start_ops=float(doc["start_ops"]), growth=float(doc["growth"]), step_s=float(doc["step_s"]))
        return cls(shape=shape, target_ops_per_s=float(doc["target_ops_per_s"]), hold_s=float(doc["hold_s"]),
                   check=PlanCheck.from_json(doc["check"]), google=PlanCheck.from_json(doc["vs_500_50_5"]["check"]))



@dataclass(frozen=True, kw_only=True)
class Fix:
    """What makes an unreachable target reachable, checked by forecasting the fixed design.

    ``kind``: ``shards`` (``value`` shards, ``design`` the key template), ``nodes`` (Bigtable
    nodes for the storage), ``key_design`` (no shard count suffices: ``design`` says what to
    use instead). ``forecast``: the check at the target; ``one_fewer``: the same at one shard
    or node fewer (it fails: the value is the smallest). ``nodes`` and ``ramp``: for the fixed
    design, the Bigtable nodes it needs and its fastest safe ramp.
    """

    kind: str
    value: int | None
    design: str
    why: str
    forecast: PlanCheck | None = None
    one_fewer: PlanCheck | None = None
    nodes: int | None = None
    ramp: Ramp | None = None

    @property
    def passes(self) -> bool:
        return self.forecast is not None and self.forecast.passes

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "design": self.design, "why": self.why,
                "forecast": None if self.forecast is None else self.forecast.to_json(),
                "one_fewer": None if self.one_fewer is None else self.one_fewer.to_json(), "nodes": self.nodes,
                "ramp": None if self.ramp is None else self.ramp.to_json()}

    @classmethod
    def from_json(cls, doc: Any) -> Fix | None:
        if doc is None:
            return None
        check, fewer = doc.get("forecast"), doc.get("one_fewer")
        return cls(kind=str(doc["kind"]), value=doc.get("value"), design=str(doc["design"]), why=str(doc["why"]),
                   forecast=None if check is None else PlanCheck.from_json(check),
                   one_fewer=None if fewer is None else PlanCheck.from_json(fewer), nodes=doc.get("nodes"),
                   ramp=Ramp.from_json(doc.get("ramp")))


@dataclass(frozen=True, kw_only=True)
class CellPlan:
    """One cell planned for one target rate (every figure modelled; docs/plan.md)."""

    cell_id: str
    backend: str
    strategy: str
    target_ops_per_s: float
    throttle: float
    reachable: bool
    why: str
    sustainable_ops_per_s: RateBand | None = None
    #: The rate the sustainable search looked up to: "no ceiling" means none below it.
    checked_to_ops_per_s: float | None = None
    #: The steady check at the target on the plan's nodes (what ``reachable`` rests on).
    check: PlanCheck | None = None
    ramp: Ramp | None = None
    fix: Fix | None = None
    cost: CellCost | None = None
    nodes: int | None = None
    storage: str | None = None
    keys: str | None = None
    params_from: str = "defaults"
    params: Mapping[str, Any] | None = None
    forecasts: int = 0

    def to_json(self) -> dict[str, Any]:
        """``keyramp plan --json``'s entry for the cell, and ``cells[id].plan`` in summary.json."""
        sustainable = self.sustainable_ops_per_s
        return {
            "modelled": True, "cell": self.cell_id, "backend": self.backend, "strategy": self.strategy,
            "target_ops_per_s": self.target_ops_per_s, "throttle": self.throttle,
            "sustainable_ops_per_s": None if sustainable is None else sustainable.to_json(),
            "checked_to_ops_per_s": self.checked_to_ops_per_s, "reachable": self.reachable, "why": self.why,
            "check": None if self.check is None else self.check.to_json(),
            "ramp": None if self.ramp is None else self.ramp.to_json(),
            "fix": None if self.fix is None else self.fix.to_json(),
            "cost": None if self.cost is None else self.cost.to_json(),
            "nodes": self.nodes, "storage": self.storage, "keys": self.keys, "params_from": self.params_from,
            "params": dict(self.params or {}), "forecasts": self.forecasts,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> CellPlan:
        target = float(doc["target_ops_per_s"])
        check, cost = doc.get("check"), doc.get("cost")
        return cls(cell_id=str(doc["cell"]), backend=str(doc["backend"]), strategy=str(doc["strategy"]),
                   target_ops_per_s=target, throttle=float(doc["throttle"]), reachable=bool(doc["reachable"]),
                   why=str(doc["why"]), sustainable_ops_per_s=RateBand.from_json(doc.get("sustainable_ops_per_s")),
                   checked_to_ops_per_s=doc.get("checked_to_ops_per_s"),
                   check=None if check is None else PlanCheck.from_json(check),
                   ramp=Ramp.from_json(doc.get("ramp")),
                   fix=Fix.from_json(doc.get("fix")), cost=None if cost is None else CellCost.from_json(cost),
                   nodes=doc.get("nodes"), storage=doc.get("storage"), keys=doc.get("keys"),
                   params_from=str(doc.get("params_from") or "defaults"), params=doc.get("params") or {},
                   forecasts=int(doc.get("forecasts") or 0))
