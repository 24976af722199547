"""The launch forecast of a cell as a view model: bands, sources, sensitivity and a small chart.

Defensive like the rest of the view models: a missing or hand-edited forecast degrades
to None or empty rows, never to a 500. The chart is an inline SVG drawn from numbers
only (no text from the file goes into it).
"""

from __future__ import annotations

from typing import Any

from keyramp.forecast._text import band_text, forecast_line, forecast_short
from keyramp.results._values import as_dict, as_list, num, text

__all__ = ["forecast_view"]

_FIGURES = (
    ("throttled_fraction", "throttled share of launch operations", "%"),
    ("peak_throttled_fraction", "worst 10-s step", "%"),
    ("adapt_s", "throttled spell (first to last throttled step)", " s"),
    ("added_p99_ms", "added p99 queueing, worst step", " ms"),
)
_W, _H = 480.0, 120.0


def _polyline(t: list[float], ys: list[Any]) -> str:
    end = max(t[-1], 1e-9)
    pts = []
    for x, y in zip(t, ys, strict=True):
        v = num(y)
        if v is not None:
            pts.append(f"{x / end * _W:.1f},{_H - min(max(v, 0.0), 1.0) * _H:.1f}")
    return " ".join(pts)


def _chart(timeline: dict[str, Any]) -> dict[str, Any] | None:
    t = [v for v in (num(x) for x in as_list(timeline.get("t"))) if v is not None]
    throttled = as_dict(timeline.get("throttled"))
    if len(t) < 2 or not throttled:
        return None
    lines = {label: _polyline(t, as_list(throttled.get(label))) for label in ("favourable", "mid", "unfavourable")}
    return {"width": _W, "height": _H, "lines": lines, "end_s": t[-1]}


def forecast_view(raw: object) -> dict[str, Any] | None:
    fc = as_dict(raw)
    if not fc:
        return None
    bands = []
    for key, label, unit in _FIGURES:
        band = as_dict(fc.get(key))
        bands.append({"name": key, "label": label, "text": band_text(band, unit=unit),
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
        "verdict_class": verdict if verdict in ("ok", "at_risk", "hotspot", "uncertain") else "none",
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
        "chart": _chart(as_dict(fc.get("timeline"))),
    }
