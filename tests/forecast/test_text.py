"""The forecast in words (forecast/_text.py): one format, no figure the model does not stand behind."""

from __future__ import annotations

from typing import Any

from keyramp.forecast._text import band_text, figure_text, forecast_line, forecast_short, throttles_nothing


def _fc(verdict: str, low: float, high: float, **extra: Any) -> dict[str, Any]:
    return {"verdict": verdict, "launch": {"description": "ramp 500 ops/s +50% every 300s up to 5000 for 30m"},
            "throttled_fraction": {"low": low, "mid": (low + high) / 2, "high": high},
            "peak_throttled_fraction": {"low": low, "mid": high, "high": high},
            "adapt_s": {"low": 30.0, "mid": 600.0, "high": None},
            "added_p99_ms": {"low": 5.0, "mid": 460.0, "high": 919.0}, **extra}


def test_an_ok_cell_shows_no_added_p99_and_one_that_throttles_nothing_says_so() -> None:
    # The model caps utilisation: an ok cell's "added p99 5 ms–919 ms" is that cap, not a latency.
    nothing = _fc("ok", 0.0, 0.0)
    assert throttles_nothing(nothing)
    line = forecast_line(nothing)
    assert "added p99" not in line and "919" not in line and line.endswith("no throttling forecast at any point of "
                                                                            "the band")
    assert figure_text(nothing, "added_p99_ms") == "n/a (ok)"
    little = _fc("ok", 0.0, 0.03)  # ok, yet something throttles: the spell is shown, the capped p99 still not
    assert not throttles_nothing(little) and "added p99" not in forecast_line(little)
    assert "adapts in 30 s at best, never at worst" in forecast_line(little)
    hot = _fc("hotspot", 0.4, 0.9)
    assert not throttles_nothing(hot) and "added p99 5 ms–919 ms" in forecast_line(hot)


def test_words_and_figures_in_the_one_format() -> None:
    split = _fc("at_risk-hotspot", 0.28, 0.63, deciding_param="split_delay_s")
    # the deciding parameter by its name (docs/keyspace-model.md), never its key alone
    assert forecast_short(split) == "at_risk-hotspot (split delay) 28 %–63 %"
    assert forecast_short(split, deciding=False) == "at_risk-hotspot 28 %–63 %"
    assert "decided by split delay (split_delay_s)" in forecast_line(split)
    sampled = _fc("uncertain", 0.0, 0.4, deciding_param="samples")
    assert "decided by sampling" in forecast_line(sampled) and "published value" not in forecast_line(sampled)
    assert band_text({"low": 30.0, "high": 30.0}, unit=" s") == "30 s"
    assert band_text({"low": 30.0, "high": 1200.0}, unit=" s") == "30 s–20 min"
    assert band_text({"low": None, "high": None}, unit=" s") == "never"
    assert band_text({"low": 0.004, "high": 0.004}) == "0.4 %"
    assert "never adapts (still throttled when the launch ends)" in forecast_line(
        {**_fc("hotspot", 0.5, 0.9), "adapt_s": {"low": None, "mid": None, "high": None}})


def test_every_model_parameter_has_its_documented_name() -> None:
    """Views name a parameter as docs/keyspace-model.md does ("split delay"), never by its key alone."""
    from pathlib import Path

    from keyramp.backends import STORES
    from keyramp.backends._params import PARAM_NAMES

    doc = (Path(__file__).resolve().parents[2] / "docs" / "keyspace-model.md").read_text(encoding="utf-8")
    declared = {key for spec in STORES.specs() if spec.tablets is not None
                for box in spec.tablets.boxes.values() for key in box}
    assert declared and declared <= set(PARAM_NAMES)
    for key in declared:
        assert f"**{PARAM_NAMES[key]}** `{key}`" in doc, key
