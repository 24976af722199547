"""Bands, not points: the model at the corners, the middle and one-at-a-time ends of the parameter box.

The band of each figure is its range over every evaluated point: the favourable and the
unfavourable corner (every parameter at the end that helps / hurts the store), the mid
point, and each varied parameter at its low and its high end with the others at mid
(which also gives the sensitivity). The verdict is ``ok``, ``at_risk`` or ``hotspot`` when
every point agrees; ``at_risk-hotspot`` when every point throttles beyond the ok limit but
some are at_risk and some hotspot (the launch is not fine anywhere in the box); ``uncertain``
only when the band reaches ``ok`` and something worse. The last two name the parameter that
decides it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from keyramp.backends import StoreParams
from keyramp.forecast._model import Outcome
from keyramp.forecast._verdict import span_verdict
from keyramp.profile import FORECAST_METRICS

__all__ = ["HOTSPOT_MIN", "OK_MAX", "PEAK_OK_MAX", "Band", "PointOutcomes", "band_points", "evaluate_band",
           "verdict_of"]

#: Launch-wide throttled share at most this (and a peak step at most PEAK_OK_MAX): ok.
OK_MAX: Final = 0.05
PEAK_OK_MAX: Final = 0.25
#: Launch-wide throttled share at least this: hotspot. In between: at_risk.
HOTSPOT_MIN: Final = 0.30


def verdict_of(outcome: Outcome) -> str:
    thr = outcome.throttled_fraction
    if thr >= HOTSPOT_MIN:
        return "hotspot"
    if thr <= OK_MAX and outcome.peak_throttled_fraction <= PEAK_OK_MAX:
        return "ok"
    return "at_risk"


def _figures(outcome: Outcome) -> dict[str, float | None]:
    return {
        "throttled_fraction": outcome.throttled_fraction,
        "peak_throttled_fraction": outcome.peak_throttled_fraction,
        "adapt_s": outcome.adapt_s,
        "added_p99_ms": outcome.added_p99,
    }


def _span(values: list[float | None], mid: float | None, *, digits: int) -> dict[str, float | None]:
    """low/high over the points; None (never adapts) ranks above every number."""
    known = [v for v in values if v is not None]
    high = None if any(v is None for v in values) else max(known)

    def r(v: float | None) -> float | None:
        return None if v is None else round(v, digits)

    return {"low": r(min(known)) if known else None, "mid": r(mid), "high": r(high)}


@dataclass(frozen=True, kw_only=True)
class Band:
    figures: dict[str, dict[str, float | None]]
    verdict: str
    deciding: str | None
    verdicts: dict[str, str]  # point label -> verdict
    sensitivity: list[dict[str, Any]]
    #: every evaluated point's outcome by label (the launch planner reads their timelines)
    points: dict[str, Outcome] = field(default_factory=dict)

    @property
    def outcomes(self) -> dict[str, Outcome]:
        """The favourable corner, the mid point and the unfavourable corner, for timelines."""
        return {k: self.points[k] for k in ("favourable", "mid", "unfavourable")}


def varied(box: StoreParams, inert: Collection[str] = ()) -> list[str]:
    """The parameters whose own ends a band runs: those with a width that can act on this launch
    (``inert``: cannot, e.g. a per-key limit far above what any key of the design takes)."""
    return [name for name in box.varied() if name not in inert]


def band_points(box: StoreParams, inert: Collection[str] = ()) -> dict[str, dict[str, float]]:
    """The points a band evaluates, by label: both corners, the mid point, and each varied
    parameter at its low and its high end with the others at mid (``inert``: parameters that cannot
    act on this launch get no points of their own: any value of theirs gives the same outcome)."""
    mid_point = box.mid()
    points: dict[str, dict[str, float]] = {
        "favourable": box.corner(favourable=True),
        "mid": mid_point,
        "unfavourable": box.corner(favourable=False),
    }
    for name in varied(box, inert):
        r = box.ranges[name]
        points[f"{name}=low"] = {**mid_point, name: r.low}
        points[f"{name}=high"] = {**mid_point, name: r.high}
    return points


class PointOutcomes:
    """Outcomes by parameter point, with the band's shortcuts: a point equal to one already run (an
    OAT end at the mid, e.g. fan-out 2) runs once, and a point that throttled nothing stands for the
    points that differ from it only in ``only_when_throttled`` parameters (see ``evaluate_band``)."""

    def __init__(self, box: StoreParams, only_when_throttled: Mapping[str, bool] | None = None) -> None:
        self._names = list(box.ranges)
        self._special = dict(only_when_throttled or {})
        self._rest = [name for name in self._names if name not in self._special]
        self._done: dict[tuple[float, ...], Outcome] = {}
        self._clean: dict[tuple[float, ...], list[tuple[Mapping[str, float], Outcome]]] = {}

    def get(self, point: Mapping[str, float]) -> Outcome | None:
        done = self._done.get(tuple(point[name] for name in self._names))
        if done is not None:
            return done
        same = [o for p, o in self._clean.get(tuple(point[name] for name in self._rest), ())
                if all(any_value or point[name] <= p[name] for name, any_value in self._special.items() if name in p)]
        return same[0] if same else None

    def put(self, point: Mapping[str, float], outcome: Outcome) -> Outcome:
        self._done[tuple(point[name] for name in self._names)] = outcome
        if not outcome.throttled.any():
            self._clean.setdefault(tuple(point[name] for name in self._rest), []).append((point, outcome))
        return outcome


def evaluate_band(box: StoreParams, run: Callable[[Mapping[str, float]], Outcome], *,
                  only_when_throttled: Mapping[str, bool] | None = None,
                  known: Mapping[str, Outcome] | None = None, inert: Collection[str] = ()) -> Band:
    """Run the model over the box's points; ``run(point)`` simulates one point; ``known``: outcomes of
    points (by label) already simulated on the same projection (the launch planner's).

    ``only_when_throttled``: parameters that change nothing unless something is throttled
    (retries re-offer throttled requests), each with whether that holds at any value (True)
    or only at lower ones (False: a longer wait can start throttling). A point that
    throttled nothing stands for the points that differ from it only there.
    """
    cache = PointOutcomes(box, only_when_throttled)
    outcomes = {}
    for label, point in band_points(box, inert).items():
        outcome = cache.get(point)
        if outcome is None:
            outcome = cache.put(point, (known or {}).get(label) or run(point))
        outcomes[label] = outcome
    verdicts = {label: verdict_of(o) for label, o in outcomes.items()}
    figs = {label: _figures(o) for label, o in outcomes.items()}
    figures = {}
    for fig in FORECAST_METRICS:
        digits = 4 if fig.endswith("fraction") else 1
        figures[fig] = _span([f[fig] for f in figs.values()], figs["mid"][fig], digits=digits)
    sensitivity: list[dict[str, Any]] = []
    for name in varied(box, inert):
        lo, hi = outcomes[f"{name}=low"], outcomes[f"{name}=high"]
        r = box.ranges[name]
        sensitivity.append(
            {
                "param": name,
                "low": {
                    "value": r.low,
                    "throttled_fraction": round(lo.throttled_fraction, 4),
                    "verdict": verdicts[f"{name}=low"],
                },
                "high": {
                    "value": r.high,
                    "throttled_fraction": round(hi.throttled_fraction, 4),
                    "verdict": verdicts[f"{name}=high"],
                },
                "swing": round(abs(hi.throttled_fraction - lo.throttled_fraction), 4),
            }
        )
    sensitivity.sort(key=lambda s: -s["swing"])
    verdict = span_verdict(verdicts.values())
    if len(set(verdicts.values())) == 1:
        return Band(figures=figures, verdict=verdict, deciding=None, verdicts=verdicts,
                    sensitivity=sensitivity, points=outcomes)
    # The parameter whose own range flips the verdict (the largest swing among those); if none
    # does alone, the combination does: the largest swing is named.
    flips = [s for s in sensitivity if s["low"]["verdict"] != s["high"]["verdict"]]
    deciding = (flips or sensitivity or [{"param": None}])[0]["param"]
    return Band(figures=figures, verdict=verdict, deciding=deciding, verdicts=verdicts, sensitivity=sensitivity,
                points=outcomes)
