"""A run in progress in the UI (without a browser): the runs list line, the live banner and
live.json, staleness, the partials the page swaps in, and heatmaps computed on first view."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp.web import create_app
from keyramp.web._live import STALE_AFTER_S, live_view, read_live


def _live_doc(run: Path, **cell: object) -> dict:
    doc = {"schema": 1, "run_id": run.name, "status": "running", "cells": 2, "finished": [],
           "updated_epoch": time.time(), "updated_at": "now",
           "cell": {"id": "c00-datastore-sequential", "index": 0, "phase": "measuring", "elapsed_s": 4.0,
                    "duration_s": 10.0, "target_ops_per_s": 750.0, "achieved_ops_per_s": 742,
                    "step": {"index": 2, "of": 4, "ops_per_s": 750.0}, **cell}}
    (run / "live.json").write_text(json.dumps(doc))
    return doc


@pytest.fixture()
def running(tmp_path: Path) -> Path:
    run = make_run(tmp_path, profile_name="ramp", seconds=5, status="running")
    _live_doc(run)
    return run


def test_a_running_run_is_listed_with_what_it_is_doing(running: Path) -> None:
    client = create_app(running.parent).test_client()
    html = client.get("/runs").data.decode()
    assert 'class="badge status-running">running<' in html
    assert ("cell 1 of 2: c00-datastore-sequential · measuring 4 s of 10 s · step 2 of 4 (750 ops/s) · "
            "742 / 750 ops/s") in html
    row = client.get("/runs.json").get_json()["runs"][0]
    assert row["live"]["running"] and not row["live"]["stale"]


def test_run_page_has_the_live_banner_and_chart_slots_for_every_cell(running: Path) -> None:
    client = create_app(running.parent).test_client()
    html = client.get(f"/runs/{running.name}").data.decode()
    assert 'id="live"' in html and f'data-live-src="/runs/{running.name}/live.json"' in html
    assert html.count('class="charts"') == 2  # also the cell that has not started
    assert html.count("Summary, thresholds and key space appear when this cell has finished.") == 2
    live = client.get(f"/runs/{running.name}/live.json")
    assert live.headers["Cache-Control"] == "no-store"
    doc = live.get_json()
    assert doc["status"] == "running" and doc["cell"]["id"] == "c00-datastore-sequential" and doc["done"] == []
    assert doc["text"].startswith("cell 1 of 2: c00-datastore-sequential · measuring")


def test_a_dead_runs_live_file_goes_stale(running: Path) -> None:
    doc = _live_doc(running)
    doc["updated_epoch"] = time.time() - STALE_AFTER_S - 5
    (running / "live.json").write_text(json.dumps(doc))
    live = create_app(running.parent).test_client().get(f"/runs/{running.name}/live.json").get_json()
    assert live["stale"] and not live["running"] and "may have stopped" in live["text"]
    # a run from before live.json existed, still marked running: stale once its manifest is old
    assert live_view(None, status="running", cells=3)["stale"]
    assert live_view(None, status="running", cells=3, since=time.time() - STALE_AFTER_S - 1)["stale"]
    fresh = live_view(None, status="running", cells=3, since=time.time() - 1)  # just started
    assert fresh["running"] and fresh["text"] == "starting"
    assert live_view(None, status="complete", cells=3) == {
        "running": False, "stale": False, "status": "complete", "counting_down": False, "age_s": None, "cell": None,
        "finished": [],
        "cells": 3, "text": "complete"}


def test_partials_swap_in_a_finished_cell_and_the_head(tmp_path: Path) -> None:
    run = make_run(tmp_path, profile_name="ramp", seconds=5, keyspace={"hottest_1pct_share": 0.9, "samples": 90})
    client = create_app(run.parent).test_client()
    part = client.get(f"/runs/{run.name}/cells/c01-datastore-random.html").data.decode()
    assert part.startswith('<div class="cell-summary" data-cell="c01-datastore-random" data-finished="true"')
    assert "<h3>Summary</h3>" in part and "hottest 1 % of the key range" in part and "<html" not in part
    head = client.get(f"/runs/{run.name}/head.html").data.decode()
    assert head.startswith('<div class="run-top" id="run-head"') and "status-complete" in head
    assert "<h2>Manifest</h2>" in head and '<b>Ended</b>' in head  # ended time, and the banner says so
    assert client.get(f"/runs/{run.name}/cells/c09-nope.html").status_code == 404


def test_heatmap_is_computed_from_the_sampled_keys_on_first_view(tmp_path: Path) -> None:
    run = make_run(tmp_path, profile_name="keys", seconds=5, keyspace={"hottest_1pct_share": 0.01, "samples": 100})
    client = create_app(run.parent).test_client()
    html = client.get(f"/runs/{run.name}").data.decode()
    assert "No heatmap yet" not in html and "keyramp keyspace" not in html
    src = f"/runs/{run.name}/keyspace/c00-datastore-sequential.json"
    assert f'data-heatmap-src="{src}"' in html
    doc = client.get(src).get_json()
    from keyramp.results._read import read_keys

    samples = read_keys(run, cell="c00-datastore-sequential").num_rows  # through the reader API
    assert doc["cell"] == "c00-datastore-sequential" and doc["samples"] == samples
    assert sum(map(sum, doc["counts"])) == samples  # every sampled access lands in the matrix
    assert len(doc["counts"]) == 5 and len(doc["bucket_labels"]) == doc["buckets"] + 1
    assert not (run / "keyspace").exists()  # the UI stays read-only
    assert client.get(src).data == client.get(src).data  # cached
    assert client.get(f"/runs/{run.name}/keyspace/c07-none.json").status_code == 404


def test_a_misshapen_live_file_is_read_as_none(tmp_path: Path) -> None:
    (tmp_path / "live.json").write_text(json.dumps({"status": "running", "cells": "two"}))
    assert read_live(tmp_path) is None  # as a torn write: the next poll reads the rewritten file
    (tmp_path / "live.json").write_text(json.dumps({"status": "running", "cells": 2, "finished": ["c00"]}))
    doc = read_live(tmp_path)
    assert doc is not None and live_view(doc, status="complete", cells=5)["text"] == "complete: 1 of 2 cells finished"


def test_a_warm_up_counts_down_then_says_it_is_settling() -> None:
    from keyramp.results._live_doc import LiveCell, LiveStatus

    def line(since: float, up_to: float | None) -> dict:  # type: ignore[type-arg]
        cell = LiveCell(id="c00-datastore-sequential", index=0, phase="warming up 10s", phase_since_epoch=since,
                        warmup_s=10.0, warmup_up_to_s=up_to)
        return live_view(LiveStatus(status="running", cells=2, cell=cell, updated_epoch=1000.0), status="running",
                         cells=2, now=1003.2)

    counting = line(since=1000.0, up_to=30.0)
    assert counting["counting_down"] and "warming up (not measured): 7 s left of 10 s" in counting["text"]
    assert "then until latency settles (≤ 30 s in all)" in counting["text"]
    settling = line(since=990.0, up_to=30.0)
    assert "settling, 13 s so far (until latency stops improving, ≤ 30 s)" in settling["text"]
    assert "ending" in line(since=990.0, up_to=None)["text"]
    measuring = live_view(LiveStatus(status="running", cells=2, updated_epoch=1000.0, cell=LiveCell(
        id="c", index=0, phase="measuring", elapsed_s=3.0, duration_s=10.0)), status="running", cells=2, now=1001.0)
    assert not measuring["counting_down"] and "measuring 3 s of 10 s" in measuring["text"]
