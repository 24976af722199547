"""Bands and verdicts (forecast/_band.py). DESIGN checks: the rules as written, on outcomes made up here."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from keyramp.backends._params import ParamRange, StoreParams
from keyramp.forecast._band import HOTSPOT_MIN, OK_MAX, evaluate_band, verdict_of
from keyramp.forecast._model import Outcome
from keyramp.forecast._verdict import AT_RISK_HOTSPOT, VERDICT_RANK, span_verdict

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


def test_a_band_that_throttles_everywhere_names_its_verdicts_instead_of_uncertain() -> None:
    def run(p: Mapping[str, float]) -> Outcome:
        return _outcome(0.6 if p["capacity"] < 1000 else 0.2)  # hotspot at low capacity, at_risk elsewhere

    band = evaluate_band(BOX, run)
    assert band.verdict == AT_RISK_HOTSPOT and band.deciding == "capacity"
    assert band.figures["throttled_fraction"]["low"] == 0.2  # every point throttles: nothing here is "might be fine"


# -- properties: the verdict says what the band's own figures say ------------------------------

_SETTINGS = settings(derandomize=True, deadline=None, max_examples=60)
_SHARE = st.integers(min_value=0, max_value=1000).map(lambda n: n / 1000)  # on a grid: no rounding at the limits


def _linear(base: float, by_capacity: float, by_delay: float) -> Callable[[Mapping[str, float]], Outcome]:
    """A made-up store whose throttled share moves linearly with the two varied parameters."""
    def run(p: Mapping[str, float]) -> Outcome:
        share = base + by_capacity * (2000 - p["capacity"]) / 1500 + by_delay * (p["delay"] - 30) / 210
        return _outcome(round(min(1.0, share), 3))
    return run


@_SETTINGS
@given(base=_SHARE, by_capacity=_SHARE, by_delay=_SHARE)
def test_the_verdict_agrees_with_the_throttled_band(base: float, by_capacity: float, by_delay: float) -> None:
    """Read off the band's low/high (the figures a user sees): ok only if the whole band is ok;
    uncertain only if the band reaches ok and goes beyond; otherwise the word names the throttling."""
    band = evaluate_band(BOX, _linear(base, by_capacity, by_delay))
    low, high = band.figures["throttled_fraction"]["low"], band.figures["throttled_fraction"]["high"]
    assert low is not None and high is not None
    if high <= OK_MAX:
        assert band.verdict == "ok"
    elif low <= OK_MAX:
        assert band.verdict == "uncertain" and band.deciding is not None
    elif low >= HOTSPOT_MIN:
        assert band.verdict == "hotspot"
    elif high < HOTSPOT_MIN:
        assert band.verdict == "at_risk"
    else:
        assert band.verdict == AT_RISK_HOTSPOT and band.deciding is not None


@_SETTINGS
@given(base=_SHARE, by_capacity=_SHARE, by_delay=_SHARE, worse=st.integers(min_value=1, max_value=500))
def test_more_throttling_never_reads_better(base: float, by_capacity: float, by_delay: float, worse: int) -> None:
    """Monotonic: the same store throttling more at every point never gets a better-ranked word
    (the rank compare and the scenario report use to call a forecast worse)."""
    before = evaluate_band(BOX, _linear(base, by_capacity, by_delay)).verdict
    after = evaluate_band(BOX, _linear(base + worse / 1000, by_capacity, by_delay)).verdict
    assert VERDICT_RANK[after] >= VERDICT_RANK[before], (before, after)


def test_two_verdicts_read_as_one_word() -> None:
    assert span_verdict(["hotspot", "hotspot"]) == "hotspot"
    assert span_verdict(["at_risk", "hotspot"]) == span_verdict([AT_RISK_HOTSPOT, "at_risk"]) == AT_RISK_HOTSPOT
    assert span_verdict(["ok", "hotspot"]) == span_verdict(["uncertain", "at_risk"]) == "uncertain"
