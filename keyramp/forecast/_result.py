"""A cell's launch forecast as a typed object, and its ``summary.json`` form (``forecast.*``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from keyramp.backends import StoreParams
from keyramp.forecast._band import HOTSPOT_MIN, OK_MAX, PEAK_OK_MAX, Band
from keyramp.forecast._design import KeysChoice
from keyramp.forecast._project import Projection
from keyramp.forecast._verdict import AT_RISK_HOTSPOT
from keyramp.profile import FORECAST_METRICS
from keyramp.results import (
    BandFigures,
    CellForecast,
    ForecastLaunch,
    ForecastProjection,
    ForecastStability,
    ForecastTimeline,
    ParamBounds,
    SensitivityEnd,
    SensitivityRow,
    written,
)

__all__ = ["Forecast", "Stability"]

_TIMELINE_POINTS = 120


@dataclass(frozen=True, kw_only=True)
class Stability:
    """The same forecast at twice the samples (another seed): how much sampling moves it."""

    samples: tuple[int, int]
    mid: tuple[float, float]  # throttled_fraction mid at the samples and at twice them
    max_difference: float  # over the low, mid and high of throttled_fraction
    verdicts: tuple[str, str]
    exact: bool  # nothing was sampled: both runs are the same model

    @property
    def same_verdict(self) -> bool:
        return self.verdicts[0] == self.verdicts[1]

    def to_doc(self) -> ForecastStability:
        return ForecastStability(samples=list(self.samples), throttled_fraction_mid=[round(v, 4) for v in self.mid],
                                 max_difference=round(self.max_difference, 4),
                                 verdict_at_twice_the_samples=self.verdicts[1], same_verdict=self.same_verdict,
                                 exact=self.exact)


def _timeline(band: Band) -> ForecastTimeline:
    mid = band.outcomes["mid"]
    stride = max(1, math.ceil(len(mid.t) / _TIMELINE_POINTS))
    doc = ForecastTimeline(
        t=[round(float(v), 1) for v in mid.t[::stride]],
        offered_ops_per_s=[round(float(v), 1) for v in mid.offered[::stride]],
        throttled={label: [round(float(v), 4) for v in o.throttled[::stride]] for label, o in band.outcomes.items()},
        served_ops_per_s={label: [round(float(v), 1) for v in o.served[::stride]]
                          for label, o in band.outcomes.items()},
    )
    return written(doc, "t", "offered_ops_per_s", "throttled", "served_ops_per_s")


#: What each verdict means (``forecast.criteria``).
_CRITERIA = {"ok": f"throttled ≤ {OK_MAX:.0%} and no 10-s step above {PEAK_OK_MAX:.0%}",
             "hotspot": f"throttled ≥ {HOTSPOT_MIN:.0%}", "at_risk": "in between",
             AT_RISK_HOTSPOT: "every point of the band throttles beyond ok: some at_risk, some hotspot",
             "uncertain": "the band reaches ok and something worse",
             "added_p99_ms": "the model's queueing at its utilisation cap: views leave it out where "
                             "the verdict is ok (nothing is throttled)"}
#: The keys of a forecast with a band, in the order written (then ``reason``, ``stability`` when set).
_BAND_KEYS = ("modelled", "launch", "params", "params_from", "verdict", "deciding_param", *FORECAST_METRICS,
              "verdicts", "sensitivity", "criteria", "projection", "timeline")


@dataclass(frozen=True, kw_only=True)
class Forecast:
    """One cell at one launch: the verdict over the parameter box, its band, and what it rests on.

    ``verdict`` None: no forecast (``reason`` says why). ``uncertain`` also when the recording
    contradicts the design without keys to project, or when twice the samples change the verdict
    between ok and worse (``at_risk-hotspot`` when both verdicts throttle).
    """

    backend: str
    launch: dict[str, Any]  # Launch.for_backend
    box: StoreParams
    verdict: str | None
    reason: str | None = None
    deciding_param: str | None = None
    band: Band | None = None
    keys: KeysChoice | None = None
    projection: Projection | None = None
    stability: Stability | None = None

    @property
    def throttled_fraction(self) -> dict[str, float | None] | None:
        return None if self.band is None else self.band.figures["throttled_fraction"]

    def _keys_doc(self, doc: ForecastProjection) -> ForecastProjection:
        """``doc`` with the keys check, when there is one (written last)."""
        assert self.keys is not None
        if self.keys.check is not None:
            doc.check = self.keys.check.to_doc()
        return doc

    def _projection(self) -> ForecastProjection:
        proj, keys = self.projection, self.keys
        assert proj is not None and keys is not None
        mix = proj.mix
        doc = ForecastProjection(
            keys=keys.keys,
            why=keys.why,
            ranges=["rows" if self.box.kind == "nodes" else "documents", *proj.index],
            append_points=proj.docs.points,
            samples=proj.samples,
            op_mix={op: round(v, 4) for op, v in mix.shares.items()},
            rows_per_op=round(mix.rows_per_op, 4),
            read_rows_share=round(mix.reads_per_op / mix.rows_per_op, 4) if mix.rows_per_op else 0.0,
            not_projected=list(mix.not_projected),
        )
        mid = self.band.points.get("mid") if self.band is not None else None
        if mid is not None and mid.limited_by is not None:
            doc.limited_by = mid.limited_by
        return self._keys_doc(written(doc, "keys", "why", "ranges", "append_points", "samples", "op_mix",
                                      "rows_per_op", "read_rows_share", "not_projected"))

    def to_doc(self) -> CellForecast:
        """``cells[id].forecast`` in summary.json: with a band, or (``band`` None) the verdict and why."""
        launch = ForecastLaunch.from_json(self.launch, where="forecast.launch")
        params = {name: ParamBounds(**r.to_json()) for name, r in self.box.ranges.items()}
        if self.band is None:
            doc = written(CellForecast(modelled=True, launch=launch, params=params, params_from=self.box.origin,
                                       verdict=self.verdict, reason=self.reason),
                          "modelled", "launch", "params", "params_from", "verdict", "reason")
            if self.keys is not None:
                doc.projection = self._keys_doc(written(ForecastProjection(keys=self.keys.keys, why=self.keys.why),
                                                        "keys", "why"))
            return doc
        band = self.band
        fig = {name: BandFigures(low=f["low"], mid=f["mid"], high=f["high"])
               for name, f in ((n, band.figures[n]) for n in FORECAST_METRICS)}
        doc = CellForecast(modelled=True, launch=launch, params=params, params_from=self.box.origin,
                           verdict=self.verdict, deciding_param=self.deciding_param,
                           throttled_fraction=fig["throttled_fraction"],
                           peak_throttled_fraction=fig["peak_throttled_fraction"], adapt_s=fig["adapt_s"],
                           added_p99_ms=fig["added_p99_ms"],
                           verdicts=dict(band.verdicts), sensitivity=[_row(s) for s in band.sensitivity],
                           criteria=dict(_CRITERIA), projection=self._projection(), timeline=_timeline(band))
        if self.reason:
            doc.reason = self.reason
        if self.stability is not None:
            doc.stability = self.stability.to_doc()
        return written(doc, *_BAND_KEYS)

    def to_json(self) -> dict[str, Any]:
        """``cells[id].forecast`` in summary.json (plain JSON)."""
        return self.to_doc().to_json()


def _row(s: dict[str, Any]) -> SensitivityRow:
    return SensitivityRow(param=s["param"], low=SensitivityEnd(**s["low"]), high=SensitivityEnd(**s["high"]),
                          swing=s["swing"])
