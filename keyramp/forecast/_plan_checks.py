"""How the launch planner judges a launch: a full forecast (``Judged``, what a plan reports) or the
band's points one at a time (``Trial``, what its searches ask).

Two measures: ``steady`` — the throttled share of the requests in the last quarter of a
constant launch (the store has split by then) — and ``launch`` — the throttled share of the
whole launch, with no 10-s step above the forecast's own ``ok`` bound (``PEAK_OK_MAX``). A
point passes when its share is at most the limit. A ``Trial`` evaluates only the points its
question needs: "does every point pass" stops at the first that fails (the unfavourable
corner first: it usually decides), "does the mid point pass" and "does the favourable corner
pass" run one. The answers are the ones the full band gives; the plan's reported checks are
full forecasts, which reuse the points a trial ran.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from keyramp.backends import StoreParams
from keyramp.core import fmt
from keyramp.forecast._band import PEAK_OK_MAX, PointOutcomes
from keyramp.forecast._forecast import ONLY_WHEN_THROTTLED
from keyramp.forecast._launch import Launch
from keyramp.forecast._model import Outcome
from keyramp.forecast._result import Forecast
from keyramp.results import ForecastLaunch, PlanCheck

__all__ = ["STEADY_TAIL", "Judged", "Trial", "judged", "tail_share"]

#: The steady measure reads this last share of a constant launch.
STEADY_TAIL = 0.25
_ENDS = ("low", "mid", "high")
#: The point a band end other than ``low`` (every point) is read at.
_END_POINT = {"mid": "mid", "high": "favourable"}


def tail_share(outcome: Outcome, duration_s: float) -> float:
    """Throttled share of the requests in the last ``STEADY_TAIL`` of the launch."""
    keep = outcome.t > duration_s * (1 - STEADY_TAIL) + 1e-9
    w = (outcome.offered if outcome.attempts is None else outcome.attempts)[keep]
    total = float(w.sum())
    return float((outcome.throttled[keep] * w).sum() / total) if total > 0 else 0.0


def _point(outcome: Outcome | None, measure: str, duration_s: float, limit: float) -> tuple[float, bool]:
    """(share, passes) of one point."""
    if outcome is None:
        return math.inf, False
    if measure == "steady":
        share = tail_share(outcome, duration_s)
        return share, share <= limit
    share = outcome.throttled_fraction
    return share, share <= limit and outcome.peak_throttled_fraction <= PEAK_OK_MAX


@dataclass(frozen=True, kw_only=True)
class Judged:
    """A full forecast and what the plan makes of it: the share low / mid / high over the band's
    points, and whether every point passes."""

    forecast: Forecast
    launch: Launch
    measure: str
    shares: Mapping[str, float]
    passes: bool
    peak: Mapping[str, float | None] | None = None

    def check(self) -> PlanCheck:
        launch = ForecastLaunch.from_json(self.forecast.launch, where="forecast.launch")
        nodes = f" on {fmt.plural(launch.nodes, str(launch.storage).upper() + ' node')}" if launch.nodes else ""
        return PlanCheck(launch=f"{launch.description}{nodes}", measure=self.measure, passes=self.passes,
                         verdict=self.forecast.verdict, throttled_fraction={k: round(v, 4) for k, v in
                                                                            self.shares.items()},
                         peak_throttled_fraction=None if self.peak is None else dict(self.peak),
                         nodes=launch.nodes, reason=self.forecast.reason)

    @property
    def points(self) -> dict[str, Outcome]:
        return {} if self.forecast.band is None else self.forecast.band.points


def judged(fc: Forecast, launch: Launch, measure: str, limit: float) -> Judged:
    """``fc`` judged by ``measure`` (a forecast without a band never passes)."""
    band = fc.band
    if band is None:
        return Judged(forecast=fc, launch=launch, measure=measure, shares=dict.fromkeys(_ENDS, 1.0), passes=False)
    if measure == "steady":
        tails = {label: tail_share(o, launch.duration_s) for label, o in band.points.items()}
        shares = {"low": min(tails.values()), "mid": tails["mid"], "high": max(tails.values())}
        return Judged(forecast=fc, launch=launch, measure=measure, shares=shares, passes=shares["high"] <= limit)
    thr, peak = band.figures["throttled_fraction"], band.figures["peak_throttled_fraction"]
    shares = {k: float(thr[k] or 0.0) for k in _ENDS}
    passes = shares["high"] <= limit and float(peak["high"] or 0.0) <= PEAK_OK_MAX
    return Judged(forecast=fc, launch=launch, measure=measure, shares=shares, passes=passes, peak=peak)


class Trial:
    """One launch, its band's points evaluated as the questions asked need them (see the module doc).

    ``forecaster``: the design's ``Forecaster``; ``seed``: outcomes already known (a full forecast's).
    """

    def __init__(self, *, forecaster: Any, launch: Launch, box: StoreParams, measure: str, limit: float,
                 samples: int | None = None, seed: Mapping[str, Outcome] | None = None) -> None:
        self.launch, self.measure, self.limit = launch, measure, limit
        self._forecaster, self._box, self._samples = forecaster, box, samples
        self._points = forecaster.band_points(launch, box, samples)
        self._cache = PointOutcomes(box, ONLY_WHEN_THROTTLED)
        middle = [lb for lb in self._points if lb not in ("favourable", "mid", "unfavourable")]
        self._worst_first = ["unfavourable", "mid", *middle, "favourable"]
        self.outcomes: dict[str, Outcome] = dict(seed or {})
        for label, outcome in self.outcomes.items():
            self._cache.put(self._points[label], outcome)
        self._known: dict[str, tuple[float, bool]] = {
            label: _point(o, measure, launch.duration_s, limit) for label, o in self.outcomes.items()}

    @property
    def rate(self) -> float:
        return float(self.launch.spec["rate"])

    def _at(self, label: str) -> tuple[float, bool]:
        if label not in self._known:
            outcome = self._cache.get(self._points[label])
            if outcome is None:
                outcome = self._forecaster.outcome(self.launch, label, box=self._box, samples=self._samples)
                if outcome is not None:
                    self._cache.put(self._points[label], outcome)
            if outcome is not None:
                self.outcomes[label] = outcome
            self._known[label] = _point(outcome, self.measure, self.launch.duration_s, self.limit)
        return self._known[label]

    def passes(self, end: str = "low") -> bool:
        """Whether the launch passes at band end ``end``: every point (low), the mid point, the favourable
        corner (high: every parameter at the end that helps the store)."""
        if end != "low":
            return self._at(_END_POINT[end])[1]
        return all(self._at(label)[1] for label in self._worst_first)

    def share(self, end: str) -> float:
        """The throttled share at ``end`` (low: the worst of the points evaluated so far; a search's estimate)."""
        if end != "low":
            return self._at(_END_POINT[end])[0]
        return max([share for share, _ in self._known.values()] or [self._at("unfavourable")[0]])
