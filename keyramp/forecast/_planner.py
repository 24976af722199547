"""The launch planner's searches, every step the cell's ``Forecaster`` at a launch (docs/plan.md).

* **sustainable**: the highest constant rate whose throttled share, once the store has
  split (the steady measure, ``_plan_checks``), stays ≤ the limit — per end of the band:
  ``low`` at every point, ``mid`` at the mid point, ``high`` at any (the favourable end).
  On Bigtable the cluster is made large enough not to bind: the figure is the key design's.
* **ramp**: the ladders of the 500/50/5 family (``_plan_ramp``): from the largest start a new
  range takes (``start_rate``), +50 % a step, each step length judged with every longer one
  of a fixed grid (``ladder``, ``ramp_passes``); which ramp is recommended, and within what
  evidence, is ``_plan_ramp.planned_ramp``'s.
* **fixes**: the smallest shard count of ``shard(N)#<the design's key>`` (or Bigtable node
  count) that passes at the target, one fewer shown to fail.

Searches ask ``Trial``s (the band's points evaluated as the question needs them); what a
plan reports — the check at the target, the ramp, 500/50/5's ramp, each fix and one fewer —
are full forecasts, with the stability re-run where anything was sampled. Trials and
forecasts are memoised per (design, launch); the ``Forecaster`` keeps projections per launch
traffic, so the node search reuses one projection per rate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from keyramp.backends import StoreParams, model_of, store_params
from keyramp.core import UsageError
from keyramp.forecast._design import CellDesign
from keyramp.forecast._forecast import Forecaster
from keyramp.forecast._launch import Launch, cluster_stores
from keyramp.forecast._plan_checks import Judged, Trial, judged
from keyramp.forecast._plan_ramp import GROWTH, HOLD_S, StepLadder, longest_step
from keyramp.keys import shard_template
from keyramp.results import GOOGLE_RAMP, RampShape, RateBand

__all__ = ["HOLD_S", "PROBE_FACTOR", "Planner", "shard_template"]

#: A constant launch runs long enough to split wherever the design lets it (``Planner.steady_s``).
STEADY_MIN_S, STEADY_MAX_S = 1800.0, 14_400.0
#: "No ceiling": the design sustains this many times the target.
PROBE_FACTOR = 4.0
#: How close the sustainable search brackets each end (the low end decides reachability; the others inform),
#: and how many rates it may try for it.
RATE_PRECISION = {"low": 1.05, "mid": 1.1, "high": 1.1}
_ITERATIONS = {"low": 7, "mid": 4, "high": 4}
#: Start rates tried (ops/s): 500 × 2^k up to the target, and below 500 if a new range takes less.
_STARTS = tuple(500.0 * 2.0 ** k for k in range(-3, 12))

class Planner:
    """Searches for one cell (``design``) at ``target`` ops/s with throttled share ≤ ``throttle``.

    ``nodes``/``storage``: the Bigtable cluster the plan starts from; ``boxes``: calibrated
    parameter boxes; ``forecaster``: the cell's own (its keys choice and projections are reused);
    ``samples``: sampled accesses per draw inside the searches (None: the forecast's own).
    """

    def __init__(self, design: CellDesign, *, target: float, throttle: float = 0.01, nodes: int | None = None,
                 storage: str | None = None, boxes: Mapping[str, StoreParams] | None = None, recorded: Any = None,
                 forecaster: Forecaster | None = None, samples: int | None = None) -> None:
        if not 0 < target < math.inf:
            raise UsageError(f"--target: ops/s must be a number > 0, got {target!r}")
        if not 0 < throttle < 1:
            raise UsageError(f"--throttle: a share between 0 and 1 (0.01 = 1 %), got {throttle!r}")
        self.design, self.target, self.throttle = design, float(target), float(throttle)
        self.cluster = bool(cluster_stores([design.backend]))
        self.nodes = int(nodes or 1) if self.cluster else None
        self.storage = (storage or model_of(design.backend).default) if self.cluster else None
        self.boxes = dict(boxes) if boxes else None
        self.samples = samples
        self.box = store_params(design.backend, self.storage, boxes=self.boxes)
        self._forecasters = {design.strategy: forecaster or Forecaster(design, recorded=recorded)}
        self._full: dict[tuple[str, str], Judged] = {}
        self._trials: dict[tuple[str, str], Trial] = {}
        self._ladders: dict[tuple[str, float, float, int | None], StepLadder] = {}
        self.forecasts = 0  # full forecasts and trials run

    # -- launches and their judgement ----------------------------------------------------------

    def variant(self, label: str, forecaster: Forecaster) -> str:
        """Search ``forecaster`` (a variant of the cell's design, e.g. its keys sharded) under ``label``, like
        a strategy: ``steady``, ``full`` and ``planned_ramp`` take the label."""
        self._forecasters.setdefault(label, forecaster)
        return label

    def forecaster(self, strategy: str) -> Forecaster:
        """The cell's own, or one for a design the cell did not run (its keys regenerated)."""
        if strategy not in self._forecasters:
            self._forecasters[strategy] = Forecaster(replace(self.design, strategy=strategy, measured=None,
                                                             schedule=None))
        return self._forecasters[strategy]

    def _launch(self, spec: dict[str, Any], nodes: int | None) -> Launch:
        if self.cluster:
            spec = {**spec, "nodes": int(nodes if nodes is not None else self.nodes or 1), "storage": self.storage}
        return Launch.from_data(spec)

    def steady_launch(self, rate: float, nodes: int | None = None) -> Launch:
        """A constant launch at ``rate``, long enough to split (``steady_s``): the steady measure's."""
        return self._launch({"kind": "constant", "rate": float(rate), "duration_s": self.steady_s(rate)}, nodes)

    def ramp_launch(self, shape: RampShape, nodes: int | None = None) -> Launch:
        """``shape`` up to the target and ``HOLD_S`` there: the launch measure's."""
        return self._launch(shape.spec(self.target, hold_s=HOLD_S), nodes)

    def full(self, strategy: str, launch: Launch, measure: str) -> Judged:
        """A full forecast of ``launch`` (the band, and the stability re-run where anything was sampled)."""
        key = (strategy, _key(launch))
        if key not in self._full:
            self.forecasts += 1
            done = self._trials.get(key)
            known = done.outcomes if done is not None and self.samples is None else None
            fc = self.forecaster(strategy).forecast(launch, boxes=self.boxes, known=known)
            self._full[key] = judged(fc, launch, measure, self.throttle)
        return self._full[key]

    def trial(self, strategy: str, launch: Launch, measure: str) -> Trial:
        """``launch`` judged point by point (a search's question); a full forecast's points are reused."""
        key = (strategy, _key(launch))
        if key not in self._trials:
            self.forecasts += 1
            done = self._full.get(key)
            forecaster = self.forecaster(strategy)
            self._trials[key] = Trial(forecaster=forecaster, launch=launch, box=forecaster.box_for(launch, self.boxes),
                                      measure=measure, limit=self.throttle, samples=self.samples,
                                      seed=None if done is None else done.points)
        return self._trials[key]

    def steady(self, strategy: str, rate: float, nodes: int | None = None) -> Trial:
        return self.trial(strategy, self.steady_launch(rate, nodes), "steady")

    def steady_s(self, rate: float) -> float:
        """How long a constant launch at ``rate`` runs: 1.5 × the time the store needs to split to the rate at
        the unfavourable end of the band (rounds of ``split_delay_s`` high, each ``split_fanout`` low
        pieces, until every tablet is under ``split_threshold_frac`` high × capacity low, and two more;
        then the placement delay), + 10 minutes; 30 minutes to 4 hours, whole minutes."""
        r = self.box.ranges
        pieces = max(1.0, rate * self.tablet_share() / r["split_threshold_frac"].high)
        # two rounds more than the count: a tablet splits at quantiles of its load, not into equal pieces
        rounds = math.ceil(math.log(pieces) / math.log(max(2.0, r["split_fanout"].low)) - 1e-9) + 2
        place = r["placement_delay_s"].high if "placement_delay_s" in r else 0.0
        needed = rounds * r["split_delay_s"].high + place
        return float(min(STEADY_MAX_S, max(STEADY_MIN_S, 60 * math.ceil((1.5 * needed + 600) / 60))))

    def tablet_share(self) -> float:
        """The share of one tablet's capacity (Bigtable: one node's) an operation of the cell's mix takes, at
        the low end of the capacity ranges."""
        r, mix = self.box.ranges, self.design.mix
        cap = r[self.box.capacity_param].low
        reads = r["node_read_rows_per_s"].low if self.box.kind == "nodes" else cap
        return mix.writes_per_op / cap + mix.reads_per_op / reads

    def one_tablet(self) -> float:
        """Ops/s of the cell's mix one tablet serves at the low end of its capacity: where a ceiling search starts."""
        return 1.0 / max(self.tablet_share(), 1e-12)

    def design_nodes(self) -> int | None:
        """Bigtable: the cluster the key design is judged on (``unbounded_nodes`` of ``PROBE_FACTOR`` × the
        target); None elsewhere."""
        return self.unbounded_nodes(PROBE_FACTOR * self.target)

    def unbounded_nodes(self, rate: float) -> int | None:
        """Bigtable: nodes enough that the cluster cannot be what limits ``rate`` (the key design is)."""
        if not self.cluster:
            return None
        return max(1, math.ceil(1.5 * rate * self.tablet_share()) + 1)

    # -- what the design sustains --------------------------------------------------------------

    def sustainable(self, strategy: str) -> tuple[RateBand | None, float]:
        """The band of rates the design sustains once split (None: no ceiling up to the probe), and
        the probe rate."""
        probe_rate = PROBE_FACTOR * self.target
        nodes = self.design_nodes()
        seen = [self.steady(strategy, self.target, nodes)]

        def at(rate: float) -> Trial:
            seen.append(self.steady(strategy, rate, nodes))
            return seen[-1]

        probe = at(probe_rate)
        if probe.passes("low"):
            return None, probe_rate
        ends = {end: None if probe.passes(end) else self._ceiling(at, seen, end, self._key_rate(strategy, end))
                for end in ("low", "mid", "high")}
        return RateBand(low=ends["low"], mid=ends["mid"], high=ends["high"]), probe_rate

    def _key_rate(self, strategy: str, end: str) -> float | None:
        """The rate at which the design's hottest key reaches the per-key limit at ``end`` (None: no such
        limit, or no key it concerns): a counter's ceiling is a few ops/s, far below one tablet's."""
        limit = self.box.ranges.get("key_write_ops_per_s")
        if limit is None:
            return None
        hottest = self.forecaster(strategy).hottest_key(self.steady_launch(self.target, self.design_nodes()), self.box)
        return self.target * float(getattr(limit, end)) / hottest if hottest > 0 else None

    def _ceiling(self, at: Callable[[float], Trial], seen: list[Trial], end: str, key_rate: float | None) -> float:
        """The highest rate passing at ``end`` (within ``RATE_PRECISION[end]``, at most ``_ITERATIONS[end]``
        rates): a first guess from what the store serves above its ceiling (at least one tablet's rate, or
        where the hottest key reaches its limit if lower: ``key_rate``), then bisection on log rate."""
        def bracket() -> tuple[Trial | None, Trial]:
            # Bisection over the rates tried (the probe, the highest, fails at this end): only the trials
            # the bracket turns on run their point.
            tried = sorted({t.rate: t for t in seen}.values(), key=lambda t: t.rate)
            lo, hi = -1, len(tried) - 1
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if tried[mid].passes(end) else (lo, mid)
            return (tried[lo] if lo >= 0 else None), tried[hi]

        for _ in range(_ITERATIONS[end]):
            lo, hi = bracket()
            if lo is not None and hi.rate / lo.rate <= RATE_PRECISION[end]:
                break
            if lo is None:  # what the store serves above a ceiling (rate × (1 - share)), at least one tablet's rate
                floor = self.one_tablet() if key_rate is None else min(self.one_tablet(), key_rate)
                x = max(hi.rate * (1 - min(1.0, hi.share(end))) / (1 - self.throttle), floor)
                x = min(x, hi.rate / RATE_PRECISION[end])
            else:
                x = math.sqrt(lo.rate * hi.rate)
            if x < 1.0:
                return 0.0
            at(x)
        lo, _ = bracket()
        return 0.0 if lo is None else lo.rate

    # -- ramps (the search: ``_plan_ramp``) ------------------------------------------------------

    def ladder(self, strategy: str, start: float, nodes: int | None = None, growth: float = GROWTH) -> StepLadder:
        """The ramps from ``start`` by ``growth`` to the target, judged down the grid of step lengths (a step
        passes with every longer one: ``StepLadder``)."""
        key = (strategy, float(start), float(growth), nodes)
        if key not in self._ladders:
            def passes(step_s: float) -> bool:
                shape = RampShape(start_ops=start, growth=growth, step_s=step_s)
                return self.trial(strategy, self.ramp_launch(shape, nodes), "launch").passes()

            self._ladders[key] = StepLadder(passes, longest_step(start, growth, self.target))
        return self._ladders[key]

    def ramp_passes(self, strategy: str, shape: RampShape, nodes: int | None = None) -> bool:
        """Whether the ramp of ``shape`` passes at its step length and every longer one of the grid."""
        return self.ladder(strategy, shape.start_ops, nodes, shape.growth).passes(shape.step_s)

    def start_rate(self, strategy: str, nodes: int | None = None) -> float | None:
        """The largest start of ``_STARTS`` (or the target) a new range takes, held for ``HOLD_S``."""
        starts = [s for s in _STARTS if s < self.target] + [self.target]

        def ok(i: int) -> bool:
            launch = self._launch({"kind": "constant", "rate": starts[i], "duration_s": HOLD_S}, nodes)
            return self.trial(strategy, launch, "launch").passes()

        first = starts.index(min(starts, key=lambda s: abs(s - GOOGLE_RAMP.start_ops)))
        if not ok(first):
            lower = next((i for i in range(first - 1, -1, -1) if ok(i)), None)
            return None if lower is None else starts[lower]
        lo, hi = first, len(starts)  # starts[lo] passes; starts[hi] fails (or is past the end)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
        return starts[lo]

    # -- fixes ----------------------------------------------------------------------------------

    def smallest(self, passes: Callable[[int], bool], guess: int, *, cap: int) -> int | None:
        """The smallest n ≥ 1 with ``passes(n)``, searched from ``guess`` (one fewer first, then galloping,
        then bisection); None when nothing up to ``cap`` passes."""
        known: dict[int, bool] = {}

        def ok(k: int) -> bool:
            if k not in known:
                known[k] = passes(k)
            return known[k]

        good = bad = max(1, min(guess, cap))
        if ok(good):
            bad = 0
            while bad == 0 and good > 1:
                if not ok(good - 1):
                    bad = good - 1
                    break
                trial = max(1, good - max(1, good // 2))
                good, bad = (trial, 0) if ok(trial) else (good - 1, trial)
        else:
            while good == bad:
                if bad >= cap:
                    return None
                trial = min(cap, max(bad + 1, math.ceil(bad * 1.5)))
                good, bad = (trial, bad) if ok(trial) else (trial, trial)
        while good - bad > 1:
            mid = (good + bad) // 2
            good, bad = (mid, bad) if ok(mid) else (good, mid)
        return good


def _key(launch: Launch) -> str:
    return json.dumps(dict(launch.spec), sort_keys=True, default=str)
