"""What a forecast needs of a cell, and which keys it projects: regenerated or recorded, and why.

``CellDesign`` is the cell as the forecast sees it (store, key design, the run's typed settings,
measured op counts and key-space figures, its own schedule); ``choose_keys`` decides
whether the launch stream is regenerated from the design or built from what the cell
really wrote, and says why. Regenerated keys are checked against the recording on every
cell: the same regeneration at the cell's own rate must show the hotspot share and the
append points that were measured (``Check``); a disagreement switches to the recording,
never silently.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from keyramp.backends import STORES
from keyramp.core import UsageError
from keyramp.forecast._captured import DESIGN_SHARE, keys_found
from keyramp.forecast._keyload import MIN_HOT
from keyramp.forecast._mix import OpMix, op_mix
from keyramp.forecast._project import regenerated_projection
from keyramp.keys import KeyStrategy, make_distribution, make_strategy
from keyramp.keyspace import CellKeys, existing_records, hotspot_metrics
from keyramp.profile import Cell, Schedule, Settings, rebuilds_keys
from keyramp.results import CellSummary, KeysCheck, KeyspaceFigures, as_cell, written

__all__ = ["HOT_TOLERANCE", "POINTS_RATIO", "CellDesign", "Check", "KeysChoice", "choose_keys",
           "why_not_regenerated"]

#: The regenerated hottest-1 % share may differ from the measured one by this much (or 30 % of the larger).
HOT_TOLERANCE = 0.1
#: ... and the append points by this factor (worker processes interleave a sequential cell's inserts).
POINTS_RATIO = 4.0


@dataclass(frozen=True, kw_only=True)
class CellDesign:
    """A cell as the forecast sees it. ``settings``: the run's profile, typed (a run's manifest holds it;
    None: a run without one); ``counts``: measured operations per op; ``measured``: summary.json's
    ``keyspace`` of the cell; ``existing``: records when the cell began; ``schedule``/``horizon_s``: the
    cell's own load (the check)."""

    backend: str
    strategy: str
    settings: Settings | None
    counts: Mapping[str, float] = field(default_factory=dict)
    measured: KeyspaceFigures | None = None
    existing: int | None = None
    schedule: Schedule | None = None
    horizon_s: float = 0.0
    #: Every key spread over this many adjacent keys (the launch planner's fix for a key over its limit).
    key_shards: int = 1
    #: False: the indexed fields' own ranges left out (exempted from indexing: the planner's fix for an
    #: index range that takes every insert).
    indexed: bool = True

    @cached_property
    def mix(self) -> OpMix:
        return op_mix(self.counts, None if self.settings is None else self.settings.workload)

    @property
    def record_count(self) -> int:
        return 0 if self.settings is None else int(self.settings.workload.record_count)

    @property
    def python_workload(self) -> bool:
        """A Python workload: its ops are its own code (their keys, mix and writes are what it recorded)."""
        return self.settings is not None and bool(self.settings.workload.user)

    @cached_property
    def key_strategy(self) -> KeyStrategy | str:
        """The cell's key strategy, built once (its traits, append points, whether the store allocates the
        keys), or why it does not build (a hand-edited profile)."""
        if self.settings is None:
            return "no profile in the run"
        try:
            return make_strategy(self.strategy, seed=self.settings.seed, params=self.settings.keys.params,
                                 backend=self.backend)
        except UsageError as exc:
            return str(exc)

    @classmethod
    def from_summary(cls, *, backend: str, strategy: str, settings: Settings | None,
                     cell_summary: CellSummary | Mapping[str, Any], schedule: Schedule | None = None,
                     horizon_s: float = 0.0) -> CellDesign:
        """From summary.json's cell entry (operation counts, key-space figures, warm-up inserts), read
        through the results model (a mapping, such as the runner's cell while it analyses it, at this edge)."""
        cell_summary = as_cell(cell_summary)
        counts = {op: float(stats.count) for op, stats in cell_summary.operations.items()}
        return cls(backend=backend, strategy=strategy, settings=settings, counts=counts,
                   measured=cell_summary.keyspace, existing=existing_records(cell_summary, settings, schedule),
                   schedule=schedule, horizon_s=horizon_s)

    @classmethod
    def of_cell(cls, cell: Cell, cell_summary: CellSummary | Mapping[str, Any]) -> CellDesign:
        """A profile's cell (its settings, schedule and length) with its summary."""
        return cls.from_summary(backend=cell.backend, strategy=cell.strategy, settings=cell.settings,
                                cell_summary=cell_summary, schedule=cell.schedule, horizon_s=cell.horizon_s)


def why_not_regenerated(design: CellDesign) -> str | None:
    """Why the cell's keys cannot be regenerated from its design, or None if they can."""
    if design.settings is None:
        return "no profile in the run: the recorded keys are projected"
    if not rebuilds_keys(design.settings):
        return "the run's profile does not say how its keys were made (its seed, keys, workload): the recorded keys " \
               "are projected"
    if design.python_workload:
        return "a Python workload writes its own keys: the keys it really wrote are projected"
    made = design.key_strategy
    if isinstance(made, str):
        return f"the strategy cannot be rebuilt ({made}): the recorded keys are projected"
    if made.server_allocated:
        return "the store allocates the keys: the recorded keys are projected"
    return None


@dataclass(frozen=True, kw_only=True)
class Check:
    """The regenerated stream at the cell's own rate, held against what the cell measured.

    ``points_resolved``: the recording has enough sampled inserts (8 a point) to show the design's append
    points at all: a design with more points than that (``device(5000)#timestamp`` in a 10-s cell) cannot be
    told from spread keys by the recording, so its points are not compared (a count read out of too few
    inserts is noise, not a disagreement). ``measured_hot_key``: the hottest unit's share of the sampled
    operations' writes; ``expected_hot_key``: the design's (its read distribution over the records the cell
    had), with the sampled writes it rests on: the recording disagrees when one key takes far more writes
    than the design can give it (beyond 5 σ of the binomial count and ``MIN_HOT`` writes).
    """

    measured_hot: float
    regenerated_hot: float
    measured_points: int | None
    regenerated_points: int | None
    points_resolved: bool = True
    measured_hot_key: float | None = None
    expected_hot_key: float | None = None
    sampled_ops: int = 0

    @property
    def key_agrees(self) -> bool:
        if self.measured_hot_key is None or self.expected_hot_key is None or not self.sampled_ops:
            return True
        seen, expected = self.measured_hot_key * self.sampled_ops, self.expected_hot_key * self.sampled_ops
        return seen < MIN_HOT or seen <= expected + 5.0 * math.sqrt(expected) + MIN_HOT

    @property
    def agrees(self) -> bool:
        tolerance = max(HOT_TOLERANCE, 0.3 * max(self.measured_hot, self.regenerated_hot))
        if abs(self.measured_hot - self.regenerated_hot) > tolerance or not self.key_agrees:
            return False
        if not self.points_resolved:
            return True
        m, r = self.measured_points, self.regenerated_points
        if (m is None) != (r is None):
            return False
        return m is None or r is None or max(m, r) <= POINTS_RATIO * min(m, r)

    def why(self) -> str:
        def pts(v: int | None) -> str:
            return "spread" if v is None else f"append ×{v}"

        text = (f"the recording disagrees with the design's keys at the cell's own rate (hottest 1 %: measured "
                f"{self.measured_hot:.3f}, regenerated {self.regenerated_hot:.3f}; measured {pts(self.measured_points)}"
                f", regenerated {pts(self.regenerated_points)}")
        if not self.key_agrees:
            text += (f"; the hottest key takes {self.measured_hot_key:.3f} of the operations' writes, the design "
                     f"{self.expected_hot_key:.3f}")
        return text + ")"

    def to_doc(self) -> KeysCheck:
        """``forecast.projection.check`` in summary.json."""
        doc = KeysCheck(measured_hottest_1pct_share=round(self.measured_hot, 4),
                        regenerated_hottest_1pct_share=round(self.regenerated_hot, 4),
                        measured_append_points=self.measured_points, regenerated_append_points=self.regenerated_points,
                        append_points_resolved=self.points_resolved,
                        measured_hottest_key_share=None if self.measured_hot_key is None
                        else round(self.measured_hot_key, 4),
                        expected_hottest_key_share=None if self.expected_hot_key is None
                        else round(self.expected_hot_key, 4),
                        agrees=self.agrees,
                        tolerance=f"hottest 1 % within max({HOT_TOLERANCE}, 30 % of the larger); append points "
                                  f"spread vs append alike and within ×{POINTS_RATIO:g} where the recording has 8 "
                                  f"sampled inserts a point; the hottest key's writes within 5 σ + {MIN_HOT} of the "
                                  "design's")
        return written(doc, "measured_hottest_1pct_share", "regenerated_hottest_1pct_share",
                       "measured_append_points", "regenerated_append_points", "append_points_resolved",
                       "measured_hottest_key_share", "expected_hottest_key_share", "agrees", "tolerance")


def _hot_key(design: CellDesign, samples: CellKeys | None) -> tuple[float | None, float | None, int]:
    """(measured, expected) share of the sampled operations that write the hottest unit, and the operations."""
    if samples is None or not len(samples):
        return None, None, 0
    ops = samples.operations
    written = samples.key[samples.writes]
    measured = float(np.unique(written, return_counts=True)[1].max()) / ops if len(written) else 0.0
    assert design.settings is not None
    wl = design.settings.workload
    n = (design.existing or design.record_count) + design.mix.inserts_per_op * sum(design.counts.values()) / 2
    dist = make_distribution(wl.read_distribution, params=wl.distribution_params)
    group = int(wl.entity_group_size or 1) if STORES.get(design.backend).has("entity_groups") else 1
    share = min(1.0, dist.hottest(max(1, int(n))) * max(1, group))
    writes = design.mix.per_op.get(("write", "existing"), 0.0)
    fill = design.mix.inserts_per_op if group > 1 else 0.0  # the group being filled takes each insert
    return measured, max(writes * share, fill), ops


def pattern_check(design: CellDesign, samples: CellKeys | None = None) -> Check | None:
    """``Check`` of a regenerable cell with measured key-space figures and an open-model schedule."""
    measured = design.measured or KeyspaceFigures()
    hot, sampled = measured.hottest_1pct_share, measured.samples
    schedule = design.schedule
    if hot is None or not sampled or schedule is None or not schedule.open_model or design.horizon_s <= 0:
        return None

    assert design.settings is not None
    existing = design.existing if design.existing is not None else design.record_count
    proj = regenerated_projection(settings=design.settings, backend=design.backend, strategy=design.strategy,
                                  mix=design.mix, rate=schedule.rate, duration_s=design.horizon_s, existing=existing,
                                  samples=int(min(20_000, sampled)), index_ranges=False, exact=False)
    kp = proj.positions
    assert kp is not None
    m = hotspot_metrics(kp.pos, proj.t, inserts=proj.is_new, distinct=kp.distinct, positions=kp)
    points = measured.append_points
    made = design.key_strategy
    declared = None if isinstance(made, str) else made.append_points()
    inserts = sampled * design.mix.inserts_per_op / max(design.mix.rows_per_op, 1e-12)
    measured_key, expected_key, ops = _hot_key(design, samples)
    return Check(measured_hot=float(hot), regenerated_hot=float(m["hottest_1pct_share"]),
                 measured_points=None if points is None else int(points),
                 regenerated_points=m.get("append_points"),
                 points_resolved=declared is None or inserts >= 8 * declared,
                 measured_hot_key=measured_key, expected_hot_key=expected_key, sampled_ops=ops)


@dataclass(frozen=True, kw_only=True)
class KeysChoice:
    """Which keys the launch stream is built from: ``regenerated`` or ``recorded``, and why.
    ``recorded`` without sampled keys to project: ``unavailable`` says why no verdict is possible."""

    keys: str
    why: str
    check: Check | None = None
    unavailable: str | None = None


def foreign_keys(design: CellDesign, recording: CellKeys) -> str | None:
    """Why the recorded keys are not the design's (a hand-made run, a store's own ids), or None: they are. The
    regenerated stream is the recorded one, drawn again: a recording of other keys is projected itself."""
    assert design.settings is not None
    inserted = design.mix.inserts_per_op * sum(design.counts.values())
    found = keys_found(recording, settings=design.settings, backend=design.backend, strategy=design.strategy,
                       existing=design.existing or design.record_count, inserted=inserted)
    if found >= DESIGN_SHARE:
        return None
    return (f"the recorded keys are not the strategy's ({found:.0%} of the sampled keys are among its keys): the "
            "recorded keys are projected")


def choose_keys(design: CellDesign, *, has_recording: Callable[[], bool],
                samples: Callable[[], CellKeys | None] | None = None) -> KeysChoice:
    """Regenerated when the design rebuilds the keys the cell wrote (and the check agrees), else recorded.
    ``samples``: the cell's sampled keys (the check's hottest key), loaded only for a regenerable design."""
    why = why_not_regenerated(design)
    recording = None if why is not None or samples is None else samples()
    if recording is not None and why is None:
        why = foreign_keys(design, recording)
    if why is None:
        try:
            check = pattern_check(design, recording)
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
