"""The forecast in words: one short cell for tables, one line for reports (the same everywhere).

Figures go through ``keyramp.core._format`` (``28 %–63 %``, ``30 s``, ``919 ms``) so a band reads
the same here as in every other view. A cell the model does not throttle (verdict ``ok``)
shows no added p99: that figure is the model's queueing at its utilisation cap, not a
latency the launch would see.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keyramp.backends import param_name
from keyramp.core import fmt
from keyramp.forecast._verdict import AT_RISK_HOTSPOT
from keyramp.results import BandFigures, CellForecast, ForecastLaunch, as_forecast

#: A forecast as the views get it: the typed document, or summary.json's mapping (read at this edge).
Forecastish = CellForecast | Mapping[str, Any] | None

__all__ = ["NO_THROTTLING", "band_text", "figure_text", "forecast_line", "forecast_short", "keys_note",
           "throttles_nothing"]

#: What an ``ok`` cell says where a throttled cell shows its timeline and added latency.
NO_THROTTLING = "no throttling forecast"
#: Verdicts that name the parameter deciding them (the band spans two verdicts).
_SPLIT = ("uncertain", AT_RISK_HOTSPOT)


def band_text(band: BandFigures | Mapping[str, Any] | None, *, unit: str = "%") -> str:
    """``{low, mid, high}`` as ``low–high``: shares (``unit="%"``), seconds (``" s"``, None
    meaning never) or milliseconds (``" ms"``); one figure when both ends read the same."""
    if isinstance(band, Mapping):
        band = BandFigures.from_json(dict(band), where="band")
    if not isinstance(band, BandFigures):
        return fmt.MISSING
    lo, hi = band.low, band.high
    if unit == "%":
        return fmt.percent_band(lo, hi)
    one = fmt.duration if unit.strip() == "s" else fmt.ms if unit.strip() == "ms" else fmt.number
    a, b = one(lo), one(hi)
    return a if a == b else f"{a}–{b}"


def figure_text(forecast: Forecastish, name: str) -> str:
    """One band of ``forecast`` in words, as every view shows it: ``added_p99_ms`` of an ``ok``
    cell reads ``n/a (ok)``, never as the model's queueing at its utilisation cap."""
    fc = as_forecast(forecast)
    if fc is None:
        return fmt.MISSING
    if name == "added_p99_ms" and fc.verdict == "ok":
        return "n/a (ok)"
    unit = {"adapt_s": " s", "added_p99_ms": " ms"}.get(name, "%")
    return band_text(fc.band(name), unit=unit)


def forecast_short(forecast: Forecastish, *, deciding: bool = True) -> str:
    """``hotspot 50 %–85 %``, ``ok 0 %``, ``uncertain (split delay) 1 %–35 %``,
    ``at_risk-hotspot (key-range capacity) 28 %–63 %``: verdict and throttled band (the deciding
    parameter by its name, ``backends._params.PARAM_NAMES``).

    ``deciding=False`` leaves out the parameter that decides a split verdict (narrow tables).
    """
    fc = as_forecast(forecast)
    if fc is None:
        return fmt.MISSING
    verdict = fc.verdict
    if verdict is None:
        return "n/a"
    if verdict in _SPLIT and deciding and fc.deciding_param:
        verdict = f"{verdict} ({param_name(fc.deciding_param)})"
    return f"{verdict} {band_text(fc.throttled_fraction)}"


def _adapts(band: BandFigures | None) -> str:
    """``adapts in 30 s–2 min``; ``never adapts`` when every point is still throttled at the end."""
    if band is None:
        return f"adapts in {fmt.MISSING}"
    lo, hi = band.low, band.high
    if lo is None and hi is None:
        return "never adapts (still throttled when the launch ends)"
    if hi is None:
        return f"adapts in {fmt.duration(lo)} at best, never at worst"
    return f"adapts in {band_text(band, unit=' s')}"


def forecast_line(forecast: Forecastish) -> str:
    """One sentence: the launch, the verdict, the bands, what decides it (for reports)."""
    fc = as_forecast(forecast)
    if fc is None:
        return "no forecast"
    launch = fc.launch or ForecastLaunch()
    where = launch.description if launch.description is not None else "the launch"
    if launch.nodes:
        where += f" on {fmt.plural(launch.nodes, (launch.storage or 'ssd').upper() + ' node')}"
    if fc.verdict is None:
        return f"forecast at {where}: {fc.reason or 'not available'}"
    if fc.throttled_fraction is None:  # a verdict without a band: what stopped the projection
        return f"forecast at {where}: {fc.verdict}: {fc.reason or 'no band'}"
    text = (f"forecast at {where}: {forecast_short(fc)} of operations throttled (modelled band over the "
            f"parameter ranges; mid {fmt.percent(fc.throttled_fraction.mid)})")
    if throttles_nothing(fc):
        return f"{text}; {NO_THROTTLING} at any point of the band"
    text += f", peak 10-s step {band_text(fc.peak_throttled_fraction)}, {_adapts(fc.adapt_s)}"
    if fc.verdict != "ok":  # an ok cell's added p99 is the model's capped queueing, not a latency
        text += f", added p99 {figure_text(fc, 'added_p99_ms')}"
    if fc.deciding_param == "samples":
        text += "; decided by sampling: twice the samples give another verdict"
    elif fc.deciding_param:
        text += f"; decided by {param_name(fc.deciding_param)} ({fc.deciding_param}), whose published value is unknown"
    return text


def throttles_nothing(forecast: Forecastish) -> bool:
    """Whether no point of the band throttles anything (an ``ok`` cell with a 0 % band): nothing
    to chart or to add latency to."""
    fc = as_forecast(forecast)
    if fc is None or fc.verdict != "ok":
        return False
    bands = (fc.throttled_fraction, fc.peak_throttled_fraction)
    return all(band is not None and band.high is not None and band.high <= 0 for band in bands)


def keys_note(forecast: Forecastish) -> str:
    """Where the launch stream's keys came from when they are not the design's own (``projection.keys``
    ``recorded``): ``from the recorded keys: <why>``; without a band (nothing to project), the
    reason no verdict could be made; empty when the keys were regenerated (the usual path)."""
    fc = as_forecast(forecast)
    if fc is None or fc.projection is None or fc.projection.keys != "recorded":
        return ""
    if fc.throttled_fraction is None:
        return fc.reason or ""
    why = (fc.projection.why or "").strip()
    return "from the recorded keys" + (f": {why}" if why else "")
