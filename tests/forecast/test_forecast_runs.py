"""Issue 16, done when: a REAL run (runner + Locust + the Firestore emulator) forecast to its launch.

One run of a Firestore profile with sequential and random ids and a 500/50/5 launch to
5,000 writes/s serves every check: summary.json, the terminal table (report.txt), the
forecast threshold, the UI run page, the scenario report and ``keyramp forecast RUN``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _runs import assert_append_points, emulator_env, keyramp, load, write_profile

from keyramp.forecast._band import HOTSPOT_MIN, OK_MAX

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def run(firestore_emulator, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, Path]:
    tmp = tmp_path_factory.mktemp("forecast-run")
    profile = write_profile(
        tmp / "launch.toml",
        {"name": "launch-check", "backend": "firestore", "duration": "3s", "seed": 5, "rules": ["BP-KEY-1"],
         "description": "Anti-pattern and best practice side by side"},
        workload={"ops": {"insert": 1.0}, "record_count": 300, "key_samples_per_s": 400},
        keys={"strategy": ["sequential", "random"]},
        schedule={"kind": "constant", "rate": 200, "warmup": "1s"},
        launch={"kind": "ramp_500_50_5", "ceiling": 5000, "duration": "1h", "plan": False},  # the forecast only
        thresholds={"forecast.throttled_fraction": 0.05},
    )
    result = keyramp("run", str(profile), "--out", str(tmp / "out"), "--quiet", env=emulator_env(firestore_emulator))
    # The profile cites a rule, so keyramp run also wrote the scenario report (under reports/).
    (report,) = (tmp / "out" / "reports").glob("scenarios-*")
    (run_dir,) = (p for p in (tmp / "out").iterdir() if p.is_dir() and p.name != "reports")
    return run_dir, result.returncode, report


def test_summary_json_holds_the_forecast_bands(run: tuple[Path, int, Path]) -> None:
    run_dir, _, _ = run
    cells = {c["strategy"]: c for c in load(run_dir, "summary.json")["cells"].values()}
    seq, rnd = cells["sequential"]["forecast"], cells["random"]["forecast"]
    assert seq["modelled"] is True and seq["verdict"] == "hotspot" and seq["throttled_fraction"]["low"] > HOTSPOT_MIN
    assert rnd["verdict"] == "ok" and rnd["throttled_fraction"]["high"] <= OK_MAX
    assert seq["launch"]["peak_ops_per_s"] == 5000 and seq["projection"]["keys"] == "regenerated"
    # The projection reproduces the recorded stream at the emulator's own rate (measured vs regenerated).
    for fc, cell in ((seq, cells["sequential"]), (rnd, cells["random"])):
        check = fc["projection"]["check"]
        assert check["measured_hottest_1pct_share"] == pytest.approx(cell["keyspace"]["hottest_1pct_share"], abs=1e-4)
        assert check["regenerated_hottest_1pct_share"] == pytest.approx(check["measured_hottest_1pct_share"],
                                                                        abs=0.1)
    # The measured side: warm-up inserts counted, append points, the hot window in ops/s.
    assert cells["sequential"]["warmup_inserts"] > 0
    assert_append_points(cells["sequential"], 1)
    assert cells["random"]["keyspace"]["append_points"] is None
    assert cells["sequential"]["keyspace"]["hot_window_vs_capacity"] == "below the band"


def test_the_threshold_fails_the_sequential_cell_and_the_table_shows_the_forecast(run: tuple[Path, int, Path]) -> None:
    run_dir, code, _ = run
    assert code == 1  # the forecast threshold failed: CI stops a change that introduces a hotspot
    cells = {c["strategy"]: c for c in load(run_dir, "summary.json")["cells"].values()}
    assert [t["passed"] for t in cells["sequential"]["thresholds"]] == [False]
    assert [t["passed"] for t in cells["random"]["thresholds"]] == [True]
    table = (run_dir / "report.txt").read_text()
    # (a cell id may carry † when a busy machine limited its generator)
    rows = {line.split("│")[1].split()[0]: line for line in table.splitlines() if "c0" in line and "│" in line}
    assert "hotspot" in rows["c00-firestore-sequential"] and "ok 0 %" in rows["c01-firestore-random"]
    assert "modelled launch forecast" in table


def test_the_ui_and_the_scenario_report_show_it(run: tuple[Path, int, Path]) -> None:
    from keyramp.web import create_app

    run_dir, _, report = run
    html = create_app(run_dir.parent).test_client().get(f"/runs/{run_dir.name}").data.decode()
    assert 'class="badge verdict-hotspot"' in html and 'class="badge verdict-ok"' in html
    md = (report / "report.md").read_text()
    assert "forecast at ramp 500 ops/s +50% every 300s up to 5000 for 1h: hotspot" in md
    assert "forecast at ramp 500 ops/s +50% every 300s up to 5000 for 1h: ok" in md


def test_keyramp_forecast_reprojects_the_finished_run(run: tuple[Path, int, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from keyramp.cli._main import main

    run_dir, _, _ = run
    assert main(["forecast", str(run_dir), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    summary = load(run_dir, "summary.json")["cells"]
    for cell_id, fc in again.items():
        assert fc["verdict"] == summary[cell_id]["forecast"]["verdict"]
        assert fc["throttled_fraction"] == summary[cell_id]["forecast"]["throttled_fraction"]  # deterministic
    assert main(["forecast", str(run_dir), "--rate", "400", "--json"]) == 0
    assert all(fc["verdict"] == "ok" for fc in json.loads(capsys.readouterr().out).values())  # under one range's floor
