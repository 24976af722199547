"""The forecast in words: one short cell for tables, one line for reports (the same everywhere).

Figures go through ``keyramp._format`` (``28 %–63 %``, ``30 s``, ``919 ms``) so a band reads
the same here as in every other view. A cell the model does not throttle (verdict ``ok``)
shows no added p99: that figure is the model's queueing at its utilisation cap, not a
latency the launch would see.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keyramp import _format as fmt
from keyramp.forecast._verdict import AT_RISK_HOTSPOT

__all__ = ["NO_THROTTLING", "band_text", "figure_text", "forecast_line", "forecast_short", "keys_note",
           "throttles_nothing"]

#: What an ``ok`` cell says where a throttled cell shows its timeline and added latency.
NO_THROTTLING = "no throttling forecast"
#: Verdicts that name the parameter deciding them (the band spans two verdicts).
_SPLIT = ("uncertain", AT_RISK_HOTSPOT)


def band_text(band: Any, *, unit: str = "%") -> str:
    """``{low, mid, high}`` as ``low–high``: shares (``unit="%"``), seconds (``" s"``, None
    meaning never) or milliseconds (``" ms"``); one figure when both ends read the same."""
    if not isinstance(band, Mapping):
        return fmt.MISSING
    lo, hi = band.get("low"), band.get("high")
    if unit == "%":
        return fmt.percent_band(lo, hi)
    one = fmt.duration if unit.strip() == "s" else fmt.ms if unit.strip() == "ms" else fmt.number
    a, b = one(lo), one(hi)
    return a if a == b else f"{a}–{b}"


def figure_text(forecast: Any, name: str) -> str:
    """One band of ``forecast`` in words, as every view shows it: ``added_p99_ms`` of an ``ok``
    cell reads ``n/a (ok)``, never as the model's queueing at its utilisation cap."""
    if not isinstance(forecast, Mapping):
        return fmt.MISSING
    if name == "added_p99_ms" and forecast.get("verdict") == "ok":
        return "n/a (ok)"
    unit = {"adapt_s": " s", "added_p99_ms": " ms"}.get(name, "%")
    return band_text(forecast.get(name), unit=unit)


def forecast_short(forecast: Any, *, deciding: bool = True) -> str:
    """``hotspot 50 %–85 %``, ``ok 0 %``, ``uncertain (split_delay_s) 1 %–35 %``,
    ``at_risk-hotspot (capacity) 28 %–63 %``: verdict and throttled band.

    ``deciding=False`` leaves out the parameter that decides a split verdict (narrow tables).
    """
    if not isinstance(forecast, Mapping):
        return fmt.MISSING
    verdict = forecast.get("verdict")
    if verdict is None:
        return "n/a"
    if verdict in _SPLIT and deciding and forecast.get("deciding_param"):
        verdict = f"{verdict} ({forecast['deciding_param']})"
    return f"{verdict} {band_text(forecast.get('throttled_fraction'))}"


def _adapts(band: Any) -> str:
    """``adapts in 30 s–2 min``; ``never adapts`` when every point is still throttled at the end."""
    if not isinstance(band, Mapping):
        return f"adapts in {fmt.MISSING}"
    lo, hi = band.get("low"), band.get("high")
    if lo is None and hi is None:
        return "never adapts (still throttled when the launch ends)"
    if hi is None:
        return f"adapts in {fmt.duration(lo)} at best, never at worst"
    return f"adapts in {band_text(band, unit=' s')}"


def forecast_line(forecast: Any) -> str:
    """One sentence: the launch, the verdict, the bands, what decides it (for reports)."""
    if not isinstance(forecast, Mapping):
        return "no forecast"
    launch = forecast.get("launch") or {}
    where = launch.get("description", "the launch")
    if launch.get("nodes"):
        where += f" on {launch['nodes']} {str(launch.get('storage', 'ssd')).upper()} node(s)"
    if forecast.get("verdict") is None:
        return f"forecast at {where}: {forecast.get('reason', 'not available')}"
    if forecast.get("throttled_fraction") is None:  # a verdict without a band: what stopped the projection
        return f"forecast at {where}: {forecast['verdict']}: {forecast.get('reason', 'no band')}"
    mid = fmt.percent((forecast.get("throttled_fraction") or {}).get("mid"))
    text = (f"forecast at {where}: {forecast_short(forecast)} of operations throttled (modelled band over the "
            f"parameter ranges; mid {mid})")
    if throttles_nothing(forecast):
        return f"{text}; {NO_THROTTLING} at any point of the band"
    text += f", peak 10-s step {band_text(forecast.get('peak_throttled_fraction'))}, {_adapts(forecast.get('adapt_s'))}"
    if forecast.get("verdict") != "ok":  # an ok cell's added p99 is the model's capped queueing, not a latency
        text += f", added p99 {figure_text(forecast, 'added_p99_ms')}"
    deciding = forecast.get("deciding_param")
    if deciding == "samples":
        text += "; decided by sampling: twice the samples give another verdict"
    elif deciding:
        text += f"; decided by {deciding}, whose published value is unknown"
    return text


def throttles_nothing(forecast: Any) -> bool:
    """Whether no point of the band throttles anything (an ``ok`` cell with a 0 % band): nothing
    to chart or to add latency to."""
    if not isinstance(forecast, Mapping) or forecast.get("verdict") != "ok":
        return False
    for name in ("throttled_fraction", "peak_throttled_fraction"):
        band = forecast.get(name)
        if not isinstance(band, Mapping) or not isinstance(band.get("high"), int | float) or band["high"] > 0:
            return False
    return True


def keys_note(forecast: Any) -> str:
    """Where the launch stream's keys came from when they are not the design's own (``projection.keys``
    ``recorded``): ``from the recorded keys: <why>``; without a band (nothing to project), the
    reason no verdict could be made; empty when the keys were regenerated (the usual path)."""
    if not isinstance(forecast, Mapping):
        return ""
    projection = forecast.get("projection")
    if not isinstance(projection, Mapping) or projection.get("keys") != "recorded":
        return ""
    if forecast.get("throttled_fraction") is None:
        return str(forecast.get("reason") or "")
    why = str(projection.get("why") or "").strip()
    return "from the recorded keys" + (f": {why}" if why else "")
