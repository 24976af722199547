"""The forecast in words: one short cell for tables, one line for reports (the same everywhere)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["band_text", "forecast_line", "forecast_short", "keys_note"]


def _pct(value: Any) -> str:
    return "-" if not isinstance(value, int | float) else f"{100 * value:.0f}%"


def band_text(band: Any, *, unit: str = "%") -> str:
    """``{low, mid, high}`` as ``low–high`` (a percentage, or seconds where None means never)."""
    if not isinstance(band, Mapping):
        return "-"
    lo, hi = band.get("low"), band.get("high")
    if unit == "%":
        return _pct(lo) if _pct(lo) == _pct(hi) else f"{_pct(lo)}–{_pct(hi)}"

    def one(v: Any) -> str:
        return "never" if v is None else f"{v:,.0f}{unit}"

    return one(lo) if one(lo) == one(hi) else f"{one(lo)}–{one(hi)}"


def forecast_short(forecast: Any, *, deciding: bool = True) -> str:
    """``hotspot 50–85%``, ``ok 0%``, ``uncertain (split_delay_s) 1–35%``: verdict and throttled band.

    ``deciding=False`` leaves out the parameter that decides an uncertain verdict (narrow tables).
    """
    if not isinstance(forecast, Mapping):
        return "-"
    verdict = forecast.get("verdict")
    if verdict is None:
        return "n/a"
    if verdict == "uncertain" and deciding and forecast.get("deciding_param"):
        verdict = f"uncertain ({forecast['deciding_param']})"
    return f"{verdict} {band_text(forecast.get('throttled_fraction'))}"


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
    text = (
        f"forecast at {where}: {forecast_short(forecast)} of operations throttled (modelled band over the "
        f"parameter ranges; mid {_pct((forecast.get('throttled_fraction') or {}).get('mid'))}), peak 10-s step "
        f"{band_text(forecast.get('peak_throttled_fraction'))}, adapts in "
        f"{band_text(forecast.get('adapt_s'), unit=' s')}, "
        f"added p99 {band_text(forecast.get('added_p99_ms'), unit=' ms')}"
    )
    if forecast.get("deciding_param"):
        text += f"; decided by {forecast['deciding_param']}, whose published value is unknown"
    return text



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
