"""A run killed with SIGKILL mid-cell is named ``died`` in every view, with what it recorded readable
(issue 39): ``keyramp list``, the catalog that had cached it as running, the UI's run list and run
page, and ``compare``, which compares the cells it finished and says so."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _runs import emulator_env, only_run_dir, timeseries_rows

from keyramp.profile._files import write_profile

pytestmark = pytest.mark.emulator


def _seconds_of(out: Path, cell_prefix: str) -> int:
    runs = [p for p in out.iterdir() if p.is_dir()] if out.exists() else []
    if not runs or not (runs[0] / "timeseries").is_dir():
        return 0
    return sum(1 for r in timeseries_rows(runs[0]) if r["op"] == "*" and r["cell"].startswith(cell_prefix))


def test_a_run_killed_mid_cell_is_named_died_everywhere(tmp_path: Path, bigtable_emulator: Any,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from keyramp.cli._main import main
    from keyramp.compare import build_comparison
    from keyramp.results._catalog import load_run
    from keyramp.results._index import Catalog, RunQuery
    from keyramp.web import create_app

    profile = write_profile(
        tmp_path / "p.toml", {"name": "killed", "backend": "bigtable", "duration": "3s"},
        workload={"ops": {"insert": 1.0}, "record_count": 0}, keys={"strategy": ["random", "sequential"]},
        schedule={"kind": "constant", "rate": 100, "warmup": "0s"},
    )
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(out), "--quiet"],
                            env=emulator_env(bigtable_emulator), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        catalog = client = None
        while time.monotonic() < deadline and _seconds_of(out, "c01") < 1:  # the second cell measures
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            # the run's manifest written (atomically): before it, the directory alone reads as corrupt
            if catalog is None and out.exists() and any(out.glob("*/manifest.json")):
                catalog, client = Catalog(out), create_app(out).test_client()
                # both have seen it running: what they cached must not outlive its process
                assert catalog.query(RunQuery())[0][0]["status"] == "running"
                assert "status-running" in client.get("/").data.decode()
            time.sleep(0.1)
        proc.kill()  # SIGKILL: nothing of the run's own gets to record its end
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert catalog is not None and client is not None
    run_dir = only_run_dir(out)
    run = load_run(run_dir)
    assert run.status == "died" and run.died is not None
    assert run.died == f"its process (pid {proc.pid} on {run.manifest.host if run.manifest else '?'}) is gone"
    assert run.ok and list(run.cells) == ["c00-bigtable-random"]  # the cell it finished is readable

    row = catalog.query(RunQuery())[0][0]  # the catalog that had cached it as running
    assert row["status"] == "died" and row["reason"].startswith("died: its process")
    assert [r["run_id"] for r in catalog.query(RunQuery(status="died"))[0]] == [run.run_id]
    assert main(["list", "--results", str(out)]) == 0
    listed = capsys.readouterr().out
    assert f"{run.run_id}  killed   died" in listed and "the run died: its process" in listed

    runs_page = client.get("/").data.decode()
    assert 'class="badge status-died">died<' in runs_page and "status-running" not in runs_page
    page = client.get(f"/runs/{run.run_id}").data.decode()
    assert 'class="badge status-died">died<' in page and "reason: died: its process" in page
    assert client.get(f"/runs/{run.run_id}/live.json").get_json()["running"] is False
    # the killed cell's seconds are readable too (its time series parts)
    series = client.get(f"/runs/{run.run_id}/series/c01-bigtable-sequential.json").get_json()
    assert series["ops"]["*"]["t"] and series["ops"]["*"]["ops_per_s"][0] > 0

    cmp = build_comparison([run], baseline=run)
    assert any(w.startswith(f"{run.run_id} (baseline): the run died") for w in cmp.warnings)
