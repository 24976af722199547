from __future__ import annotations

import pytest

from keyramp.core._errors import UsageError
from keyramp.profile._schedules import make_schedule


def test_ramp_500_50_5_reaches_googles_figure_at_90_minutes() -> None:
    ramp = make_schedule({"kind": "ramp_500_50_5"}, horizon=5400)
    assert ramp.rate(0) == 500
    assert ramp.rate(299) == 500
    assert ramp.rate(300) == 750
    assert ramp.rate(600) == 1125
    # 18 steps of +50 % in 90 minutes: Google quotes ~740,000 ops/s.
    assert ramp.rate(5400) == pytest.approx(500 * 1.5**18)
    assert 700_000 < ramp.rate(5400) < 780_000


def test_ramp_ceiling_and_custom_step() -> None:
    ramp = make_schedule({"kind": "ramp_500_50_5", "start_ops": 100, "step": "1m", "ceiling": 200}, horizon=600)
    assert [ramp.rate(t) for t in (0, 60, 120, 180)] == [100, 150, 200, 200]


def test_step_list_and_increment() -> None:
    listed = make_schedule({"kind": "step", "steps": [10, 20, 40], "step": "10s"}, horizon=60)
    assert [listed.rate(t) for t in (0, 10, 25, 50)] == [10, 20, 40, 40]
    inc = make_schedule({"kind": "step", "start_ops": 100, "increment": 50, "step": "10s"}, horizon=60)
    assert [inc.rate(t) for t in (0, 10, 20)] == [100, 150, 200]


def test_linear_spike_constant_soak() -> None:
    linear = make_schedule({"kind": "linear", "start_ops": 100, "end_ops": 300}, horizon=100)
    assert linear.rate(50) == pytest.approx(200)
    spike = make_schedule(
        {"kind": "spike", "rate": 10, "burst_ops": 100, "burst_at": "10s", "burst_for": "5s"}, horizon=30
    )
    assert [spike.rate(t) for t in (5, 10, 14.9, 15)] == [10, 100, 100, 10]
    assert spike.peak(30) == 100
    assert make_schedule({"kind": "soak", "rate": 7}, horizon=10).rate(3) == 7
    const = make_schedule({"kind": "constant", "rate": 50}, horizon=10)
    assert const.total_ops(10) == pytest.approx(500)


def test_users_is_closed_model() -> None:
    users = make_schedule({"kind": "users", "users": 5}, horizon=10)
    assert not users.open_model
    assert users.users == 5


@pytest.mark.parametrize(
    "params",
    [
        {"kind": "nope"},
        {"kind": "constant"},
        {"kind": "constant", "rate": -1},
        {"kind": "constant", "rate": "fast"},
        {"kind": "step", "steps": []},
        {"kind": "ramp_500_50_5", "growth": 0},
        {"kind": "users", "users": 0},
        {"kind": "spike", "rate": 10},
    ],
)
def test_bad_schedules_are_one_line_errors(params: dict) -> None:
    with pytest.raises(UsageError) as info:
        make_schedule(params, horizon=60)
    assert "\n" not in str(info.value)


def test_peak_ignores_a_step_that_would_start_exactly_at_the_end() -> None:
    # 500/50/5 at 300 ops/s for exactly two 5-minute steps: 300 then 450, never 675.
    ramp = make_schedule({"kind": "ramp_500_50_5", "start_ops": 300}, horizon=600.0)
    assert ramp.peak(600.0) == pytest.approx(450.0)
    assert ramp.peak(601.0) == pytest.approx(675.0)
