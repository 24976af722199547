"""A cell's key-space figures as a short explained table: what each number means, and which
range is good or bad, instead of a dump of summary.json field names (the JSON twin has those).

Measured figures describe the sampled key stream the run sent; modelled ones come from the
tablet model of a range-partitioned store (docs/keyspace-model.md) and are labelled so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from keyramp.keyspace import FIGURE, keyspace_headline
from keyramp.results import KeyspaceFigures, num

__all__ = ["MEASURED", "MODELLED", "explain_keyspace"]


@dataclass(frozen=True)
class _Metric:
    """A headline figure (``keyspace._headline.FIGURE``: its label and format, the same in every
    view) with what it means and which range is good or bad."""

    field: str
    meaning: str
    good: str
    bad: str
    #: value -> "good" | "bad" | "" (in between, or not judged)
    judge: Callable[[Any], str]

    @property
    def label(self) -> str:
        return FIGURE[self.field].label if self.field in FIGURE else _BAND_LABEL


def _below(good: float, bad: float) -> Callable[[Any], str]:
    return lambda v: "good" if v <= good else "bad" if v >= bad else ""


def _above(good: float, bad: float) -> Callable[[Any], str]:
    return lambda v: "good" if v >= good else "bad" if v <= bad else ""


_BAND_LABEL = "hot window vs one key range"

MEASURED: tuple[_Metric, ...] = (
    _Metric("hottest_1pct_share",
            "share of the operations that hit the busiest 1 % of the key range, second by second",
            "≈ 1–5 %: spread evenly", "≥ 50 %: one hotspot takes the load (one tablet on the real service)",
            _below(0.05, 0.5)),
    _Metric("hottest_1pct_ops_per_s",
            "the busiest 1 % of the key range in operations per second (its share × the cell's ops/s), to "
            "hold against what one key range serves (the modelled row below)",
            "below what one key range serves", "above it: one tablet cannot keep up", lambda v: ""),
    _Metric("append_points",
            "places where new keys are appended (sorted by key, each point's inserts come in time order)",
            "none: new keys land spread", "1: every new key at the same place", lambda v: "bad" if v == 1 else ""),
    _Metric("moving_hotspot",
            "new keys always land at one end of the range (timestamps, counters): the hot spot moves with them "
            "and a split never helps", "no", "yes", lambda v: "bad" if v else "good"),
    _Metric("append_fraction", "share of inserts whose key is above every earlier key", "≈ 0 (random keys)",
            "≥ 50 %: monotonically increasing keys", _below(0.1, 0.5)),
    _Metric("prepend_fraction", "share of inserts whose key is below every earlier key (reverse timestamps)", "≈ 0",
            "≥ 50 %: monotonically decreasing keys", _below(0.1, 0.5)),
    _Metric("gini",
            "how unevenly the whole cell's operations fall over the key range (0 = even, 1 = all on one spot); "
            "also catches a static hot key", "≤ 0.3", "≥ 0.7", _below(0.3, 0.7)),
    _Metric("entropy_norm", "Shannon entropy of the same counts, scaled to 0–1 (1 = perfectly even)", "≥ 0.9",
            "≤ 0.5", _above(0.9, 0.5)),
    _Metric("samples", "key accesses the figures are computed from (a sample of the cell's operations)",
            "thousands", "< 200: figures are rough", lambda v: "bad" if v < 200 else ""),
)

MODELLED: tuple[_Metric, ...] = (
    _Metric("hot_window_vs_capacity",
            "where the hot window's ops/s sit against the band one tablet / key range serves on this store "
            "(published figures, modelled)", "below the band", "above the band", lambda v: ""),
    _Metric("max_throttled_fraction",
            "share of the offered load a range-partitioned store would have throttled at worst at this test's "
            "own rate (not the launch: the launch forecast above says that)", "0 %", "≥ 1 %", _below(0.0, 0.01)),
    _Metric("peak_tablets", "tablets the model splits the range into under this load", "more than 1 under heavy load",
            "1 while throttling: the load sits on one tablet", lambda v: ""),
    _Metric("max_added_latency_ms", "queueing the model adds on the hottest tablet", "< 1 ms", "≥ 10 ms",
            _below(1.0, 10.0)),
)


def _format(m: _Metric, value: Any) -> str | None:
    """The figure as every view prints it, or None when the summary has no usable value."""
    if m.field == "hot_window_vs_capacity":
        return value if isinstance(value, str) else None
    if m.field == "moving_hotspot" and not isinstance(value, bool):
        return None
    if m.field != "moving_hotspot" and num(value) is None:
        return None
    return FIGURE[m.field].text(value)


def _verdict(m: _Metric, raw: Any, ks: KeyspaceFigures) -> str:
    if m.field in ("hottest_1pct_ops_per_s", "hot_window_vs_capacity"):  # judged against the modelled band
        where = ks.hot_window_vs_capacity
        return "bad" if where == "above the band" else "good" if where == "below the band" else ""
    return m.judge(float(raw))


def _band(ks: KeyspaceFigures) -> str:
    band = ks.tablet_capacity_ops_per_s
    low, high = (None, None) if band is None else (band.low, band.high)
    return f" ({low:,.0f}–{high:,.0f} ops/s)" if low is not None and high is not None else ""


def _value(ks: KeyspaceFigures, m: _Metric, modelled: bool) -> Any:
    """The figure: measured ones and the hot window's place in the band from ``ks``, the rest from ``ks.model``."""
    if not modelled or m.field == "hot_window_vs_capacity":
        return getattr(ks, m.field)
    return None if ks.model is None else getattr(ks.model, m.field)


def _rows(ks: KeyspaceFigures, metrics: tuple[_Metric, ...], *, modelled: bool = False) -> list[dict[str, Any]]:
    rows = []
    for m in metrics:
        raw = _value(ks, m, modelled)
        if m.field == "append_points" and raw is None and ks.recorded(m.field):  # measured, and no point found
            rows.append({"field": m.field, "label": m.label, "value": None, "text": "none (spread)",
                         "verdict": "good", "meaning": m.meaning, "good": m.good, "bad": m.bad})
            continue
        text = _format(m, raw)
        if text is None:
            continue
        if m.field == "hot_window_vs_capacity":
            text += _band(ks)
        rows.append({"field": m.field, "label": m.label, "value": raw, "text": text, "verdict": _verdict(m, raw, ks),
                     "meaning": m.meaning, "good": m.good, "bad": m.bad})
    return rows


def explain_keyspace(keyspace: KeyspaceFigures | None) -> dict[str, Any] | None:
    """``{"measured": [...], "modelled": [...], "range_from"}`` for summary.json's ``keyspace``, or None."""
    if keyspace is None or not keyspace.to_json():
        return None
    return {"headline": keyspace_headline(keyspace), "measured": _rows(keyspace, MEASURED),
            "modelled": _rows(keyspace, MODELLED, modelled=True),
            "model_rate": None if keyspace.model is None else num(keyspace.model.offered_ops_per_s),
            "range_from": keyspace.range_from}
