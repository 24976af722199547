"""The background planner (web/_planner.py): a complete run with a ``[launch]`` and no plan is planned
off the request thread, once per app, with its progress on the page and in the JSON twins.

A blocking planner function (released cell by cell) makes every race deterministic; one test
plans a one-cell synthetic run for real, end to end, into plan.json."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _plans import cell_plan, resolved_launch
from _poll import wait_for
from _synthetic import make_run
from flask import Flask

from keyramp.cli._main import main
from keyramp.forecast._plan_run import criteria
from keyramp.forecast._prices import Prices
from keyramp.results._catalog import Run
from keyramp.results._plan_doc import CellLaunchPlan, LaunchPlan
from keyramp.web import create_app
from keyramp.web._planner import BackgroundPlanner

CELLS = (("datastore", "random"), ("datastore", "sequential"))
IDS = ("c00-datastore-random", "c01-datastore-sequential")


def _unplanned(root: Path, *, cells: tuple[tuple[str, str], ...] = CELLS, seed: int = 9) -> Path:
    """A complete synthetic run with a [launch] in its profile and no plan anywhere."""
    run = make_run(root, seconds=5, seed=seed, cells=cells)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["profile"]["launch"] = resolved_launch()
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


class Gate:
    """A planner function that plans a cell (a real plan of its design) only once the test releases it."""

    def __init__(self, *, fail: Exception | None = None) -> None:
        self.calls: list[str] = []
        self.released = threading.Semaphore(0)
        self.fail = fail

    def __call__(self, run: Run, cell: str, prices: Prices) -> LaunchPlan:
        self.calls.append(cell)
        assert self.released.acquire(timeout=60), "never released"
        if self.fail is not None:
            raise self.fail
        backend, strategy = cell.split("-", 2)[1:]
        plan = CellLaunchPlan.from_json({**json.loads(cell_plan(backend, strategy)), "cell": cell})
        return LaunchPlan(run=run.run_id, target_ops_per_s=plan.target_ops_per_s, target_from="the [launch] peak",
                          throttle=0.01, criteria=criteria(0.01), cells={plan.cell_id: plan})


@pytest.fixture()
def gated(tmp_path: Path) -> Iterator[tuple[Flask, Gate, Path]]:
    run = _unplanned(tmp_path)
    app, gate = create_app(tmp_path), Gate()
    app.extensions["keyramp_planner"] = BackgroundPlanner(plan_cell=gate)
    yield app, gate, run
    gate.released.release(len(IDS))  # never leave the planner's thread blocked
    app.extensions["keyramp_planner"].close()


def _plans(client: Any, run: Path) -> dict[str, Any]:
    return client.get(f"/runs/{run.name}/plans.json").get_json()


def test_the_first_view_answers_at_once_and_the_plans_arrive_as_they_are_planned(gated: Any) -> None:
    app, gate, run = gated
    client = app.test_client()
    html = client.get(f"/runs/{run.name}").data.decode()  # the planner is blocked: this view did not wait for it
    assert not (run / "plan.json").exists()
    assert f'data-plans-src="/runs/{run.name}/plans.json"' in html and html.count('class="plan planning"') == 2
    assert html.count("being planned…") == 2 and "being computed in the background" in html
    first = client.get(f"/runs/{run.name}.json").get_json()["run"]["plans"]
    assert (first["status"], first["total"], first["planned"]) == ("planning", 2, [])
    wait_for(lambda: gate.calls, "the planner to start")
    assert _plans(client, run)["hint"].startswith("being computed in the background (0 of 2 cells planned)")

    gate.released.release()  # the first cell's plan arrives: the answer and its plan section show it
    status = wait_for(lambda: (d := _plans(client, run))["done"] == 1 and d, "the first plan")
    assert status["status"] == "planning" and status["planned"] == [IDS[0]] and status["target"] == "5,000 ops/s"
    answer = client.get(f"/runs/{run.name}/answer.html").data.decode()
    assert "reachable: 500/50/5" in answer and answer.count("being planned…") == 1 and "1 of 2 cells planned" in answer
    assert f'<div class="plan" id="plan-{IDS[0]}">' in client.get(f"/runs/{run.name}/plans/{IDS[0]}.html").data.decode()
    assert 'class="plan planning"' in client.get(f"/runs/{run.name}/plans/{IDS[1]}.html").data.decode()
    assert not (run / "plan.json").exists()  # saved once, when every cell is planned

    gate.released.release()
    done = wait_for(lambda: (d := _plans(client, run))["status"] == "planned" and d, "the whole plan")
    assert done["planned"] == list(IDS) and done["source"] in ("plan.json", "planned in the background")
    saved = LaunchPlan.from_json(json.loads((run / "plan.json").read_text()))
    assert list(saved.cells) == list(IDS) and saved.target_from == "the [launch] peak"
    page = client.get(f"/runs/{run.name}").data.decode()
    assert "data-plans-src" not in page and 'class="plan planning"' not in page and page.count('class="plan" id=') == 2
    assert gate.calls == list(IDS)


def test_concurrent_first_views_and_reloads_start_one_planning(gated: Any) -> None:
    app, gate, run = gated
    barrier = threading.Barrier(3)
    answers: list[str] = []

    def view() -> None:
        barrier.wait()
        answers.append(app.test_client().get(f"/runs/{run.name}.json").get_json()["run"]["plans"]["status"])

    threads = [threading.Thread(target=view) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert answers == ["planning"] * 3
    client = app.test_client()
    for _ in range(3):  # reloads while it plans
        assert client.get(f"/runs/{run.name}").status_code == 200
    gate.released.release(len(IDS))
    wait_for(lambda: _plans(client, run)["status"] == "planned", "the plan")
    client.get(f"/runs/{run.name}")  # and after: plan.json is read, nothing is planned again
    assert gate.calls == list(IDS)


def test_runs_are_planned_one_after_another_and_a_queued_one_says_so(gated: Any, tmp_path: Path) -> None:
    app, gate, run = gated
    other = _unplanned(tmp_path, seed=12)
    client = app.test_client()
    assert _plans(client, run)["hint"].startswith("being computed in the background (0 of 2 cells planned)")
    wait_for(lambda: gate.calls, "the planner to start")
    queued = _plans(client, other)
    assert queued["status"] == "planning" and "(queued behind 1 other run)" in queued["hint"]
    gate.released.release(2 * len(IDS))
    wait_for(lambda: _plans(client, other)["status"] == "planned", "the second run's plan")
    assert gate.calls == [*IDS, *IDS] and (run / "plan.json").exists() and (other / "plan.json").exists()


def test_a_planning_that_fails_says_why_on_the_page_and_is_not_retried(gated: Any) -> None:
    app, gate, run = gated
    gate.fail = ValueError("the key stream does not read")
    client = app.test_client()
    client.get(f"/runs/{run.name}")
    gate.released.release()
    status = wait_for(lambda: (d := _plans(client, run))["status"] == "failed" and d, "the failure")
    assert status["reason"] == f"ValueError: the key stream does not read (cell {IDS[0]})"
    html = client.get(f"/runs/{run.name}").data.decode()
    assert f"planning failed (ValueError: the key stream does not read (cell {IDS[0]})): keyramp plan {run}" in html
    assert "Traceback" not in html and "plan-failed" in html and 'class="plan planning"' not in html
    for _ in range(3):
        assert client.get(f"/runs/{run.name}.json").get_json()["run"]["plans"]["status"] == "failed"
    assert gate.calls == [IDS[0]] and not (run / "plan.json").exists()


def test_closing_stops_the_planner_between_cells_and_saves_nothing(gated: Any) -> None:
    app, gate, run = gated
    app.test_client().get(f"/runs/{run.name}")
    wait_for(lambda: gate.calls, "the planner to start")
    planner = app.extensions["keyramp_planner"]
    planner.close(timeout_s=0.0)
    gate.released.release()  # the cell in progress ends; the next one is never started
    wait_for(lambda: not planner.running, "the planner's thread to end")
    assert gate.calls == [IDS[0]] and not (run / "plan.json").exists()


def test_a_run_is_planned_for_real_into_plan_json_and_a_new_server_reads_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The default planner (``keyramp plan``'s ``plan_run``, cell by cell) end to end on a one-cell run."""
    run = _unplanned(tmp_path, cells=(("datastore", "random"),), seed=11)
    app = create_app(tmp_path)
    client = app.test_client()
    try:
        assert client.get(f"/runs/{run.name}.json").get_json()["run"]["plans"]["total"] == 1
        wait_for(lambda: _plans(client, run)["status"] == "planned", "the real plan", timeout=120)
    finally:
        app.extensions["keyramp_planner"].close()
    text = (run / "plan.json").read_text()
    doc = json.loads(text)
    capsys.readouterr()
    assert main(["plan", str(run), "--json"]) == 0
    assert text == capsys.readouterr().out  # the bytes `keyramp plan RUN --json` prints
    assert LaunchPlan.from_json(doc).to_json() == doc and list(doc["cells"]) == ["c00-datastore-random"]

    fresh = create_app(tmp_path)
    fresh.extensions["keyramp_planner"] = BackgroundPlanner(plan_cell=Gate(fail=AssertionError("planned again")))
    again = fresh.test_client().get(f"/runs/{run.name}.json").get_json()["run"]
    assert again["plans"]["status"] == "planned" and again["plans"]["source"] == "plan.json"
    assert again["cells"][0]["plan"]["doc"] == doc["cells"]["c00-datastore-random"]
