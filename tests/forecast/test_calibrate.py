"""``keyramp calibrate suite``: the cloud suite is written and planned, never run here (forecast/_calibrate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _runs import keyramp

from keyramp.cli._main import main
from keyramp.profile._files import load_profile


def test_suite_writes_two_cloud_profiles_and_prints_their_plan(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cal"
    assert main(["calibrate", "suite", "firestore", "--project", "acme-load-test", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    append = load_profile(out / "calibrate-firestore-append.toml")
    jump = load_profile(out / "calibrate-firestore-jump.toml")
    assert append.data["target"] == jump.data["target"] == "cloud" and append.data["project"] == "acme-load-test"
    (a,), (j,) = append.cells, jump.cells
    assert a.strategy == "sequential" and [a.schedule.rate(t) for t in (0, 200, 400, 600)] == [250, 500, 1000, 2000]
    assert j.strategy == "random" and j.schedule.rate(0) == 2000 and j.duration_s == 600
    assert append.data["workload"]["record_count"] == 0 and append.data["schedule"]["warmup_s"] == 0.0  # a new range
    assert append.data["cloud"]["max_ops_per_s"] >= 2000 and append.data["cloud"]["cleanup"] is True
    assert "cloud budget: calibrate-firestore-append → project acme-load-test" in text
    assert "675,000 operations" in text and "Nothing has run" in text and "--allow-cloud acme-load-test" in text


def test_running_the_suite_still_needs_the_explicit_opt_in(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cal"
    assert main(["calibrate", "suite", "datastore", "--project", "acme-load-test", "--out", str(out)]) == 0
    capsys.readouterr()
    # No --allow-cloud: refused before any run directory or network call (the plan is printed first).
    result = keyramp("run", str(out), "--plan", cwd=tmp_path)
    assert result.returncode == 2 and "runs only with --allow-cloud acme-load-test" in result.stderr
    assert "cloud budget: calibrate-datastore-append" in result.stdout
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bigtable", "--project", "acme-load-test"], "--instance: required for bigtable"),
        (["firestore", "--project", "acme-load-test", "--rates", "250,fast"], "--rates"),
        (["firestore", "--project", "acme-load-test", "--step", "soon"], "--step"),
    ],
)
def test_bad_suite_input(tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "suite", *args, "--out", str(tmp_path / "c")]) == 2
    assert message in capsys.readouterr().err


def test_fit_refuses_runs_that_are_not_keyramp_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "manifest.json").write_text('{"run_id": "r", "profile": {"name": "x"}, "cells": []}')
    assert main(["calibrate", "fit", str(tmp_path / "r"), "--out", str(tmp_path / "f.json")]) == 2
    assert "no resolved profile" in capsys.readouterr().err
