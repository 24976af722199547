"""What a forecast needs of a cell, and which keys it projects: regenerated or recorded, and why.

``CellDesign`` is the cell as the forecast sees it (store, key design, resolved profile,
measured op counts and key-space figures, its own schedule); ``choose_keys`` decides
whether the launch stream is regenerated from the design or built from what the cell
really wrote, and says why. Regenerated keys are checked against the recording on every
cell: the same regeneration at the cell's own rate must show the hotspot share and the
append points that were measured (``Check``); a disagreement switches to the recording,
never silently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from keyramp._errors import UsageError
from keyramp.forecast._mix import OpMix, op_mix
from keyramp.forecast._project import regenerated_projection
from keyramp.keys import make_strategy
from keyramp.keyspace._analyse import existing_records
from keyramp.keyspace._metrics import hotspot_metrics
from keyramp.results._forecast_doc import KeysCheck, written
from keyramp.results._keyspace_doc import KeyspaceFigures
from keyramp.results._summary import CellSummary, as_cell

__all__ = ["HOT_TOLERANCE", "POINTS_RATIO", "CellDesign", "Check", "KeysChoice", "choose_keys",
           "why_not_regenerated"]

#: The regenerated hottest-1 % share may differ from the measured one by this much (or 30 % of the larger).
HOT_TOLERANCE = 0.1
#: ... and the append points by this factor (worker processes interleave a sequential cell's inserts).
POINTS_RATIO = 4.0


@dataclass(frozen=True, kw_only=True)
class CellDesign:
    """A cell as the forecast sees it. ``profile``: the resolved profile (a run's manifest holds it);
    ``counts``: measured operations per op; ``measured``: summary.json's ``keyspace`` of the cell;
    ``existing``: records when the cell began; ``schedule``/``horizon_s``: the cell's own load (the check)."""

    backend: str
    strategy: str
    profile: Mapping[str, Any] | None
    counts: Mapping[str, float] = field(default_factory=dict)
    measured: KeyspaceFigures | None = None
    existing: int | None = None
    schedule: Any = None
    horizon_s: float = 0.0
    #: Every key spread over this many adjacent keys (the launch planner's fix for a key over its limit).
    key_shards: int = 1
    #: False: the indexed fields' own ranges left out (exempted from indexing: the planner's fix for an
    #: index range that takes every insert).
    indexed: bool = True

    @cached_property
    def mix(self) -> OpMix:
        workload = (self.profile or {}).get("workload") or {"ops": {}, "batch_size": 1, "scan_length": 1}
        return op_mix(self.counts, workload)

    @property
    def record_count(self) -> int:
        return int(((self.profile or {}).get("workload") or {}).get("record_count", 0))

    @classmethod
    def from_summary(cls, *, backend: str, strategy: str, profile: Mapping[str, Any] | None,
                     cell_summary: CellSummary | Mapping[str, Any], schedule: Any = None,
                     horizon_s: float = 0.0) -> CellDesign:
        """From summary.json's cell entry (operation counts, key-space figures, warm-up inserts), read
        through the results model (a mapping, such as the runner's cell while it analyses it, at this edge)."""
        cell_summary = as_cell(cell_summary)
        counts = {op: float(stats.count) for op, stats in cell_summary.operations.items()}
        return cls(backend=backend, strategy=strategy, profile=profile, counts=counts,
                   measured=cell_summary.keyspace,
                   existing=existing_records(cell_summary, profile), schedule=schedule, horizon_s=horizon_s)


def why_not_regenerated(profile: Mapping[str, Any] | None, backend: str, strategy: str) -> str | None:
    """Why the cell's keys cannot be regenerated from its design, or None if they can."""
    if not profile:
        return "no profile in the run: the recorded keys are projected"
    if ((profile.get("workload") or {}).get("user")):
        return "a Python workload writes its own keys: the keys it really wrote are projected"
    try:
        made = make_strategy(strategy, seed=int(profile["seed"]), params=profile["keys"]["params"], backend=backend)
    except (UsageError, KeyError, TypeError, ValueError) as exc:
        return f"the strategy cannot be rebuilt ({exc}): the recorded keys are projected"
    if made.server_allocated:
        return "the store allocates the keys: the recorded keys are projected"
    return None


@dataclass(frozen=True, kw_only=True)
class Check:
    """The regenerated stream at the cell's own rate, held against what the cell measured."""

    measured_hot: float
    regenerated_hot: float
    measured_points: int | None
    regenerated_points: int | None

    @property
    def agrees(self) -> bool:
        tolerance = max(HOT_TOLERANCE, 0.3 * max(self.measured_hot, self.regenerated_hot))
        if abs(self.measured_hot - self.regenerated_hot) > tolerance:
            return False
        m, r = self.measured_points, self.regenerated_points
        if (m is None) != (r is None):
            return False
        return m is None or r is None or max(m, r) <= POINTS_RATIO * min(m, r)

    def why(self) -> str:
        def pts(v: int | None) -> str:
            return "spread" if v is None else f"append ×{v}"

        return (f"the recording disagrees with the design's keys at the cell's own rate (hottest 1 %: measured "
                f"{self.measured_hot:.3f}, regenerated {self.regenerated_hot:.3f}; measured {pts(self.measured_points)}"
                f", regenerated {pts(self.regenerated_points)})")

    def to_doc(self) -> KeysCheck:
        """``forecast.projection.check`` in summary.json."""
        doc = KeysCheck(measured_hottest_1pct_share=round(self.measured_hot, 4),
                        regenerated_hottest_1pct_share=round(self.regenerated_hot, 4),
                        measured_append_points=self.measured_points, regenerated_append_points=self.regenerated_points,
                        agrees=self.agrees,
                        tolerance=f"hottest 1 % within max({HOT_TOLERANCE}, 30 % of the larger); append points "
                                  f"spread vs append alike and within ×{POINTS_RATIO:g}")
        return written(doc, "measured_hottest_1pct_share", "regenerated_hottest_1pct_share",
                       "measured_append_points", "regenerated_append_points", "agrees", "tolerance")


def pattern_check(design: CellDesign) -> Check | None:
    """``Check`` of a regenerable cell with measured key-space figures and an open-model schedule."""
    measured = design.measured or KeyspaceFigures()
    hot, sampled = measured.hottest_1pct_share, measured.samples
    schedule = design.schedule
    if hot is None or not sampled or schedule is None or not schedule.open_model or design.horizon_s <= 0:
        return None

    assert design.profile is not None
    existing = design.existing if design.existing is not None else design.record_count
    proj = regenerated_projection(profile=design.profile, backend=design.backend, strategy=design.strategy,
                                  mix=design.mix, rate=schedule.rate, duration_s=design.horizon_s, existing=existing,
                                  samples=int(min(20_000, sampled)), index_ranges=False, exact=False)
    kp = proj.positions
    assert kp is not None
    m = hotspot_metrics(kp.pos, proj.t, inserts=proj.is_new, distinct=kp.distinct, positions=kp)
    points = measured.append_points
    return Check(measured_hot=float(hot), regenerated_hot=float(m["hottest_1pct_share"]),
                 measured_points=None if points is None else int(points),
                 regenerated_points=m.get("append_points"))


@dataclass(frozen=True, kw_only=True)
class KeysChoice:
    """Which keys the launch stream is built from: ``regenerated`` or ``recorded``, and why.
    ``recorded`` without sampled keys to project: ``unavailable`` says why no verdict is possible."""

    keys: str
    why: str
    check: Check | None = None
    unavailable: str | None = None


def choose_keys(design: CellDesign, *, has_recording: Callable[[], bool]) -> KeysChoice:
    """Regenerated when the design rebuilds the keys the cell wrote (and the check agrees), else recorded."""
    why = why_not_regenerated(design.profile, design.backend, design.strategy)
    if why is None:
        try:
            check = pattern_check(design)
        except (UsageError, KeyError, TypeError, ValueError):
            check = None
        if check is None or check.agrees:
            return KeysChoice(keys="regenerated", check=check,
                              why="keys regenerated from the strategy and read distribution at the launch rate")
        why, found = check.why(), check
    else:
        found = None
    if has_recording():
        return KeysChoice(keys="recorded", why=why, check=found)
    return KeysChoice(keys="recorded", why=why, check=found,
                      unavailable=f"{why}, but the run has no sampled keys to project")
