"""The run page's answer (web/_answer.py), each cell's plan section (web/_plan.py) and where plans
come from (web/_plans.py): real plans (``plan_cell`` on regenerated designs) in synthetic runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _plans import add_plans
from _synthetic import make_run

from keyramp.results._plan_doc import CellLaunchPlan
from keyramp.web import create_app
from keyramp.web._plan import plan_view, ramp_chart, read_plan

PLANNED = {"c00-datastore-sequential": ("datastore", "sequential"), "c01-datastore-random": ("datastore", "random")}
APPEND = {"hottest_1pct_share": 0.71, "append_points": 1, "append_fraction": 0.99, "samples": 500}
#: What a page must never show: Python's spellings of missing or broken numbers.
_UNREADABLE = re.compile(r"\bNone\b|\bnan\b|built-in method")


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3-cell run: two cells planned (sequential ids need shards, random ids ramp), one not, with lint."""
    run = make_run(tmp_path_factory.mktemp("web-plan"), seconds=5, seed=8, keyspace=APPEND,
                   cells=(("datastore", "sequential"), ("datastore", "random"), ("firestore", "random")),
                   error_rate={"insert": 0.01, "read": 0.0})
    add_plans(run, PLANNED)
    summary = json.loads((run / "summary.json").read_text())
    for cid, cell in summary["cells"].items():  # as the run evaluates them; plan.reachable fails where it is not
        cell["thresholds"] = [{"name": "insert.p99_ms", "limit": 50, "value": 3.2, "passed": True, "verdict": "pass"}]
        if cid in PLANNED:
            ok = cell["plan"]["reachable"]
            cell["thresholds"].append({"name": "plan.reachable", "limit": 1, "value": int(ok), "passed": ok,
                                       "verdict": "pass" if ok else "fail"})
    (run / "summary.json").write_text(json.dumps(summary))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["lint"] = [{"rule": "BP-KEY-1", "severity": "warning", "message": f"lint {i}", "cell": None}
                        for i in range(3)]
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_run_page_opens_with_the_answer_and_each_planned_cell_has_its_plan(planned: Path) -> None:
    html = create_app(planned.parent).test_client().get(f"/runs/{planned.name}").data.decode()
    answer = html.index('id="answer"')
    # the answer first: before the manifest, the lint findings and every cell's evidence
    assert answer < html.index('class="card manifest"') < html.index('class="card lint"') < html.index('id="cell-')
    rows = _text(html[answer:html.index("</table>", answer)]).replace(" §", "")  # § links the cell's section
    summary = json.loads((planned / "summary.json").read_text())["cells"]
    seq = CellLaunchPlan.from_json(summary["c00-datastore-sequential"]["plan"])
    assert seq.fix is not None and seq.fix.value is not None
    assert f"c00-datastore-sequential append ×1 – not reachable; fix: shards {seq.fix.value}" in rows
    assert "c01-datastore-random append ×1 – reachable: 500/50/5, 30 min" in rows  # Google's rule: in evidence
    assert rows.count("/h, ramp $") == 2 and "c02-firestore-random append ×1 – – –" in rows  # not planned
    # thresholds and errors, per cell
    assert "1 of 2 failed: plan.reachable" in rows and "2 passed" in rows and "1 passed" in rows
    assert re.search(r"c02-firestore-random .* 1 passed [\d,]+ \(0\.\d %\)", rows)
    # a plan section per planned cell, labelled modelled, the ramp drawn against 500/50/5
    assert html.count('class="plan" id="plan-') == 2 and 'id="plan-c02-firestore-random"' not in html
    assert html.count('<polyline class="planned"') == 2 and html.count('<polyline class="google"') == 2
    # the faster ramp the model alone allows: drawn dotted and labelled, beside the recommended one
    assert html.count('<polyline class="faster"') >= 1 and "modelled, faster than Google&#39;s published rule" in html
    assert "Every figure in this plan is modelled" in html and f"<code>{seq.fix.design}</code>" in html
    assert not _UNREADABLE.findall(_text(html))


def test_the_json_twin_carries_the_same_answer_and_plans(planned: Path) -> None:
    client = create_app(planned.parent).test_client()
    run = client.get(f"/runs/{planned.name}.json").get_json()["run"]
    page = _text(client.get(f"/runs/{planned.name}").data.decode())
    assert [a["id"] for a in run["answer"]] == [c["id"] for c in run["cells"]]
    for row in run["answer"]:
        assert row["plan"] in page and row["pattern"] == "append ×1"
    assert run["plans"]["source"] == "summary" and run["plans"]["target"] == "5,000 ops/s"
    assert run["plans"]["status"] == "planned" and run["plans"]["planned"] == list(PLANNED)
    summary = json.loads((planned / "summary.json").read_text())["cells"]
    for cell in run["cells"]:
        doc = summary[cell["id"]].get("plan")
        # the twin's plan reads back as the summary's CellLaunchPlan
        assert (cell["plan"] or {}).get("doc") == (None if doc is None else CellLaunchPlan.from_json(doc).to_json())


def test_a_plan_json_left_by_an_older_ui_names_the_command_for_the_cells_it_left_out(tmp_path: Path) -> None:
    """Before the background planner, the first view planned what fitted 12 s and saved ``pending``."""
    from _plans import cell_plan

    from keyramp.forecast._plan_run import criteria
    from keyramp.results._plan_doc import LaunchPlan

    run = make_run(tmp_path, seconds=5, seed=9, cells=(("datastore", "random"), ("datastore", "sequential")))
    add_plans(run, {})  # the [launch] only
    plan = CellLaunchPlan.from_json({**json.loads(cell_plan("datastore", "random")), "cell": "c00-datastore-random"})
    doc = LaunchPlan(run=run.name, target_ops_per_s=5000.0, target_from="the [launch] peak", throttle=0.01,
                     criteria=criteria(0.01), cells={plan.cell_id: plan}).to_json()
    (run / "plan.json").write_text(json.dumps({**doc, "pending": ["c01-datastore-sequential"],
                                               "seconds_per_cell": 7.44}, indent=1))
    app = create_app(tmp_path)
    data = app.test_client().get(f"/runs/{run.name}.json").get_json()["run"]
    assert (data["plans"]["status"], data["plans"]["source"]) == ("planned", "plan.json")
    assert data["plans"]["pending"] == ["c01-datastore-sequential"] and not app.extensions["keyramp_planner"].running
    assert f"keyramp plan {run} --json > {run / 'plan.json'}" in data["plans"]["hint"]
    assert data["answer"][1]["plan"] == "not planned on view" and data["cells"][0]["plan"]["doc"] == plan.to_json()


def test_a_run_without_a_launch_says_how_to_plan_it(tmp_path: Path) -> None:
    run = make_run(tmp_path, seconds=5, seed=10)
    client = create_app(tmp_path).test_client()
    data = client.get(f"/runs/{run.name}.json").get_json()["run"]
    assert data["plans"]["source"] is None and "no [launch]" in data["plans"]["hint"]
    assert data["plans"]["status"] == "none"
    assert all(c["plan"] is None for c in data["cells"]) and not (run / "plan.json").exists()
    assert "--target OPS" in client.get(f"/runs/{run.name}").data.decode()


def test_the_ramp_chart_reaches_the_target_when_the_plan_says() -> None:
    """The planned staircase meets the target line at the plan's time to target, 500/50/5 at its own."""
    from _plans import cell_plan

    plan = read_plan(json.loads(cell_plan("datastore", "random")))
    assert plan is not None and plan.ramp is not None
    chart = ramp_chart(plan.ramp)
    end = chart["end_s"]
    fast = plan.ramp.modelled_faster
    times = (plan.ramp.time_to_target_s, plan.ramp.google_time_to_target_s) + (
        () if fast is None else (fast.time_to_target_s,))
    assert [line["name"] for line in chart["lines"]] == ["planned", "google", "faster"][:len(times)]
    for line, time_s in zip(chart["lines"], times, strict=True):
        pts = [tuple(map(float, p.split(","))) for p in line["points"].split()]
        first_at_target = next(x for x, y in pts if abs(y - chart["target_y"]) < 0.2)
        expected = chart["left"] + time_s / end * (chart["right"] - chart["left"])
        assert abs(first_at_target - expected) < 15, (line["name"], first_at_target, expected)
        assert all(y >= chart["target_y"] - 0.2 for _, y in pts)  # never above the target
    # a damaged plan does not read: no section
    assert read_plan({"cell": "x"}) is None and read_plan("nonsense") is None and plan_view(None) is None


def test_a_plan_json_that_does_not_read_is_shown_and_never_planned_over(tmp_path: Path) -> None:
    """``keyramp plan RUN --json > RUN/plan.json`` empties the file first and writes for half a minute."""
    from keyramp.results._rundir import write_json_new

    run = make_run(tmp_path, seconds=5, seed=12, cells=(("datastore", "random"),))
    add_plans(run, {})  # the [launch] only: a run the UI would plan
    (run / "plan.json").write_text("")
    app = create_app(tmp_path)
    plans = app.test_client().get(f"/runs/{run.name}.json").get_json()["run"]["plans"]
    assert plans["status"] == "failed" and "plan.json" in plans["reason"] and "keyramp plan" in plans["hint"]
    assert not app.extensions["keyramp_planner"].running and (run / "plan.json").read_text() == ""
    # and a background planning that ends while the user's file is there keeps the user's file
    assert write_json_new(run / "plan.json", {"modelled": True}) is False and (run / "plan.json").read_text() == ""
    (run / "plan.json").unlink()
    assert write_json_new(run / "plan.json", {"modelled": True}) is True
    assert json.loads((run / "plan.json").read_text()) == {"modelled": True} and len(list(run.glob(".plan*"))) == 0
