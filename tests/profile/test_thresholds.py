from __future__ import annotations

import json
from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp.core._errors import UsageError
from keyramp.profile._thresholds import parse_expression, parse_table
from keyramp.results._thresholds import all_passed, evaluate

CELL = {
    "operations": {
        "insert": {"count": 1000, "errors": 20, "error_rate": 0.02, "ops_per_s": 100.0,
                   "latency_ms": {"p50": 1.0, "p99": 40.0, "p999": 80.0, "max": 90.0},
                   "service_ms": {"p99": 30.0}},
        "read": {"count": 0, "errors": 0, "error_rate": 0.0, "ops_per_s": 0.0,
                 "latency_ms": {"p50": None, "p99": None}},
    },
    "total": {"count": 1000, "errors": 20, "error_rate": 0.02, "ops_per_s": 100.0,
              "latency_ms": {"p50": 1.0, "p99": 60.0}},
    "target_ops_per_s": [{"t": 0, "target": 100.0, "achieved": 90.0}, {"t": 1, "target": 100.0, "achieved": 100.0}],
}


def _by_name(results):
    return {r.name: r for r in results}


def test_profile_table_defaults_and_explicit_comparators() -> None:
    thresholds = parse_table({"error_rate": 0.01, "insert.p99_ms": 50, "insert.service_p99_ms": "<=30",
                              "ops_per_s_ratio": 0.95, "p99_ms": [50, "<70"]})
    assert [(t.name, t.op, t.limit) for t in thresholds] == [
        ("error_rate", "<", 0.01), ("insert.p99_ms", "<", 50.0), ("insert.service_p99_ms", "<=", 30.0),
        ("ops_per_s_ratio", ">=", 0.95), ("p99_ms", "<", 50.0), ("p99_ms", "<", 70.0)]
    results = evaluate(thresholds, CELL)
    assert [(r.name, r.value, r.passed) for r in results] == [
        ("error_rate", 0.02, False), ("insert.p99_ms", 40.0, True), ("insert.service_p99_ms", 30.0, True),
        ("ops_per_s_ratio", 0.95, True), ("p99_ms", 60.0, False), ("p99_ms", 60.0, True)]
    assert not all_passed(results)
    assert results[0].to_json() == {"name": "error_rate", "op": "<", "limit": 0.01, "value": 0.02, "passed": False,
                                    "verdict": "fail", "note": ""}


def test_latency_thresholds_of_a_generator_limited_cell_are_inconclusive_never_pass() -> None:
    thresholds = parse_table({"error_rate": 0.05, "insert.p99_ms": 50, "insert.service_p99_ms": 100,
                              "ops_per_s_ratio": 0.9})
    flagged = {
        **CELL,
        "generator_limited": True,
        "generator": {"reason": "the busiest load process used 0.97 of a core"},
    }
    by_name = _by_name(evaluate(thresholds, flagged))
    for name in ("insert.p99_ms", "insert.service_p99_ms"):  # both would pass on their values
        assert by_name[name].verdict == "inconclusive" and by_name[name].passed is False
        assert "0.97 of a core" in by_name[name].note
    assert by_name["error_rate"].verdict == "pass" and by_name["ops_per_s_ratio"].verdict == "pass"
    # A summary written without the flag: the same rule decides from its figures (late while
    # users idle) — and a cell that kept up keeps its latency verdicts.
    insert = {**CELL["operations"]["insert"], "service_ms": {"p99": 30.0, "mean": 10.0}}  # 2 % of 50 users busy
    behind = {**CELL, "users": 50, "operations": {"insert": insert}, "total": {**CELL["total"], "late": 600}}
    assert _by_name(evaluate(thresholds, behind))["insert.p99_ms"].verdict == "inconclusive"
    kept_up = {**behind, "total": {**CELL["total"], "late": 5}}
    assert _by_name(evaluate(thresholds, kept_up))["insert.p99_ms"].verdict == "pass"


def test_cli_expressions() -> None:
    t = parse_expression("insert.p99_ms<50")
    assert (t.operation, t.metric, t.op, t.limit) == ("insert", "p99_ms", "<", 50.0)
    assert parse_expression(" ops_per_s = 90 ").op == ">="
    assert parse_expression("error_rate<=0.05").op == "<="
    assert evaluate([parse_expression("insert.ops_per_s>150")], CELL)[0].passed is False


def test_missing_value_fails_and_absent_operation_is_skipped() -> None:
    results = _by_name(evaluate(parse_table({"read.p99_ms": 10, "update.p99_ms": 10}), CELL))
    assert results["read.p99_ms"].value is None and not results["read.p99_ms"].passed
    assert "update.p99_ms" not in results


def test_ratio_not_applicable_without_a_schedule() -> None:
    cell = dict(CELL, target_ops_per_s=[{"t": 0, "target": None, "achieved": 50.0}])
    assert evaluate(parse_table({"ops_per_s_ratio": 0.9}), cell) == []


@pytest.mark.parametrize("bad", [
    "insert.p99<50", "p99_ms<<3", "p99_ms<abc", "bogus.p99_ms<3", "insert.ops_per_s_ratio>0.9", "", "p99_ms<nan",
])
def test_bad_expressions_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_expression(bad)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("table", [{"p99_ms": "fast"}, {"p99_ms": True}, {"latency": 3}, {"p99_ms": "<"}])
def test_bad_tables_are_usage_errors(table: dict) -> None:
    with pytest.raises(UsageError):
        parse_table(table)


def test_on_a_synthetic_summary(tmp_path: Path) -> None:
    run = make_run(tmp_path, seed=1, latency_ms=2.0, seconds=4)
    cell = json.loads((run / "summary.json").read_text())["cells"]["c00-datastore-sequential"]
    results = evaluate(parse_table({"insert.p50_ms": 3, "read.p50_ms": 1.5, "ops_per_s_ratio": 0.9}), cell)
    assert [r.passed for r in results] == [True, False, True]


FORECAST_CELL = {"total": {"count": 10}, "forecast": {
    "throttled_fraction": {"low": 0.01, "mid": 0.03, "high": 0.2},
    "adapt_s": {"low": 60.0, "mid": 300.0, "high": None}}}


def test_forecast_thresholds_gate_on_the_whole_band_by_default() -> None:
    (whole,) = parse_table({"forecast.throttled_fraction": 0.05})
    assert whole.metric == "forecast.throttled_fraction" and whole.bound == "high" and whole.op == "<"
    (res,) = evaluate([whole], FORECAST_CELL)
    assert not res.passed and res.value == 0.2  # the unfavourable end is above 5 %
    (mid,) = evaluate(parse_table({"forecast.throttled_fraction.mid": 0.05}), FORECAST_CELL)
    assert mid.passed and mid.value == 0.03


def test_a_forecast_that_never_adapts_fails_an_adapt_threshold() -> None:
    (res,) = evaluate(parse_table({"forecast.adapt_s": 600}), FORECAST_CELL)
    assert not res.passed and res.value is None
    (low,) = evaluate(parse_table({"forecast.adapt_s.low": 600}), FORECAST_CELL)
    assert low.passed


def test_forecast_threshold_missing_forecast_fails_but_probe_cells_are_skipped() -> None:
    spec = parse_table({"forecast.throttled_fraction": 0.05})
    (res,) = evaluate(spec, {"total": {"count": 10}})  # the forecast failed: the gate must not pass silently
    assert not res.passed and res.value is None
    assert evaluate(spec, {"total": {"count": 0}, "probe": {"name": "contention"}}) == []


@pytest.mark.parametrize("name", ["forecast.nope", "forecast.throttled_fraction.max", "forecast"])
def test_bad_forecast_threshold_names(name: str) -> None:
    with pytest.raises(UsageError, match="forecast"):
        parse_table({name: 0.1})


def test_workload_errors_is_an_allowance_and_a_python_workload_gets_zero_by_default() -> None:
    from keyramp.profile._profile import parse_profile
    from keyramp.profile._thresholds import with_workload_errors

    (allowed,) = parse_table({"workload_errors": 10})
    assert (allowed.op, allowed.limit) == ("<=", 10.0)  # a bare number: how many are allowed
    cell = {**CELL, "total": {**CELL["total"], "workload_errors": 10}}
    assert evaluate([allowed], cell)[0].passed
    assert not evaluate([allowed], {**CELL, "total": {**CELL["total"], "workload_errors": 11}})[0].passed
    (implicit,) = with_workload_errors([], python_workload=True)
    assert (implicit.name, implicit.op, implicit.limit) == ("workload_errors", "<=", 0.0)
    assert not evaluate([implicit], {**CELL, "total": {**CELL["total"], "workload_errors": 1}})[0].passed
    assert evaluate([implicit], CELL) == []  # a summary from before they were counted: not applicable
    assert with_workload_errors([allowed], python_workload=True) == [allowed]  # the profile's own wins
    assert with_workload_errors([], python_workload=False) == []  # built-in operations: nothing implicit
    plain = parse_profile({"name": "p", "backend": "bigtable", "workload": {"ops": {"insert": 1.0}}})
    assert [t.name for t in plain.thresholds] == []
