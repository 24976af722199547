"""Bands and verdicts (forecast/_band.py). DESIGN checks: the rules as written, on outcomes made up here."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from keyramp.backends._params import ParamRange, StoreParams
from keyramp.forecast._band import evaluate_band, verdict_of
from keyramp.forecast._model import Outcome

BOX = StoreParams(store="toy", ranges={
    "capacity": ParamRange(low=500, mid=1000, high=2000, unit="ops/s", source="unpublished", note="", better="high"),
    "delay": ParamRange(low=30, mid=120, high=240, unit="s", source="unpublished", note="", better="low"),
    "fixed": ParamRange(low=500, mid=500, high=500, unit="ops/s", source="https://x", note="", published=True),
})


def _outcome(throttled: float, *, peak: float | None = None, n: int = 10) -> Outcome:
    thr = np.full(n, throttled)
    thr[0] = throttled if peak is None else peak
    return Outcome(t=np.arange(1, n + 1) * 10.0, offered=np.full(n, 100.0), throttled=thr,
                   added_p99_ms=np.full(n, 5.0), tablets=np.ones(n, dtype=int))


def test_verdict_thresholds() -> None:
    assert verdict_of(_outcome(0.0)) == "ok"
    assert verdict_of(_outcome(0.01, peak=0.5)) == "at_risk"  # a bad spell is a risk even if short
    assert verdict_of(_outcome(0.10)) == "at_risk"
    assert verdict_of(_outcome(0.30)) == "hotspot"


def test_a_unanimous_band_gives_its_verdict_and_fixed_params_are_not_varied() -> None:
    band = evaluate_band(BOX, lambda p: _outcome(0.5))
    assert band.verdict == "hotspot" and band.deciding is None
    assert {s["param"] for s in band.sensitivity} == {"capacity", "delay"}
    assert band.figures["throttled_fraction"] == {"low": 0.5, "mid": 0.5, "high": 0.5}


def test_a_split_band_is_uncertain_and_names_the_parameter_that_flips_it() -> None:
    def run(p: Mapping[str, float]) -> Outcome:
        # Capacity decides; the delay moves the figure a little but never the verdict.
        base = 0.5 if p["capacity"] < 1000 else 0.0
        return _outcome(base + p["delay"] / 240 * 0.02)

    band = evaluate_band(BOX, run)
    assert band.verdict == "uncertain" and band.deciding == "capacity"
    assert band.verdicts["favourable"] == "ok" and band.verdicts["unfavourable"] == "hotspot"
    assert band.figures["throttled_fraction"]["low"] < 0.01 < 0.5 < band.figures["throttled_fraction"]["high"]


def test_never_adapting_ranks_above_any_time() -> None:
    def run(p: Mapping[str, float]) -> Outcome:
        out = _outcome(0.2)
        if p["capacity"] < 1000:
            out.throttled[-1] = 0.5  # still throttled at the end: adapt_s None
        else:
            out.throttled[-1] = 0.0
        return out

    band = evaluate_band(BOX, run)
    assert band.figures["adapt_s"]["high"] is None and band.figures["adapt_s"]["low"] == 90.0
