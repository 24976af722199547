"""The launch forecast of a cell as a view model: bands, sources, sensitivity and a small chart.

Defensive like the rest of the view models: a missing or hand-edited forecast degrades
to None or empty rows, never to a 500. The chart is an inline SVG drawn from numbers
only (no text from the file goes into it).
"""

from __future__ import annotations

from typing import Any

from keyramp import _format as fmt
from keyramp.forecast._text import (
    NO_THROTTLING,
    band_text,
    figure_text,
    forecast_line,
    forecast_short,
    throttles_nothing,
)
from keyramp.forecast._verdict import VERDICT_RANK
from keyramp.results._values import as_dict, as_list, num, text

__all__ = ["forecast_view"]

_FIGURES = (
    ("throttled_fraction", "throttled share of launch operations", "%"),
    ("peak_throttled_fraction", "worst 10-s step", "%"),
    ("adapt_s", "adapts in (first to last throttled step; never: still throttled at the end)", " s"),
    ("added_p99_ms", "added p99 queueing, worst step", " ms"),
)
_W, _H = 520.0, 170.0
#: The plot area inside the SVG: room for the y ticks on the left and the x ticks below.
_LEFT, _RIGHT, _TOP, _BOTTOM = 48.0, 508.0, 8.0, 132.0
#: The y axis ends at the first of these at or above the highest throttled share drawn.
_Y_TOPS = (0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)
#: The lines, in drawing order, with their legend (the band's own points).
_LINES = (("favourable", "favourable corner (every parameter at the end that helps the store)"),
          ("unfavourable", "unfavourable corner"), ("mid", "mid point"))


def _polyline(t: list[float], ys: list[Any], top: float) -> str:
    end = max(t[-1], 1e-9)
    pts = []
    for x, y in zip(t, ys, strict=False):
        v = num(y)
        if v is not None:
            px = _LEFT + x / end * (_RIGHT - _LEFT)
            py = _BOTTOM - min(max(v, 0.0), top) / top * (_BOTTOM - _TOP)
            pts.append(f"{px:.1f},{py:.1f}")
    return " ".join(pts)


def _chart(timeline: dict[str, Any]) -> dict[str, Any] | None:
    """The throttled share over the launch at the band's three kept points, with axes (ticks in
    the one format), a legend, and None when there is nothing to draw."""
    t = [v for v in (num(x) for x in as_list(timeline.get("t"))) if v is not None]
    throttled = as_dict(timeline.get("throttled"))
    if len(t) < 2 or not throttled:
        return None
    series = {label: as_list(throttled.get(label)) for label, _ in _LINES}
    peak = max((v for ys in series.values() for v in map(num, ys) if v is not None), default=0.0)
    top = next((y for y in _Y_TOPS if y >= peak), 1.0)
    x_ticks = [{"x": round(_LEFT + f * (_RIGHT - _LEFT), 1), "text": fmt.duration(f * t[-1])} for f in (0, 0.5, 1)]
    y_ticks = [{"y": round(_BOTTOM - f * (_BOTTOM - _TOP), 1), "text": fmt.percent(f * top)} for f in (0, 0.5, 1)]
    return {"width": _W, "height": _H, "left": _LEFT, "right": _RIGHT, "top": _TOP, "bottom": _BOTTOM,
            "lines": [{"name": label, "legend": legend, "points": _polyline(t, series[label], top)}
                      for label, legend in _LINES],
            "x_ticks": x_ticks, "y_ticks": y_ticks, "end": fmt.duration(t[-1])}


def forecast_view(raw: object) -> dict[str, Any] | None:
    fc = as_dict(raw)
    if not fc:
        return None
    bands = []
    for key, label, unit in _FIGURES:
        if key == "added_p99_ms" and fc.get("verdict") == "ok":
            continue  # the model's queueing at its utilisation cap, not a latency: nothing is throttled
        band = as_dict(fc.get(key))
        bands.append({"name": key, "label": label, "text": figure_text(fc, key),
                      "mid": band_text({"low": band.get("mid"), "high": band.get("mid")}, unit=unit)})
    params = []
    for name, p in as_dict(fc.get("params")).items():
        d = as_dict(p)
        source = text(d.get("source")) or ""
        params.append(
            {
                "name": str(name),
                "low": num(d.get("low")),
                "mid": num(d.get("mid")),
                "high": num(d.get("high")),
                "unit": text(d.get("unit")),
                "published": d.get("published") is True,
                "source": source,
                "source_is_url": source.startswith("https://"),
                "note": text(d.get("note")),
            }
        )
    sensitivity = []
    for s in as_list(fc.get("sensitivity")):
        d = as_dict(s)
        lo, hi = as_dict(d.get("low")), as_dict(d.get("high"))
        sensitivity.append(
            {
                "param": text(d.get("param")),
                "swing": num(d.get("swing")),
                "low": num(lo.get("value")),
                "low_throttled": num(lo.get("throttled_fraction")),
                "low_verdict": text(lo.get("verdict")),
                "high": num(hi.get("value")),
                "high_throttled": num(hi.get("throttled_fraction")),
                "high_verdict": text(hi.get("verdict")),
            }
        )
    projection = as_dict(fc.get("projection"))
    check = as_dict(projection.get("check"))
    stability = as_dict(fc.get("stability"))
    verdict = text(fc.get("verdict"))
    return {
        "verdict": verdict,
        "verdict_class": verdict if verdict in VERDICT_RANK else "none",
        "deciding_param": text(fc.get("deciding_param")),
        "short": forecast_short(fc),
        "line": forecast_line(fc),
        "reason": text(fc.get("reason")),
        "launch": {k: v for k, v in as_dict(fc.get("launch")).items() if isinstance(v, int | float | str)},
        "bands": bands,
        "params": params,
        "params_from": text(fc.get("params_from")),
        "sensitivity": sensitivity,
        # "keys_from", not "keys": a template's fc.projection.keys is the dict's own keys() method
        "projection": {"keys_from": text(projection.get("keys")), "why": text(projection.get("why")),
                       "ranges": [str(r) for r in as_list(projection.get("ranges"))],
                       "append_points": num(projection.get("append_points")),
                       "not_projected": [str(r) for r in as_list(projection.get("not_projected"))],
                       "measured_hot1": num(check.get("measured_hottest_1pct_share")),
                       "regenerated_hot1": num(check.get("regenerated_hottest_1pct_share")),
                       "agrees": check.get("agrees") if isinstance(check.get("agrees"), bool) else None},
        "stability": {"samples": [num(v) for v in as_list(stability.get("samples"))],
                      "difference": num(stability.get("max_difference")),
                      "same_verdict": stability.get("same_verdict") is not False,
                      "exact": stability.get("exact") is True} if stability else None,
        # an ok cell that throttles nothing says so in a line instead of drawing an empty plot
        "no_throttling": NO_THROTTLING if throttles_nothing(fc) else None,
        "chart": None if throttles_nothing(fc) else _chart(as_dict(fc.get("timeline"))),
    }
