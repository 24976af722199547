"""live.json: what a run in progress is doing, written by the ``LiveFile`` observer."""

from __future__ import annotations

import json
import time
from pathlib import Path

from keyramp.profile._profile import parse_profile
from keyramp.results._live import LIVE_FILE, LiveFile, schedule_step
from keyramp.results._live_doc import LiveStatus
from keyramp.results._rows import TimeseriesRow
from keyramp.results._summary import CellSummary, RunSummary


def _cells(schedule: dict, duration: str = "20s"):  # type: ignore[no-untyped-def]
    return parse_profile({"name": "p", "duration": duration, "backend": ["datastore", "bigtable"],
                          "schedule": schedule}).cells


def _row(count: int, target: float | None) -> TimeseriesRow:
    return TimeseriesRow(cell="c", op="*", second=0, count=count, errors=0, p50_ms=1.0, p99_ms=2.0,
                         service_p99_ms=2.0, max_ms=3.0, target_ops_per_s=target, late=0, dropped=0,
                         error_classes={})


def test_live_file_follows_phases_seconds_and_the_end(tmp_path: Path) -> None:
    cells = _cells({"kind": "ramp_500_50_5", "start_ops": 100, "step": "1m", "time_scale": 12})
    live = LiveFile(cells=len(cells))
    live.run_started(run_id="R", profile=None, path=str(tmp_path))
    read = lambda: json.loads((tmp_path / LIVE_FILE).read_text())  # noqa: E731
    doc = read()
    assert (doc["status"], doc["cells"], doc["cell"], doc["finished"]) == ("running", 2, None, [])
    assert abs(doc["updated_epoch"] - time.time()) < 60
    live.cell_phase(cells[0], "preloading")
    assert read()["cell"]["phase"] == "preloading" and read()["cell"]["id"] == cells[0].id
    # 12x time scale: a 1-minute step lasts 5 wall seconds; second 7 is in the second step (150 ops/s)
    live.second(cells[0], [_row(149, 150.0)], 8.0, users=6)
    cell = read()["cell"]
    assert (cell["phase"], cell["elapsed_s"], cell["achieved_ops_per_s"], cell["target_ops_per_s"],
            cell["users"]) == ("measuring", 8.0, 149, 150.0, 6)
    assert cell["step"] == {"index": 2, "of": 4, "ops_per_s": 150.0}
    live.cell_finished(cells[0], CellSummary())
    assert read()["finished"] == [cells[0].id] and read()["cell"] is None
    live.second(cells[1], [_row(100, 100.0)], 1.0, users=6)  # a second before any phase event
    assert read()["cell"]["id"] == cells[1].id
    live.run_finished(RunSummary(status="interrupted"))
    assert read()["status"] == "interrupted" and read()["cell"] is None
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically


def test_schedule_steps_only_for_stepped_schedules() -> None:
    constant = _cells({"kind": "constant", "rate": 10})[0]
    assert schedule_step(constant, 3.0) is None
    steps = _cells({"kind": "step", "steps": [10, 20, 40], "step": "5s"}, duration="15s")[0]
    assert [schedule_step(steps, t).index for t in (0.0, 4.9, 5.0, 14.9, 99.0)] == [1, 1, 2, 3, 3]
    assert schedule_step(steps, 12.0).ops_per_s == 40.0
    spike = _cells({"kind": "spike", "rate": 10, "burst_ops": 90, "burst_at": "5s", "burst_for": "5s"})[0]
    assert [schedule_step(spike, t).ops_per_s for t in (1.0, 6.0, 12.0)] == [10.0, 90.0, 10.0]


def test_what_live_file_writes_reads_through_its_model_unchanged(tmp_path: Path) -> None:
    """Every state LiveFile writes is a LiveStatus with each field declared (nothing left in
    ``extra``) that writes back key for key: the UI reads live.json through the model."""
    cells = _cells({"kind": "ramp_500_50_5", "start_ops": 100, "step": "1m", "time_scale": 12})
    live = LiveFile(cells=len(cells))
    seen = []

    def check() -> None:
        raw = json.loads((tmp_path / LIVE_FILE).read_text())
        doc = LiveStatus.from_json(raw)
        assert doc.to_json() == raw and not doc.extra and (doc.cell is None or not doc.cell.extra), raw
        seen.append(doc)

    live.run_started(run_id="R", profile=None, path=str(tmp_path))
    check()
    live.cell_phase(cells[0], "preloading")
    check()
    live.second(cells[0], [_row(149, 150.0)], 8.0, users=6)
    check()
    live.cell_finished(cells[0], CellSummary())
    check()
    live.run_finished(RunSummary(status="complete"))
    check()
    measuring = seen[2].cell
    assert measuring is not None and measuring.step is not None and measuring.step.of == 4
    assert (seen[-1].status, seen[-1].finished, seen[-1].cell) == ("complete", [cells[0].id], None)


def test_a_warm_up_is_written_with_its_planned_seconds_for_the_uis_countdown(tmp_path: Path) -> None:
    from keyramp.results._live import warmup_phase

    cell = _cells({"kind": "constant", "rate": 10})[0]
    live = LiveFile(cells=1)
    live.run_started(run_id="R", profile=None, path=str(tmp_path))
    before = time.time()
    live.cell_phase(cell, warmup_phase(10, settle_up_to=30.0))
    doc = json.loads((tmp_path / LIVE_FILE).read_text())["cell"]
    assert doc["phase"] == "warming up 10s + until settled (≤ 30s)"
    assert (doc["warmup_s"], doc["warmup_up_to_s"]) == (10.0, 30.0) and doc["phase_since_epoch"] >= before - 1
    live.cell_phase(cell, warmup_phase(2, settle_up_to=None))
    doc = json.loads((tmp_path / LIVE_FILE).read_text())["cell"]
    assert (doc["phase"], doc["warmup_s"], doc["warmup_up_to_s"]) == ("warming up 2s", 2.0, None)
    live.cell_phase(cell, "measuring")
    assert json.loads((tmp_path / LIVE_FILE).read_text())["cell"]["warmup_s"] is None
