"""Words as a person writes them (issue 39): a source said once, a fix sentence on one line, the
model's parameters by their documented names in the Answer table."""

from __future__ import annotations

import json
from pathlib import Path

from _plans import add_plans
from _synthetic import make_run

from keyramp.forecast._plan_text import cell_block
from keyramp.results._plan_doc import CellLaunchPlan
from keyramp.web import create_app
from keyramp.web._forecast import keys_sentence


def test_where_the_keys_came_from_is_said_once() -> None:
    why = "keys regenerated from the strategy and read distribution at the launch rate"
    assert keys_sentence("regenerated", why) == "Keys regenerated from the strategy and read distribution at the " \
                                                "launch rate"
    recorded = "a Python workload writes its own [keys]: the keys it really wrote are projected"
    assert keys_sentence("recorded", recorded) == f"Keys recorded: {recorded}"


def test_the_plan_and_the_answer_read_as_sentences(tmp_path: Path) -> None:
    run = make_run(tmp_path, cells=[("datastore", "sequential")])
    add_plans(run, {"c00-datastore-sequential": ("datastore", "sequential")})
    summary = json.loads((run / "summary.json").read_text())
    plan = CellLaunchPlan.from_json(summary["cells"]["c00-datastore-sequential"]["plan"])
    assert plan.fix is not None
    block = cell_block(plan)
    fix = next(line for line in block.splitlines() if line.lstrip().startswith("fix*:"))
    assert fix.endswith(plan.fix.why) and f"{plan.fix.design} — " in fix  # one line, not two
    assert "(s)" not in block and "1 append point takes every insert" in plan.why
    # the Answer table names a split forecast's deciding parameter as the docs do
    cell = summary["cells"]["c00-datastore-sequential"]
    cell["forecast"] = {"modelled": True, "verdict": "uncertain", "deciding_param": "retry_reoffer",
                        "throttled_fraction": {"low": 0.0, "mid": 0.1, "high": 0.3}}
    (run / "summary.json").write_text(json.dumps(summary))
    answer = create_app(tmp_path).test_client().get(f"/runs/{run.name}.json").get_json()["run"]["answer"][0]
    assert answer["forecast"] == "uncertain (retried share) 0 %–30 %"
