"""The launch forecast of a cell as a view model: bands, sources, sensitivity and a small chart.

Defensive like the rest of the view models: a missing or hand-edited forecast degrades
to None or empty rows, never to a 500. The chart is an inline SVG drawn from numbers
only (no text from the file goes into it).
"""

from __future__ import annotations

from typing import Any

from keyramp.backends import param_name
from keyramp.core import fmt
from keyramp.forecast import (
    NO_THROTTLING,
    VERDICT_RANK,
    band_text,
    figure_text,
    forecast_line,
    forecast_short,
    throttles_nothing,
)
from keyramp.results import (
    BandFigures,
    CellForecast,
    ForecastProjection,
    ForecastStability,
    ForecastTimeline,
    KeysCheck,
    ParamBounds,
    SensitivityRow,
    num,
)
from keyramp.web._axes import Frame

__all__ = ["forecast_view", "keys_sentence"]

_FIGURES = (
    ("throttled_fraction", "throttled share of launch operations", "%"),
    ("peak_throttled_fraction", "worst 10-s step", "%"),
    ("adapt_s", "adapts in (first to last throttled step; never: still throttled at the end)", " s"),
    ("added_p99_ms", "added p99 queueing, worst step", " ms"),
)
#: The y axis ends at the first of these at or above the highest throttled share drawn.
_Y_TOPS = (0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)
#: The lines, in drawing order, with their legend (the band's own points).
_LINES = (("favourable", "favourable corner (every parameter at the end that helps the store)"),
          ("unfavourable", "unfavourable corner"), ("mid", "mid point"))


def _chart(timeline: ForecastTimeline | None) -> dict[str, Any] | None:
    """The throttled share over the launch at the band's three kept points, with axes (ticks in
    the one format), a legend, and None when there is nothing to draw."""
    if timeline is None:
        return None
    t = [v for v in (num(x) for x in timeline.t) if v is not None]
    throttled = timeline.throttled
    if len(t) < 2 or not throttled:
        return None
    series = {label: throttled.get(label) or [] for label, _ in _LINES}
    peak = max((v for ys in series.values() for v in map(num, ys) if v is not None), default=0.0)
    frame = Frame(x_end=max(t[-1], 1e-9), y_top=next((y for y in _Y_TOPS if y >= peak), 1.0))

    def points(ys: list[Any]) -> str:
        return frame.polyline((x, v) for x, y in zip(t, ys, strict=False) if (v := num(y)) is not None)

    return {**frame.doc(y_text=fmt.percent, x_title="time since the launch started", y_title="throttled share"),
            "lines": [{"name": label, "legend": legend, "points": points(series[label])} for label, legend in _LINES],
            "end": fmt.duration(t[-1])}


def _bands(fc: CellForecast) -> list[dict[str, Any]]:
    bands = []
    for key, label, unit in _FIGURES:
        if key == "added_p99_ms" and fc.verdict == "ok":
            continue  # the model's queueing at its utilisation cap, not a latency: nothing is throttled
        band = fc.band(key)
        mid = None if band is None else band.mid
        bands.append({"name": key, "label": label, "text": figure_text(fc, key),
                      "mid": band_text(BandFigures(low=mid, high=mid), unit=unit)})
    return bands


def _param(name: str, p: ParamBounds) -> dict[str, Any]:
    source = p.source or ""
    return {"name": name, "low": num(p.low), "mid": num(p.mid), "high": num(p.high), "unit": p.unit,
            "published": p.published is True, "source": source, "source_is_url": source.startswith("https://"),
            "note": p.note}


def _sensitivity(s: SensitivityRow) -> dict[str, Any]:
    lo, hi = s.low, s.high
    return {"param": s.param, "name": param_name(s.param or ""), "swing": num(s.swing),
            "low": num(lo.value), "low_throttled": num(lo.throttled_fraction), "low_verdict": lo.verdict,
            "high": num(hi.value), "high_throttled": num(hi.throttled_fraction), "high_verdict": hi.verdict}


def keys_sentence(keys_from: str | None, why: str | None) -> str:
    """Where the projected keys came from, said once: ``Keys regenerated from the strategy …``, never
    ``Keys regenerated: keys regenerated from …`` (the reason often names its source itself)."""
    why = (why or "").strip()
    source = f"keys {keys_from}" if keys_from else "keys"
    if why.lower().startswith(source.lower()):
        return why[:1].upper() + why[1:]
    return f"{source.capitalize()}: {why}" if why else source.capitalize()


def _projection(projection: ForecastProjection | None) -> dict[str, Any]:
    proj = projection or ForecastProjection()
    check = proj.check or KeysCheck()
    # "keys_from", not "keys": a template's fc.projection.keys is the dict's own keys() method
    return {"keys_from": proj.keys, "why": proj.why, "keys_text": keys_sentence(proj.keys, proj.why),
            "ranges": list(proj.ranges),
            "append_points": num(proj.append_points), "not_projected": list(proj.not_projected),
            "measured_hot1": num(check.measured_hottest_1pct_share),
            "regenerated_hot1": num(check.regenerated_hottest_1pct_share), "agrees": check.agrees}


def _stability(stability: ForecastStability | None) -> dict[str, Any] | None:
    if stability is None or stability == ForecastStability():
        return None
    return {"samples": [num(v) for v in stability.samples], "difference": num(stability.max_difference),
            "same_verdict": stability.same_verdict is not False, "exact": stability.exact is True}


def forecast_view(fc: CellForecast | None) -> dict[str, Any] | None:
    if fc is None or (fc == CellForecast() and not fc.extra):
        return None
    verdict = fc.verdict
    launch = fc.launch.to_json() if fc.launch is not None else {}
    return {
        "verdict": verdict,
        "verdict_class": verdict if verdict in VERDICT_RANK else "none",
        "deciding_param": fc.deciding_param,
        "deciding_name": param_name(fc.deciding_param) if fc.deciding_param else None,
        "short": forecast_short(fc),
        "line": forecast_line(fc),
        "reason": fc.reason,
        "launch": {k: v for k, v in launch.items() if isinstance(v, int | float | str)},
        "bands": _bands(fc),
        "params": [_param(name, p) for name, p in fc.params.items()],
        "params_from": fc.params_from,
        "sensitivity": [_sensitivity(s) for s in fc.sensitivity],
        "projection": _projection(fc.projection),
        "stability": _stability(fc.stability),
        # an ok cell that throttles nothing says so in a line instead of drawing an empty plot
        "no_throttling": NO_THROTTLING if throttles_nothing(fc) else None,
        "chart": None if throttles_nothing(fc) else _chart(fc.timeline),
    }
