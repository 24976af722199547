"""The planner's ramp: the 500/50/5 family judged on a grid of step lengths, within the evidence.

**Monotone by construction.** The tablet model's throttled share is not a monotone function
of a ramp's step length: near the boundary it jumps by several percentage points between
steps a few seconds apart (``shard(182)#seq`` to 100,000 ops/s on Firestore passed at 600 s,
failed at 660 and 720 s, passed at 780 and 849 s, failed at 900 s; docs/plan.md says why).
So a step length is judged *with every longer one*: the steps are a fixed grid (``STEP_GRID``:
whole seconds, 5 minutes × 1.2^-k down to 20 s, × 1.5^k up to 1 h, and none so long that the
ramp takes more than ``RAMP_MAX_S`` to the target), tried from the longest down, and a step
passes when its forecast passes and so does every longer step (``StepLadder``). "Safe at 11
minutes" then also means "safe at any slower step of the grid".

**Within the evidence.** On a store with Google's published ramp rule (BP-RAMP-1: Datastore,
Firestore in both modes) the split parameters that would allow a faster ramp are bounded by
that rule itself (docs/keyspace-model.md), so the ramp recommended is 500/50/5 or slower
(start ≤ 500 ops/s, +50 %, steps ≥ 5 minutes) unless they come from ``keyramp calibrate``
(``--params``, ``[launch] params``: the box's ``origin``); a faster ramp the model allows is
kept apart (``Ramp.modelled_faster``), labelled "modelled, faster than Google's published
rule", and never acknowledged in a rehearsal. A store without such a rule (Bigtable) gets the
model's fastest.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from keyramp.backends import spec_for, store_params
from keyramp.results import GOOGLE_RAMP, FasterRamp, Ramp, RampShape

if TYPE_CHECKING:
    from keyramp.forecast._plan_checks import Judged
    from keyramp.forecast._planner import Planner

__all__ = ["GROWTH", "HOLD_S", "RAMP_MAX_S", "RULE", "RULE_BOUNDED", "SLOWER_RATIO", "STEP_GRID", "STEP_RATIO",
           "StepLadder", "grid_step", "longest_step", "planned_ramp", "ramp_basis"]

#: A planned ramp is forecast with this long at the target after it gets there.
HOLD_S = 600.0
#: Growth per step of every ramp planned (Google's; a faster growth only moves the time by whole steps).
GROWTH = GOOGLE_RAMP.growth
#: Google's rule for a new key range (BP-RAMP-1): the ramp a store with that rule is held to.
RULE = GOOGLE_RAMP
#: Neighbouring step lengths of the grid differ by these factors: finely below Google's 5 minutes
#: (the modelled-faster ramps), coarsely above (ramps slower than the rule: every longer step is tried).
STEP_RATIO, SLOWER_RATIO = 1.2, 1.5
STEP_MIN_S, STEP_MAX_S = 20.0, 3600.0
#: No ramp takes longer than this to reach the target (a ladder's longest step follows from it).
RAMP_MAX_S = 4 * 3600.0
#: The step lengths judged: whole seconds, 300 s × 1.2^-k down to 20 s and 300 s × 1.5^k up to 1 h.
STEP_GRID: tuple[float, ...] = tuple(sorted(
    {float(round(RULE.step_s / STEP_RATIO ** k)) for k in range(40) if RULE.step_s / STEP_RATIO ** k >= STEP_MIN_S}
    | {float(round(RULE.step_s * SLOWER_RATIO ** k)) for k in range(1, 40) if RULE.step_s * SLOWER_RATIO ** k
       <= STEP_MAX_S}))
#: The split parameters whose ranges the 500/50/5 rule bounds (docs/keyspace-model.md): a ramp faster
#: than the rule would rest on them alone, unless a calibration file replaces them.
RULE_BOUNDED = ("split_threshold_frac", "split_delay_s")
_RULE_ID = "BP-RAMP-1"


def grid_step(step_s: float) -> float:
    """The shortest step of ``STEP_GRID`` at least ``step_s`` long (``ValueError`` past its longest)."""
    i = bisect.bisect_left(STEP_GRID, step_s - 1e-9)
    if i == len(STEP_GRID):
        raise ValueError(f"a step of {step_s:g} s is longer than the planner judges ({STEP_MAX_S:g} s)")
    return STEP_GRID[i]


class StepLadder:
    """One ramp family (design, start, growth, cluster) down the grid from its longest step.

    ``passes(step)`` — whether the launch's forecast at ``step`` passes — is asked from the longest
    step down (``longest_s``, snapped down to the grid) and never below the first that fails: a step
    passes when it and every longer step pass, so if one step passes every longer one does.
    """

    def __init__(self, passes: Callable[[float], bool], longest_s: float = STEP_MAX_S) -> None:
        self._passes = passes
        self.steps = tuple(s for s in STEP_GRID if s <= longest_s + 1e-9) or STEP_GRID[:1]
        self._lowest = len(self.steps)  # the shortest index known to pass (with every longer one)
        self._broken = False  # a step below ``_lowest`` failed: nothing shorter is asked

    def _index(self, step_s: float) -> int:
        step = grid_step(step_s)
        if step > self.steps[-1]:
            raise ValueError(f"a step of {step_s:g} s is longer than this ladder judges ({self.steps[-1]:g} s)")
        return self.steps.index(step)

    def _down_to(self, index: int) -> None:
        while self._lowest > index and not self._broken:
            if self._passes(self.steps[self._lowest - 1]):
                self._lowest -= 1
            else:
                self._broken = True

    def passes(self, step_s: float) -> bool:
        """Whether the ramp at ``step_s`` (its grid step) and at every longer step of the ladder passes."""
        index = self._index(step_s)
        self._down_to(index)
        return self._lowest <= index

    def shortest(self, floor_s: float = STEP_MIN_S) -> float | None:
        """The shortest step ≥ ``floor_s`` that passes with every longer one; None: not even the longest."""
        index = self._index(min(floor_s, self.steps[-1]))
        self._down_to(index)
        return None if self._lowest == len(self.steps) else self.steps[max(self._lowest, index)]


def longest_step(start: float, growth: float, target: float) -> float:
    """The longest step a ladder judges: 1 h, or shorter so that the ramp reaches the target within
    ``RAMP_MAX_S`` (never below Google's 5 minutes, which a plan always judges)."""
    steps = RampShape(start_ops=start, growth=growth, step_s=1.0).steps_to(target)
    return max(RULE.step_s, min(STEP_MAX_S, RAMP_MAX_S / max(steps, 1)))


def ramp_basis(planner: Planner) -> tuple[str, str]:
    """(basis, evidence) of the planner's ramps (``Ramp.basis``): ``published_rule`` on a store whose
    ramp Google publishes (BP-RAMP-1) unless a calibration file replaced every ``RULE_BOUNDED``
    parameter, then ``calibrated``; ``model`` on a store without such a rule."""
    backend = planner.design.backend
    if _RULE_ID not in spec_for(backend).rules:
        return "model", "the tablet model over its parameter ranges (the store publishes no ramp rule)"
    box, defaults = planner.box, store_params(backend, planner.storage)
    fitted = [p for p in RULE_BOUNDED if p in box.ranges and box.ranges[p] != defaults.ranges.get(p)]
    if box.origin != "defaults" and len(fitted) == len(RULE_BOUNDED):
        return "calibrated", f"split parameters {', '.join(fitted)} from {box.origin} (keyramp calibrate)"
    return "published_rule", ("Google's published rule, 500/50/5 or slower: the model's split parameters "
                              f"({', '.join(RULE_BOUNDED)}) are bounded by that rule itself")


def _family(planner: Planner, strategy: str, nodes: int | None, start: float,
            floor_s: float) -> tuple[RampShape, tuple[float, ...]] | None:
    """The shortest step ≥ ``floor_s`` of ramps from ``start`` that passes with every longer one, and the
    longer steps that pass (the fallbacks of a full forecast that disagrees)."""
    if start >= planner.target:  # no ramp needed
        return RampShape(start_ops=planner.target, growth=GROWTH, step_s=RULE.step_s), ()
    ladder = planner.ladder(strategy, start, nodes)
    step = ladder.shortest(floor_s)
    if step is None:
        return None
    return RampShape(start_ops=start, growth=GROWTH, step_s=step), tuple(s for s in ladder.steps if s > step)


def _confirmed(planner: Planner, strategy: str, nodes: int | None,
               found: tuple[RampShape, tuple[float, ...]] | None) -> tuple[RampShape, Judged] | None:
    """The shape found and its full forecast; when that disagrees with the search's (fewer samples), the
    next longer steps (which the search passed), up to three."""
    if found is None:
        return None
    shape, longer = found
    for step in (shape.step_s, *longer[:2]):
        tried = replace(shape, step_s=step)
        check = planner.full(strategy, planner.ramp_launch(tried, nodes), "launch")
        if check.passes:
            return tried, check
    return None


def planned_ramp(planner: Planner, strategy: str, nodes: int | None = None) -> Ramp | None:
    """The ramp recommended for ``strategy`` (on ``nodes``), confirmed by a full forecast, with 500/50/5's
    to the same target and, where it applies, the faster ramp the model alone allows; None when no
    ramp within the evidence passes."""
    start = planner.start_rate(strategy, nodes)
    if start is None:
        return None
    basis, evidence = ramp_basis(planner)
    held = basis == "published_rule"
    within = _family(planner, strategy, nodes, min(start, RULE.start_ops), RULE.step_s) if held \
        else _family(planner, strategy, nodes, start, STEP_MIN_S)
    safe = _confirmed(planner, strategy, nodes, within)
    if safe is None:
        return None
    shape, check = safe
    faster = _confirmed(planner, strategy, nodes, _family(planner, strategy, nodes, start, STEP_MIN_S)) \
        if held else None
    target = planner.target
    shown = None
    if faster is not None and faster[0].time_to(target) < shape.time_to(target):
        quick, judged = faster
        shown = FasterRamp(start_ops=quick.start_ops, growth=quick.growth, step_s=quick.step_s,
                           time_to_target_s=quick.time_to(target), check=judged.check())
    google = planner.full(strategy, planner.ramp_launch(GOOGLE_RAMP, nodes), "launch")
    return Ramp.of(shape=shape, target_ops_per_s=target, hold_s=HOLD_S, check=check.check(),
                   google=google.check(), basis=basis, evidence=evidence, faster=shown)

