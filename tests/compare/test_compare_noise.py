"""Between-run noise from a baseline set (``keyramp.compare._noise``): checked against published
t tables and against simulated A/A series it was not given, plus its invariances."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from keyramp.compare._noise import between_run_spread, t_quantile, widen

# Student's t, two-sided 95 % and 99 % (standard tables).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 10: 2.228, 20: 2.086, 30: 2.042}
T995 = {3: 5.841, 5: 4.032, 10: 3.169, 30: 2.750}


def test_t_quantile_matches_the_tables() -> None:
    for df, value in T975.items():
        assert t_quantile(0.975, df) == pytest.approx(value, rel=0.005), df
    for df, value in T995.items():
        assert t_quantile(0.995, df) == pytest.approx(value, rel=0.01), df
    assert t_quantile(0.5, 4) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


@pytest.mark.parametrize("k", [3, 5, 10])
def test_a_new_run_of_the_same_build_falls_outside_the_prediction_interval_about_5_percent(k: int) -> None:
    # Simulated A/A: k baseline runs and one candidate from the same lognormal run-to-run spread.
    rng = np.random.default_rng(k)
    trials, outside = 4000, 0
    for _ in range(trials):
        values = np.exp(rng.normal(0.0, 0.2, size=k + 1))
        spread = between_run_spread(list(values[:k]), 0.95)
        assert spread is not None
        centre = np.mean(np.log(values[:k]))
        outside += abs(math.log(values[k]) - centre) > spread[1]
    assert 0.035 < outside / trials < 0.065


@given(st.lists(st.floats(0.1, 1e5), min_size=2, max_size=12), st.floats(0.01, 100.0))
def test_spread_does_not_depend_on_the_unit(values: list[float], scale: float) -> None:
    one, other = between_run_spread(values, 0.95), between_run_spread([v * scale for v in values], 0.95)
    assert one is not None and other is not None
    assert other == pytest.approx(one, abs=1e-9)


def test_spread_of_identical_runs_is_zero_and_one_run_has_none() -> None:
    assert between_run_spread([5.0, 5.0, 5.0], 0.95) == (0.0, 0.0)
    assert between_run_spread([5.0], 0.95) is None
    assert between_run_spread([5.0, None, 0.0], 0.95) is None


@given(st.floats(0.2, 5.0), st.floats(0.0, 0.5), st.floats(0.0, 0.5), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_widening_contains_the_bootstrap_interval_and_grows_with_the_spread(
        ratio: float, below: float, above: float, extra: float, more: float) -> None:
    low, high = ratio * math.exp(-below), ratio * math.exp(above)
    w_low, w_high = widen(ratio, low, high, extra)
    assert w_low <= low * (1 + 1e-12) and w_high >= high * (1 - 1e-12)
    assert w_low <= ratio * (1 + 1e-12) and ratio <= w_high * (1 + 1e-12)
    m_low, m_high = widen(ratio, low, high, extra + more)
    assert m_low <= w_low * (1 + 1e-12) and m_high >= w_high * (1 - 1e-12)
    assert widen(ratio, low, high, 0.0) == pytest.approx((low, high))
    # Without a bootstrap interval the between-run interval stands alone, symmetric on the log scale.
    n_low, n_high = widen(ratio, None, None, extra)
    assert math.log(n_high / ratio) == pytest.approx(extra) and math.log(ratio / n_low) == pytest.approx(extra)
