"""What the time charts draw besides the data (web/_marks.py): thresholds on the charts they gate,
the points that breach them, the warm-up's end and the schedule's steps."""

from __future__ import annotations

from typing import Any

from keyramp.results._summary import CellSummary, ManifestCell
from keyramp.web._marks import cell_markers, op_thresholds

#: one op's downsampled series, 2-second points
SERIES = {"bucket_s": 2, "t": [0, 2, 4, 6, 8], "p50_ms": [1, 1, 1, 1, 1], "p95_ms": [2, 2, 9, 2, None],
          "p99_ms": [3, 12, 14, 3, None], "error_rate": [0.0, 0.0, 0.05, 0.0, None],
          "ops_per_s": [100, 100, 40, 100, 0], "target_ops_per_s": [100, 100, 100, 200, 200]}


def _row(name: str, limit: float, op: str = "<", verdict: str = "fail") -> dict[str, Any]:
    return {"name": name, "op": op, "limit": limit, "value": 1.0, "verdict": verdict}


def test_a_threshold_is_drawn_on_its_own_operation_and_chart_with_the_points_that_breach_it() -> None:
    rows = [_row("insert.p99_ms", 10), _row("p99_ms", 13), _row("insert.error_rate", 0.01),
            _row("insert.ops_per_s", 50, ">="), _row("insert.p999_ms", 20), _row("errors", 0),
            _row("forecast.throttled_fraction", 0.05), _row("read.p99_ms", 1)]
    insert = op_thresholds(rows, "insert", SERIES)
    by_name = {t["name"]: t for t in insert}
    # another operation's threshold, and the ones the time series cannot show, are not drawn
    assert set(by_name) == {"insert.p99_ms", "insert.error_rate", "insert.ops_per_s", "insert.p999_ms"}
    p99 = by_name["insert.p99_ms"]
    assert (p99["chart"], p99["limit"], p99["label"]) == ("latency", 10, "insert.p99_ms < 10 ms")
    assert p99["breaches"] == [[2, 6.0]]  # the points at 2 s and 4 s, one span; a gap breaches nothing
    assert by_name["insert.error_rate"]["chart"] == "errors" and by_name["insert.error_rate"]["breaches"] == [[4, 6.0]]
    assert by_name["insert.error_rate"]["label"] == "insert.error_rate < 1.0 %"
    # a floor: breached where the rate falls below it (the last point: 0 ops/s)
    assert by_name["insert.ops_per_s"]["breaches"] == [[4, 6.0], [8, 10.0]]
    assert by_name["insert.p999_ms"]["series"] is None and by_name["insert.p999_ms"]["breaches"] == []
    # the cell's own (bare) thresholds go on its all-operations charts
    assert [t["name"] for t in op_thresholds(rows, "*", SERIES)] == ["p99_ms"]
    assert op_thresholds(rows, "*", SERIES)[0]["breaches"] == [[4, 6.0]]


def test_a_share_of_the_target_follows_the_schedule() -> None:
    (ratio,) = op_thresholds([_row("ops_per_s_ratio", 0.9, ">=")], "*", SERIES)
    assert ratio["values"] == [90.0, 90.0, 90.0, 180.0, 180.0]
    assert ratio["breaches"] == [[4, 10.0]]  # 40 < 90, then 100 and 0 below 180 once the target doubles
    assert ratio["label"] == "ops_per_s_ratio >= 90 % of target"
    assert op_thresholds([_row("ops_per_s_ratio", 0.9, ">=")], "*", {**SERIES, "target_ops_per_s": []}) == []


def test_markers_for_the_warm_up_and_each_step_in_wall_seconds() -> None:
    step = ManifestCell(id="c00-x-y", duration_s=30.0, time_scale=2.0,
                        schedule={"kind": "step", "steps": [100, 200, 400], "step": 20.0})
    markers = cell_markers(CellSummary(warmup_s=14.1), step)
    # schedule time 20 s and 40 s of a 60-s schedule compressed ×2: wall seconds 10 and 20
    assert [(m["t"], m["kind"], m["short"]) for m in markers] == [
        (0, "warmup", "warm-up ended"), (10.0, "step", "step 2: 200 ops/s"), (20.0, "step", "step 3: 400 ops/s")]
    assert "14 s before, not measured" in markers[0]["label"]
    constant = ManifestCell(id="c00-x-y", duration_s=30.0, schedule={"kind": "constant", "rate": 100})
    assert cell_markers(CellSummary(), constant) == []  # nothing to mark: no warm-up recorded, no steps
    broken = ManifestCell(id="c00-x-y", duration_s=30.0, schedule={"kind": "nope"})
    assert cell_markers(None, broken) == []  # a hand-edited manifest: no markers, no error
