from __future__ import annotations

import json
from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp.core._errors import UsageError
from keyramp.results._catalog import (
    cell_identity,
    hlog_path,
    list_runs,
    load_run,
    resolve_run,
    safe_run_path,
)


@pytest.fixture()
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


def test_synthetic_run_loads_clean(results: Path) -> None:
    run = load_run(make_run(results, seed=3))
    assert run.ok and run.status == "complete" and run.warnings == []
    assert run.profile_name == "synthetic"
    assert run.backends == ["datastore"]
    assert run.strategies == ["sequential", "random"]
    assert run.cell_ids == ["c00-datastore-sequential", "c01-datastore-random"]
    assert run.started_at.startswith("2026-01-01T00:03")


def test_truncated_summary_is_a_warning_not_an_exception(results: Path) -> None:
    path = make_run(results, seed=7)
    text = (path / "summary.json").read_text()
    (path / "summary.json").write_text(text[: len(text) // 2])
    run = load_run(path)
    assert not run.ok
    assert any("summary.json is not valid JSON" in w for w in run.warnings)
    assert run.status == "complete"  # from the manifest
    assert run.profile_name == "synthetic"


def test_a_manifest_field_of_the_wrong_type_is_said_not_silently_dropped(results: Path) -> None:
    path = make_run(results, seed=8)
    manifest = json.loads((path / "manifest.json").read_text())
    (path / "manifest.json").write_text(json.dumps({**manifest, "seed": "abc"}))
    run = load_run(path)
    assert run.manifest is None
    assert run.manifest_error == "manifest.json: RunManifest.seed: expected a number, got a string"
    assert run.warnings == [run.manifest_error] and run.ok  # the measurements are intact
    assert run.summary is not None


def test_missing_summary_and_running(results: Path) -> None:
    finished = make_run(results, seed=8)
    (finished / "summary.json").unlink()
    run = load_run(finished)
    assert not run.ok and "summary.json missing" in run.warnings
    running = load_run(make_run(results, seed=9, status="running"))
    assert running.status == "running" and not running.ok and running.warnings == []


def test_schema_mismatch_and_garbage_manifest(results: Path) -> None:
    path = make_run(results, seed=10)
    summary = json.loads((path / "summary.json").read_text())
    summary["schema"] = 99
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "manifest.json").write_text("[1, 2")
    run = load_run(path)
    assert not run.ok
    assert any("schema 99" in w for w in run.warnings)
    assert any("manifest.json is not valid JSON" in w for w in run.warnings)


def test_empty_directory(results: Path) -> None:
    path = results / "20260101T000000000Z-empty-abcd"
    path.mkdir(parents=True)
    run = load_run(path)
    assert not run.ok and run.status == "corrupt"
    assert "manifest.json missing" in run.warnings


def test_list_runs_newest_first_and_skips_non_runs(results: Path) -> None:
    ids = [make_run(results, seed=s).name for s in (2, 11, 5)]
    (results / "not-a-run").mkdir()
    (results / "baselines.json").write_text("{}")
    listed = [r.run_id for r in list_runs(results)]
    assert listed == sorted(ids, reverse=True)
    assert list_runs(results / "nope") == []


@pytest.mark.parametrize("bad", ["../etc", "..", "x/../../y", "/abs", "20260101T000000000Z-a-abcd/..",
                                 "20260101T000000000Z-A-abcd", "", ".hidden"])
def test_safe_run_path_rejects_bad_ids(results: Path, bad: str) -> None:
    with pytest.raises(UsageError):
        safe_run_path(results, bad)


def test_safe_run_path_accepts_a_run_id(results: Path) -> None:
    assert (
        safe_run_path(results, "20261121T140700123Z-quickstart-1a2b") == results / "20261121T140700123Z-quickstart-1a2b"
    )


def test_resolve_run_by_id_and_path_and_unknown(results: Path) -> None:
    path = make_run(results, seed=12)
    assert resolve_run(path.name, results).path == path
    assert resolve_run(str(path), Path("/nonexistent")).run_id == path.name
    with pytest.raises(UsageError, match="unknown run"):
        resolve_run("20260101T000000000Z-ghost-abcd", results)
    with pytest.raises(UsageError, match="unknown run"):
        resolve_run(str(results / "nothing-here"), results)


def test_cell_identity_and_hlog_path_guard(results: Path) -> None:
    assert cell_identity("c03-bigtable-field_promotion-x") == "bigtable-field_promotion-x"
    run = load_run(make_run(results, seed=13, seconds=2))
    assert hlog_path(run, "c00-datastore-sequential", "read", service=True).name == \
        "c00-datastore-sequential.read.service.hlog"
    with pytest.raises(UsageError):
        hlog_path(run, "../../x", "read")
