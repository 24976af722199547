"""The launch planner's searches, every step a forecast through the cell's ``Forecaster``.

* **sustainable**: the highest constant rate whose throttled share, once the store has
  split (the last quarter of a 2-hour constant launch), stays ≤ the limit — per end of the
  band: ``low`` at every point, ``mid`` at the mid point, ``high`` at the favourable one.
  On Bigtable the cluster is made large enough not to bind: the figure is the key design's.
* **ramp**: the 500/50/5-family ramp (start, growth per step, step length) that reaches the
  target soonest with the launch's throttled share ≤ the limit at every point of the band
  and no 10-s step above 25 % (the forecast's own ``ok`` bound): the largest start a new
  range takes, then for each growth the shortest step that passes, found by bisection.
* **fixes**: the smallest shard count of ``shard(N)#<the design's key>`` (or Bigtable node
  count) whose forecast at the target passes, with one fewer shown to fail.

Forecasts are memoised per (design, launch), and the ``Forecaster`` keeps its projections
per launch traffic, so the node search and the band ends reuse one projection per rate.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from keyramp._errors import UsageError
from keyramp.forecast._band import PEAK_OK_MAX
from keyramp.forecast._design import CellDesign
from keyramp.forecast._forecast import Forecaster
from keyramp.forecast._launch import Launch, cluster_stores
from keyramp.forecast._model import Outcome
from keyramp.forecast._params import StoreParams
from keyramp.forecast._plan import GOOGLE_RAMP, PlanCheck, Ramp, RampShape, RateBand
from keyramp.forecast._result import Forecast
from keyramp.forecast._stores import model_of, store_params

__all__ = ["GROWTHS", "HOLD_S", "PROBE_FACTOR", "STEADY_S", "Judged", "Planner", "shard_template"]

#: A constant launch this long has split wherever the design lets it; its last quarter is "steady".
STEADY_S = 7200.0
STEADY_TAIL = 0.25
#: A planned ramp is forecast with this long at the target after it gets there.
HOLD_S = 600.0
#: "No ceiling": the design sustains this many times the target.
PROBE_FACTOR = 10.0
RATE_PRECISION = 1.03
STEP_PRECISION = 1.1
STEP_RANGE_S = (20.0, 3600.0)
GROWTHS = (0.5, 1.0)
#: Start rates tried (ops/s): 500 × 2^k up to the target, and below 500 if a new range takes less.
_STARTS = tuple(500.0 * 2.0 ** k for k in range(-3, 12))
#: Named designs and the key part a shard prefix goes in front of (``shard(N)#seq``).
_SHARD_BASES = {"sequential": "seq", "padded_sequential": "seq", "prefixed_sequential": "seq", "sharded": "seq",
                "timestamp_only": "timestamp", "timestamp_first": "timestamp#seq"}
_LEADING_SHARD = re.compile(r"\s*shard\(\s*\d+\s*\)\s*#(.+)")


def shard_template(strategy: str, shards: int) -> str | None:
    """``shard(N)#<the design's key>`` for a design with append points, or None (no such template)."""
    from keyramp.keys import STRATEGIES, make_strategy

    base = _SHARD_BASES.get(strategy)
    if base is None and strategy not in STRATEGIES:
        match = _LEADING_SHARD.fullmatch(strategy)
        base = match.group(1) if match else strategy
    if base is None:
        return None
    template = f"shard({shards})#{base}"
    try:
        made = make_strategy(template)
    except UsageError:
        return None
    return template if made.append_points() else None


def tail_share(outcome: Outcome, duration_s: float) -> float:
    """Throttled share of the requests in the last ``STEADY_TAIL`` of the launch."""
    keep = outcome.t > duration_s * (1 - STEADY_TAIL) + 1e-9
    w = (outcome.offered if outcome.attempts is None else outcome.attempts)[keep]
    total = float(w.sum())
    return float((outcome.throttled[keep] * w).sum() / total) if total > 0 else 0.0


@dataclass(frozen=True, kw_only=True)
class Judged:
    """A forecast and what the plan makes of it: throttled share low/mid/high over the band, and
    whether it passes the limit (at every point, at the mid, at any point)."""

    forecast: Forecast
    launch: Launch
    measure: str
    shares: Mapping[str, float]
    passes: bool
    peak: Mapping[str, float | None] | None = None

    def passes_at(self, end: str, limit: float) -> bool:
        """The band end ``end`` of a rate (low: every point passes; high: the favourable point does)."""
        return self.forecast.band is not None and self.shares[{"low": "high", "mid": "mid", "high": "low"}[end]] <= limit

    def check(self) -> PlanCheck:
        launch = self.forecast.launch
        return PlanCheck(launch=f"{launch['description']}" + (f" on {launch['nodes']} {launch['storage'].upper()} "
                                                               f"node(s)" if launch.get("nodes") else ""),
                         measure=self.measure, passes=self.passes, verdict=self.forecast.verdict,
                         throttled_fraction={k: round(v, 4) for k, v in self.shares.items()},
                         peak_throttled_fraction=None if self.peak is None else dict(self.peak),
                         nodes=launch.get("nodes"), reason=self.forecast.reason)


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
        self._memo: dict[tuple[str, str, bool], Judged] = {}
        self.forecasts = 0

    # -- forecasts ---------------------------------------------------------------------------

    def forecaster(self, strategy: str) -> Forecaster:
        """The cell's own, or one for a design the cell did not run (its keys regenerated)."""
        if strategy not in self._forecasters:
            self._forecasters[strategy] = Forecaster(replace(self.design, strategy=strategy, measured=None,
                                                             schedule=None))
        return self._forecasters[strategy]

    def _launch(self, spec: dict[str, Any], nodes: int | None) -> Launch:
        if self.cluster:
            spec = {**spec, "nodes": int(nodes or 1), "storage": self.storage}
        return Launch.from_data(spec)

    def _judge(self, strategy: str, launch: Launch, measure: str, *, full: bool = False) -> Judged:
        key = (strategy, json.dumps(dict(launch.spec), sort_keys=True, default=str), full)
        if key not in self._memo:
            self.forecasts += 1
            fc = self.forecaster(strategy).forecast(launch, boxes=self.boxes, stability=full,
                                                    samples=None if full else self.samples)
            self._memo[key] = _judged(fc, launch, measure, self.throttle)
        return self._memo[key]

    def steady(self, strategy: str, rate: float, nodes: int | None = None, *, full: bool = False) -> Judged:
        """A constant launch at ``rate`` for ``STEADY_S``, judged on its last quarter."""
        spec = {"kind": "constant", "rate": float(rate), "duration_s": STEADY_S}
        return self._judge(strategy, self._launch(spec, nodes if nodes is not None else self.nodes), "steady",
                           full=full)

    def ramp(self, strategy: str, shape: RampShape, nodes: int | None = None, *, full: bool = False) -> Judged:
        """``shape`` up to the target and ``HOLD_S`` there, judged on the whole launch."""
        launch = self._launch(shape.spec(self.target, hold_s=HOLD_S), nodes if nodes is not None else self.nodes)
        return self._judge(strategy, launch, "launch", full=full)

    def unbounded_nodes(self, rate: float) -> int | None:
        """Bigtable: nodes enough that the cluster cannot be what limits ``rate`` (the key design is)."""
        if not self.cluster:
            return None
        mix, r = self.design.mix, self.box.ranges
        load = rate * (mix.writes_per_op / r["node_write_rows_per_s"].low + mix.reads_per_op /
                       r["node_read_rows_per_s"].low)
        return max(1, math.ceil(1.5 * load) + 1)

    # -- what the design sustains --------------------------------------------------------------

    def sustainable(self, strategy: str) -> tuple[RateBand | None, float]:
        """The band of rates the design sustains once split (None: no ceiling up to the probe), and
        the probe rate."""
        probe_rate = PROBE_FACTOR * self.target
        nodes = self.unbounded_nodes(probe_rate)
        seen: list[Judged] = []

        def at(rate: float) -> Judged:
            j = self.steady(strategy, rate, nodes)
            seen.append(j)
            return j

        probe = at(probe_rate)
        if probe.forecast.band is None or probe.passes:
            return None, probe_rate
        ends = {end: None if probe.passes_at(end, self.throttle) else self._ceiling(at, seen, end)
                for end in ("low", "mid", "high")}
        return RateBand(**ends), probe_rate

    def _ceiling(self, at: Callable[[float], Judged], seen: list[Judged], end: str) -> float:
        """The highest rate passing at ``end``: regula falsi on log rate with bisection safeguards."""
        measure = {"low": "high", "mid": "mid", "high": "low"}[end]
        limit = self.throttle

        def bracket() -> tuple[Judged | None, Judged]:
            ok = [j for j in seen if j.shares[measure] <= limit]
            bad = [j for j in seen if j.shares[measure] > limit]
            return (max(ok, key=_rate) if ok else None), min(bad, key=_rate)

        for i in range(10):
            lo, hi = bracket()
            if lo is not None and _rate(hi) / _rate(lo) <= RATE_PRECISION:
                break
            s_hi = hi.shares[measure]
            if lo is None:  # above the ceiling the store serves about the same: rate × (1 - share)
                x = _rate(hi) * (1 - s_hi) / (1 - limit)
                x = min(x, _rate(hi) / RATE_PRECISION) if x > 0 else _rate(hi) / 4
            elif i % 2:
                x = math.sqrt(_rate(lo) * _rate(hi))
            else:
                s_lo = lo.shares[measure]
                frac = (limit - s_lo) / max(s_hi - s_lo, 1e-12)
                x = math.exp(math.log(_rate(lo)) + frac * (math.log(_rate(hi)) - math.log(_rate(lo))))
                x = min(max(x, _rate(lo) * RATE_PRECISION ** 0.5), _rate(hi) / RATE_PRECISION ** 0.5)
            if x < 1.0:
                return 0.0
            at(x)
        lo, _ = bracket()
        return 0.0 if lo is None else _rate(lo)

    # -- the fastest safe ramp -------------------------------------------------------------------

    def fastest_ramp(self, strategy: str, nodes: int | None = None) -> Ramp | None:
        """The 500/50/5-family ramp that reaches the target soonest and passes, confirmed by a full
        forecast (twice the samples); None when no ramp of the family passes."""
        start = self._start(strategy, nodes)
        if start is None:
            return None
        shapes = [RampShape(start_ops=self.target, growth=GOOGLE_RAMP.growth, step_s=GOOGLE_RAMP.step_s)] \
            if start >= self.target else [s for g in GROWTHS if (s := self._step(strategy, nodes, start, g))]
        shapes.sort(key=lambda s: s.time_to(self.target))
        for shape in shapes:
            for _ in range(3):  # the full forecast may disagree near the boundary: a slightly longer step
                full = self.ramp(strategy, shape, nodes, full=True)
                if full.passes:
                    google = self.ramp(strategy, GOOGLE_RAMP, nodes, full=True)
                    return Ramp(shape=shape, target_ops_per_s=self.target, hold_s=HOLD_S, check=full.check(),
                                google=google.check())
                if shape.time_to(self.target) == 0:
                    break
                shape = replace(shape, step_s=math.ceil(shape.step_s * STEP_PRECISION))
        return None

    def _start(self, strategy: str, nodes: int | None) -> float | None:
        """The largest start of ``_STARTS`` (or the target) a new range takes, held for ``HOLD_S``."""
        starts = [s for s in _STARTS if s < self.target] + [self.target]

        def ok(i: int) -> bool:
            spec = {"kind": "constant", "rate": starts[i], "duration_s": HOLD_S}
            return self._judge(strategy, self._launch(spec, nodes if nodes is not None else self.nodes),
                               "launch").passes

        first = starts.index(min(starts, key=lambda s: abs(s - GOOGLE_RAMP.start_ops)))
        if not ok(first):
            lower = [i for i in range(first - 1, -1, -1) if ok(i)]
            return starts[lower[0]] if lower else None
        lo, hi = first, len(starts)  # starts[lo] passes; starts[hi] fails (or is past the end)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
        return starts[lo]

    def _step(self, strategy: str, nodes: int | None, start: float, growth: float) -> RampShape | None:
        """The shortest step (within ``STEP_PRECISION``) of ramps from ``start`` by ``growth`` that passes."""
        def shape(step: float) -> RampShape:
            return RampShape(start_ops=start, growth=growth, step_s=float(math.ceil(step)))

        def ok(step: float) -> bool:
            return self.ramp(strategy, shape(step), nodes).passes

        low, high = STEP_RANGE_S
        good, bad = GOOGLE_RAMP.step_s, GOOGLE_RAMP.step_s
        if ok(good):  # shorter by halves until one fails
            while bad == good:
                if good <= low:
                    return shape(good)
                trial = max(low, good / 2)
                good, bad = (trial, trial) if ok(trial) else (good, trial)
        else:  # longer by doubles until one passes
            while bad == good:
                if bad >= high:
                    return None
                trial = min(high, bad * 2)
                good, bad = (trial, bad) if ok(trial) else (trial, trial)
        while good / bad > STEP_PRECISION:
            mid = math.sqrt(good * bad)
            good, bad = (mid, bad) if ok(mid) else (good, mid)
        return shape(good)

    # -- fixes ----------------------------------------------------------------------------------

    def smallest(self, test: Callable[[int], Judged], guess: int, *,
                 cap: int) -> tuple[int, Judged, Judged | None] | None:
        """The smallest n ≥ 1 with ``test(n).passes``, searched from ``guess`` (one fewer first, then
        galloping, then bisection): n, its judgement and that of n - 1 (which fails); None when
        nothing up to ``cap`` passes."""
        results: dict[int, Judged] = {}

        def passes(k: int) -> bool:
            if k not in results:
                results[k] = test(k)
            return results[k].passes

        good = bad = max(1, min(guess, cap))
        if passes(good):
            bad = 0
            while bad == 0 and good > 1:
                if not passes(good - 1):
                    bad = good - 1
                    break
                trial = max(1, good - max(1, good // 2))
                good, bad = (trial, 0) if passes(trial) else (good - 1, trial)
        else:
            while good == bad:
                if bad >= cap:
                    return None
                trial = min(cap, max(bad + 1, math.ceil(bad * 1.5)))
                good, bad = (trial, bad) if passes(trial) else (trial, trial)
        while good - bad > 1:
            mid = (good + bad) // 2
            good, bad = (mid, bad) if passes(mid) else (good, mid)
        if good > 1:
            passes(good - 1)
        return good, results[good], results.get(good - 1)


def _rate(j: Judged) -> float:
    return float(j.launch.spec["rate"])


def _judged(fc: Forecast, launch: Launch, measure: str, limit: float) -> Judged:
    """The share of ``fc`` the plan judges by: the steady tail of every point, or the launch-wide band."""
    band = fc.band
    if band is None:
        return Judged(forecast=fc, launch=launch, measure=measure, shares={"low": 1.0, "mid": 1.0, "high": 1.0},
                      passes=False)
    if measure == "steady":
        tails = {label: tail_share(o, launch.duration_s) for label, o in band.points.items()}
        values = np.array(list(tails.values()))
        shares = {"low": float(values.min()), "mid": tails["mid"], "high": float(values.max())}
        return Judged(forecast=fc, launch=launch, measure=measure, shares=shares, passes=shares["high"] <= limit)
    thr, peak = band.figures["throttled_fraction"], band.figures["peak_throttled_fraction"]
    shares = {k: float(thr[k] or 0.0) for k in ("low", "mid", "high")}
    passes = shares["high"] <= limit and float(peak["high"] or 0.0) <= PEAK_OK_MAX
    return Judged(forecast=fc, launch=launch, measure=measure, shares=shares, passes=passes, peak=peak)
