"""A run's launch plan as results documents: plan.json and ``keyramp plan --json`` (``LaunchPlan``), and
one cell's (``CellLaunchPlan``, also ``cells[id].plan`` in summary.json).

Every figure here is modelled: it comes from forecasts of the cell's key design (the tablet
model over its parameter ranges, docs/keyspace-model.md) and a price table, never from a
measurement. ``CellLaunchPlan`` answers, for one cell and one target rate: what the key design
sustains once the store has split, whether the target is reachable under the throttle
limit across the whole band, the fastest safe ramp of the 500/50/5 family, the fix when
it is not reachable, and what it costs (docs/plan.md). The searches that fill it in are
``keyramp.forecast``'s (``_planner``, ``_plan_cell``); these are the documents they leave.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from keyramp.results._cost_doc import LABEL, PlanCost
from keyramp.results._doc import DocError, JsonDoc
from keyramp.results._doc import doc as _doc

__all__ = [
    "FASTER_LABEL",
    "FIX_KINDS",
    "GOOGLE_RAMP",
    "RAMP_BASES",
    "CellLaunchPlan",
    "FasterRamp",
    "Fix",
    "GoogleRamp",
    "LaunchPlan",
    "PlanCheck",
    "Ramp",
    "RampShape",
    "RateBand",
    "read_launch_plan",
]

#: What a fix changes: the shard count of an append-point design, Bigtable nodes, or the key design.
FIX_KINDS = ("shards", "nodes", "key_design")


@dataclass(kw_only=True)
class RateBand(JsonDoc):
    """Ops/s at the unfavourable end of the parameter band (``low``), its mid point and its
    favourable end (``high``); None at an end: no ceiling there below the rate checked."""
    WRITES_GIVEN: ClassVar[bool] = False  # the planner passes None for a part it has not got

    low: float | None
    mid: float | None
    high: float | None

    def to_json(self) -> dict[str, Any]:
        # The searches bracket a ceiling far finer than anyone reads it: written at 0.1 ops/s.
        return {k: round(v, 1) if k in ("low", "mid", "high") and v is not None else v
                for k, v in super().to_json().items()}


@dataclass(kw_only=True)
class PlanCheck(JsonDoc):
    """One forecast a plan rests on, judged against the throttle limit.

    ``measure``: ``launch`` (the share of the launch's requests throttled, and its worst 10-s
    step) or ``steady`` (the share over the last quarter of a constant launch: the store has
    split by then). ``throttled_fraction``: low / mid / high over the band's points.
    """
    WRITES_GIVEN: ClassVar[bool] = False  # the planner passes None for a part it has not got

    launch: str
    measure: str
    throttled_fraction: dict[str, float | None]
    passes: bool
    verdict: str | None = None
    peak_throttled_fraction: dict[str, float | None] | None = None
    nodes: int | None = None
    reason: str | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("verdict",)

    def __post_init__(self) -> None:
        self.reason = self.reason or None  # an empty reason is no reason: never written
        super().__post_init__()


@dataclass(kw_only=True)
class RampShape(JsonDoc):
    """A ramp of the 500/50/5 family: ``start_ops``, then ×(1 + ``growth``) every ``step_s``, up to the target."""
    WRITES_GIVEN: ClassVar[bool] = False  # the planner passes None for a part it has not got

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


#: Google's rule for a new key range: 500 ops/s, +50 % every 5 minutes (BP-RAMP-1).
GOOGLE_RAMP = RampShape(start_ops=500.0, growth=0.5, step_s=300.0)


@dataclass(kw_only=True)
class GoogleRamp(RampShape):
    """500/50/5 to the same target as the plan's ramp: its time, its forecast, and the plan's time over it."""

    time_to_target_s: float
    safe: bool
    check: PlanCheck
    time_ratio: float | None = field(metadata=_doc("the plan's ramp time / 500/50/5's (null: 500/50/5 takes 0 s)"))


#: What a planned ramp rests on (``Ramp.basis``): Google's published rule (the store has one and the
#: model's split parameters are bounded by it: nothing faster is recommended), parameters fitted by
#: ``keyramp calibrate``, or the model alone (a store without a published ramp rule: Bigtable).
RAMP_BASES = ("published_rule", "calibrated", "model")
#: How a ramp faster than the rule, which the model alone allows, is labelled wherever it shows.
FASTER_LABEL = "modelled, faster than Google's published rule"


@dataclass(kw_only=True)
class FasterRamp(RampShape):
    """A ramp faster than Google's published rule that the model allows: shown, never recommended (the
    split parameters that allow it are bounded by that rule itself; ``keyramp calibrate`` measures them)."""
    WRITES_GIVEN: ClassVar[bool] = False

    time_to_target_s: float
    check: PlanCheck
    label: str = FASTER_LABEL
    ALWAYS: ClassVar[tuple[str, ...]] = ("label",)


@dataclass(kw_only=True)
class Ramp(RampShape):
    """The safe ramp recommended (its shape), its own forecast, 500/50/5's to the same target, what it rests
    on, and (``modelled_faster``) a faster one the model alone allows, where the store has a published rule."""

    time_to_target_s: float
    target_ops_per_s: float
    hold_s: float
    check: PlanCheck
    vs_500_50_5: GoogleRamp
    basis: str = field(default="model", metadata=_doc("published_rule | calibrated | model (RAMP_BASES)"))
    evidence: str = field(default="", metadata=_doc("what the ramp rests on, in words (the calibration file)"))
    modelled_faster: FasterRamp | None = field(
        default=None, metadata=_doc("faster than Google's published rule, allowed by the model alone: shown, "
                                    "never recommended nor acknowledged"))
    #: Built in code, every field given is written (``modelled_faster: null`` says "none"); a plan written
    #: before these fields reads back without them.
    WRITES_GIVEN: ClassVar[bool] = True

    @classmethod
    def of(cls, *, shape: RampShape, target_ops_per_s: float, hold_s: float, check: PlanCheck,
           google: PlanCheck, basis: str = "model", evidence: str = "",
           faster: FasterRamp | None = None) -> Ramp:
        """The ramp of ``shape`` to ``target_ops_per_s``, with 500/50/5's check (``google``) to the same target."""
        if basis not in RAMP_BASES:
            raise ValueError(f"basis: one of {', '.join(RAMP_BASES)}, got {basis!r}")
        mine, theirs = shape.time_to(target_ops_per_s), GOOGLE_RAMP.time_to(target_ops_per_s)
        vs = GoogleRamp(start_ops=GOOGLE_RAMP.start_ops, growth=GOOGLE_RAMP.growth, step_s=GOOGLE_RAMP.step_s,
                        time_to_target_s=theirs, safe=google.passes, check=google,
                        time_ratio=None if theirs <= 0 else round(mine / theirs, 3))
        return cls(start_ops=shape.start_ops, growth=shape.growth, step_s=shape.step_s, time_to_target_s=mine,
                   target_ops_per_s=target_ops_per_s, hold_s=hold_s, check=check, vs_500_50_5=vs, basis=basis,
                   evidence=evidence, modelled_faster=faster)

    @property
    def is_google(self) -> bool:
        """Whether this is Google's 500/50/5 itself (to a target above its start)."""
        return self.shape == GOOGLE_RAMP and self.time_to_target_s > 0

    @property
    def shape(self) -> RampShape:
        return RampShape(start_ops=self.start_ops, growth=self.growth, step_s=self.step_s)

    @property
    def google(self) -> PlanCheck:
        """500/50/5's forecast to the same target."""
        return self.vs_500_50_5.check

    @property
    def google_time_to_target_s(self) -> float:
        return self.vs_500_50_5.time_to_target_s


@dataclass(kw_only=True)
class Fix(JsonDoc):
    """What makes an unreachable target reachable, checked by forecasting the fixed design.

    ``kind``: ``shards`` (``value`` shards, ``design`` the key template), ``key_shards`` (a key over
    its per-key write limit: each hot key spread over ``value`` keys, a distributed counter),
    ``index`` (an indexed field's own range takes every insert: exempt it, ``design`` says how),
    ``nodes`` (Bigtable nodes for the storage), ``key_design`` (no shard count suffices:
    ``design`` says what to use instead). ``forecast``: the check at the target; ``one_fewer``: the same at one shard
    or node fewer (it fails: the value is the smallest). ``nodes`` and ``ramp``: for the fixed
    design, the Bigtable nodes it needs and its fastest safe ramp.
    """
    WRITES_GIVEN: ClassVar[bool] = False  # the planner passes None for a part it has not got

    kind: str
    value: int | None = None
    design: str
    why: str
    forecast: PlanCheck | None = None
    one_fewer: PlanCheck | None = None
    nodes: int | None = None
    ramp: Ramp | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("value", "forecast", "one_fewer", "nodes", "ramp")

    @property
    def passes(self) -> bool:
        return self.forecast is not None and self.forecast.passes


@dataclass(kw_only=True)
class CellLaunchPlan(JsonDoc):
    """One cell planned for one target rate (every figure modelled; docs/plan.md)."""
    WRITES_GIVEN: ClassVar[bool] = False  # the planner passes None for a part it has not got

    modelled: bool = True
    cell: str
    backend: str
    strategy: str
    target_ops_per_s: float
    throttle: float
    sustainable_ops_per_s: RateBand | None = None
    checked_to_ops_per_s: float | None = field(
        default=None, metadata=_doc("the rate the sustainable search looked up to: no ceiling means none below it"))
    reachable: bool
    why: str
    check: PlanCheck | None = field(
        default=None, metadata=_doc("the steady check at the target on the plan's nodes (what reachable rests on)"))
    ramp: Ramp | None = None
    fix: Fix | None = None
    cost: PlanCost | None = field(default=None, metadata=_doc("the launch at list prices (modelled)"))
    nodes: int | None = None
    storage: str | None = None
    keys: str | None = None
    params_from: str = "defaults"
    params: dict[str, Any] | None = field(default_factory=dict)
    forecasts: int = 0
    ALWAYS: ClassVar[tuple[str, ...]] = ("modelled", "sustainable_ops_per_s", "checked_to_ops_per_s", "check",
                                         "ramp", "fix", "cost", "nodes", "storage", "keys", "params_from", "params",
                                         "forecasts")

    @property
    def cell_id(self) -> str:
        return self.cell


@dataclass(kw_only=True)
class LaunchPlan(JsonDoc):
    """Every planned cell of a run at one target (plan.json, ``keyramp plan RUN --json``; all figures
    modelled). Files an older web UI wrote on view also say which cells it left out (``pending``)."""

    modelled: bool = True
    run: str
    target_ops_per_s: float
    target_from: str = field(metadata=_doc("--target, or the [launch] peak"))
    throttle: float
    cost_label: str = LABEL
    criteria: dict[str, str] = field(metadata=_doc("what passes means in each check (steady, ramp, sustainable)"))
    cells: dict[str, CellLaunchPlan]
    pending: list[str] | None = field(
        default=None, metadata=_doc("planned on view: the cells left out (planning them all would take too long)"))
    seconds_per_cell: float | None = field(default=None, metadata=_doc("planned on view: what planning one took"))
    planned_by: str | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("modelled", "cost_label")

    @property
    def run_id(self) -> str:
        return self.run

    @classmethod
    def merged(cls, parts: list[LaunchPlan]) -> LaunchPlan:
        """One run's plan from plans of its cells (``plan_run(run, cell=…)`` each, same target): the
        first part's document with every part's cells, as ``plan_run(run)`` writes it at once."""
        whole = copy.copy(parts[0])
        whole.cells = {cid: c for part in parts for cid, c in part.cells.items()}
        return whole

    @property
    def planned(self) -> list[CellLaunchPlan]:
        """The cells' plans, in the run's order."""
        return list(self.cells.values())


def read_launch_plan(path: Path) -> LaunchPlan:
    """A saved plan (plan.json); ``DocError`` naming the file and the field when it does not read."""
    try:
        return LaunchPlan._read_doc(json.loads(path.read_text(encoding="utf-8")))
    except ValueError as exc:  # not JSON, or not a plan (DocError)
        raise DocError(f"{path}: {exc}") from None
