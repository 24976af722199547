"""The generator rule on hand-made cell summaries: each signal, and where each must not fire."""

from __future__ import annotations

from typing import Any

import pytest

from keyramp.results._generator import (
    GENERATOR_LIMITED,
    MACHINE_LIMIT,
    MACHINE_LIMITED,
    busy_users,
    check_generator,
    generator_late,
    generator_limited,
    limit_reason,
    limit_text,
    limit_word,
    littles_rate,
    machine_limited,
    starved_reason,
)


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


# ----------------------------------------------------------------------------- machine-limited (issue 32)


def _local(cell: dict[str, Any], machine: float, *, local: bool = True) -> dict[str, Any]:
    cell["load_cpu"] = {**cell["load_cpu"], "machine_busy": machine, "store_local": local}
    return cell


def test_reported_case_is_machine_limited_not_the_store() -> None:
    # Issue 32: 889 of 6,000 ops/s, every operation late, 85 % of the schedule dropped, the load
    # process at 0.85 of a core, the machine 90 % busy, users busy (CPU waits inflate service times).
    cell = _local(_cell(count=8890, late=8890, dropped=50_000, users=50, rate=889.0, service_mean_ms=50.0,
                        cores=0.85), 0.90)
    check = check_generator(cell)
    assert check.limited and check.machine_limited and check.reason.startswith("the test machine was saturated")
    # the word is the views' (limit_word), never repeated in the reason: "machine-limited: the test machine …"
    assert limit_word(cell) == MACHINE_LIMITED and limit_text(cell) == f"machine-limited: {check.reason}"
    assert "90%" in check.reason and "emulator" in check.reason
    assert machine_limited(cell)
    # The same figures with the store elsewhere: the old rule (saturated machine, lateness) still limits it,
    # but it is the generator, not the machine's emulator, that is blamed.
    remote = check_generator(_local(_cell(count=8890, late=8890, dropped=50_000, users=50, rate=889.0,
                                          service_mean_ms=50.0, cores=0.85), 0.90, local=False))
    assert remote.limited and not remote.machine_limited


def test_machine_limited_needs_no_lateness_and_holds_in_a_closed_model() -> None:
    for open_model in (True, False):
        check = check_generator(_local(_cell(open_model=open_model), 0.92))
        assert check.limited and check.machine_limited, check.reason
    # Below the measured threshold, or with the store elsewhere, a calm cell kept up.
    assert not check_generator(_local(_cell(), MACHINE_LIMIT - 0.05)).limited
    assert not check_generator(_local(_cell(), 0.99, local=False)).limited
    assert not machine_limited(_cell(machine=0.99))  # store_local not recorded (an older run): unknown


def test_recorded_machine_verdict_wins() -> None:
    cell = _local(_cell(), 0.99)
    cell["generator"] = {"machine_limited": False}
    assert not machine_limited(cell)


def test_starved_reason_names_the_cause() -> None:
    assert starved_reason(_cell(cores=0.95)) == "load process was CPU-bound (0.95 of a core)"
    saturated = starved_reason(_local(_cell(), 0.97))
    assert saturated is not None and "saturated (97%" in saturated and "emulator" in saturated
    assert starved_reason(_cell()) is None
    # For latency, a saturated machine counts only with the emulator on it (else lateness tells).
    assert starved_reason(_local(_cell(), 0.97, local=False), latency=True) is None
    assert starved_reason(_local(_cell(), 0.97, local=False)) is not None


def test_littles_rate_is_what_always_busy_users_would_complete() -> None:
    # 10 users, 2 ms each: 5,000 ops/s if never idle, whatever the recorded rate.
    for rate in (100.0, 1000.0, 4000.0):
        assert littles_rate(_cell(users=10, rate=rate, service_mean_ms=2.0)) == pytest.approx(5000.0)
    # Twice the service time halves it; twice the users doubles it.
    assert littles_rate(_cell(users=10, service_mean_ms=4.0)) == pytest.approx(2500.0)
    assert littles_rate(_cell(users=20, service_mean_ms=2.0)) == pytest.approx(10000.0)
    assert littles_rate({**_cell(), "users": 0}) is None


def test_a_typed_cell_with_figures_missing_gets_a_verdict_and_fails_its_latency_gate() -> None:
    from keyramp.profile._thresholds import parse_expression
    from keyramp.results._summary import CellSummary, OpStats, TargetPoint
    from keyramp.results._thresholds import evaluate

    # open model, 30 % late, no load CPU recorded and no service times: users busy is unknown
    cell = CellSummary(users=5, total=OpStats(count=100, late=30), operations={"read": OpStats(count=100)},
                       target_ops_per_s=[TargetPoint(t=0, target=100.0, achieved=70.0)])
    verdict = check_generator(cell)
    assert verdict.limited is False and verdict.users_busy is None and verdict.cpu_cores is None
    assert verdict.reason == ("30% of operations started late, 0.0% of the schedule dropped, but users busy unknown: "
                              "the store held the users up (schedule.max_users caps concurrency)")
    assert verdict.to_json()["store_local"] is None  # every figure written, null when not measured
    (row,) = evaluate([parse_expression("p99_ms<50")], cell)  # no latency recorded: it must not pass
    assert (row.passed, row.verdict, row.value) == (False, "fail", None)
    assert evaluate([parse_expression("insert.p99_ms<50")], cell) == []  # an operation the cell does not run


# ----------------------------------------------------------------------------- store errors (issue 39)


def _stalled(*, errors_in_gaps: bool, error_share: float = 0.2) -> dict[str, Any]:
    """An open-model cell whose users were idle yet a quarter of its operations started late: it lost
    4 of 10 seconds to a stall; ``errors_in_gaps``: the store's ABORTED answers fell in those seconds."""
    cell = _cell(count=8000, late=2000, users=50, rate=800.0)
    failed = int(8000 * error_share)
    for stats in (cell["operations"]["insert"], cell["total"]):
        stats.update(errors=failed, error_rate=failed / 8000, errors_by_class={"ABORTED": {"count": failed}})
    gap = set(range(3, 7))
    cell["target_ops_per_s"] = [
        {"t": t, "target": 1000.0, "achieved": 100.0 if t in gap else 1000.0,
         "errors": (failed // 4 if t in gap else 0) if errors_in_gaps else (0 if t in gap else failed // 6)}
        for t in range(10)]
    return cell


def test_throughput_gaps_that_coincide_with_store_errors_are_the_stores() -> None:
    check = check_generator(_stalled(errors_in_gaps=True))
    assert not check.limited and limit_word(_stalled(errors_in_gaps=True)) is None
    assert "the store's errors coincide with the throughput gaps (4 of the 4 seconds" in check.reason
    assert "20.0 % ABORTED of all operations" in check.reason and "not the load generator" in check.reason
    # the same lost seconds without errors in them: the idle users' generator is blamed, as before
    other = check_generator(_stalled(errors_in_gaps=False))
    assert other.limited and "the machine starved the load process" in other.reason
    assert limit_word(_stalled(errors_in_gaps=False)) == GENERATOR_LIMITED
    # a trickle of errors (below 1 % of operations) does not excuse a starved generator
    assert check_generator(_stalled(errors_in_gaps=True, error_share=0.005)).limited


def test_a_reason_recorded_with_its_word_reads_once() -> None:
    cell = _local(_cell(), 0.95)
    cell["generator_limited"] = True
    cell["generator"] = {"limited": True, "machine_limited": True,
                         "reason": "machine-limited: the test machine was saturated (95% …)"}
    assert limit_reason(cell) == "the test machine was saturated (95% …)"
    assert limit_text(cell) == "machine-limited: the test machine was saturated (95% …)"
