"""The generator rule on hand-made cell summaries: each signal, and where each must not fire."""

from __future__ import annotations

from typing import Any

import pytest

from keyramp.results._generator import busy_users, check_generator, generator_late, generator_limited


def _cell(*, count: int = 10_000, late: int = 0, dropped: int = 0, users: int = 50, rate: float = 1000.0,
          service_mean_ms: float = 2.0, cores: float | None = 0.3, machine: float | None = 0.5,
          open_model: bool = True) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "users": users,
        "operations": {"insert": {"count": count, "late": late, "ops_per_s": rate,
                                  "service_ms": {"mean": service_mean_ms}}},
        "total": {"count": count, "late": late, "dropped": dropped, "ops_per_s": rate},
        "target_ops_per_s": [{"t": 0, "target": rate if open_model else None, "achieved": rate}],
    }
    if cores is not None:
        cell["load_cpu"] = {"cores": cores, "max_process_cores": cores, "machine_busy": machine}
    return cell


def test_kept_up_is_not_limited() -> None:
    check = check_generator(_cell(late=50, dropped=10))  # 0.5 % late, 0.1 % dropped
    assert not check.limited and check.reason.startswith("kept up")


def test_cpu_bound_process_limits_even_without_lateness_and_in_a_closed_model() -> None:
    assert check_generator(_cell(cores=0.97)).limited
    closed = check_generator(_cell(cores=0.97, open_model=False))
    assert closed.limited and "generator's ceiling" in closed.reason
    assert not check_generator(_cell(cores=0.5, open_model=False)).limited


def test_late_with_idle_users_is_the_machine_starving_the_generator() -> None:
    # 1,000 ops/s x 2 ms = 2 users busy of 50 (4 %), yet 30 % started late.
    check = check_generator(_cell(late=3000))
    assert check.limited and "4% busy" in check.reason
    assert check.users_busy == pytest.approx(0.04)


def test_late_with_every_user_busy_is_the_stores() -> None:
    # 1,000 ops/s x 48 ms = 48 of 50 users busy: the store held them up.
    check = check_generator(_cell(late=3000, service_mean_ms=48.0))
    assert not check.limited and "store held the users up" in check.reason
    assert generator_late(_cell(late=3000, service_mean_ms=48.0)) == 0.0


def test_saturated_machine_blames_the_generator_although_users_look_busy() -> None:
    # CPU waiting inflates service times: users look busy, but the machine had no core free.
    check = check_generator(_cell(late=3000, service_mean_ms=48.0, machine=0.99))
    assert check.limited and "saturated" in check.reason
    assert generator_late(_cell(late=3000, service_mean_ms=48.0, machine=0.99)) == pytest.approx(0.3)


def test_dropped_alone_puts_the_generator_behind() -> None:
    assert check_generator(_cell(dropped=500)).limited  # 4.8 % of the schedule never started, users idle


def test_summaries_without_cpu_figures_fall_back_to_users_busy() -> None:
    assert check_generator(_cell(late=3000, cores=None)).limited
    assert not check_generator(_cell(late=3000, cores=None, service_mean_ms=48.0)).limited


def test_recorded_flag_wins_over_recomputing() -> None:
    cell = _cell(late=3000)
    assert generator_limited(cell)
    assert not generator_limited({**cell, "generator_limited": False})


def test_busy_users_ignores_operations_that_never_completed() -> None:
    cell = _cell()
    cell["operations"]["read"] = {"count": 0, "ops_per_s": 0.0, "service_ms": {"mean": None}}
    assert busy_users(cell) == pytest.approx(0.04)
    del cell["users"]
    assert busy_users(cell) is None
