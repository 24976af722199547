"""``keyramp plan RUN`` (keyramp/cli/_plan.py): the answer per cell, JSON, prices, bad input, the rehearsal.

The run is written as `keyramp run` leaves it (a resolved profile with a [launch] in the
manifest, operation counts in the summary): sequential and random ids on Firestore and
Bigtable, the issue's done-when case.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from keyramp.cli._main import main
from keyramp.forecast._cost import CellCost
from keyramp.profile._profile import parse_profile
from keyramp.results import LaunchPlan, PlanCost
from keyramp.results._cost_doc import LABEL
from keyramp.results._doc import DocError, JsonDoc
from keyramp.results._plan_doc import read_launch_plan
from keyramp.results._schema import COMMAND, PLAN_DOC, render_plan

CELLS = ("c00-firestore-sequential", "c01-firestore-random", "c02-bigtable-sequential", "c03-bigtable-random")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    profile = parse_profile({"name": "launch", "backend": ["firestore", "bigtable"], "duration": "10s", "seed": 7,
                             "workload": {"ops": {"insert": 0.7, "read": 0.3}, "record_count": 500},
                             "keys": {"strategy": ["sequential", "random"]},
                             "schedule": {"kind": "constant", "rate": 300},
                             "launch": {"kind": "ramp_500_50_5", "ceiling": 5000, "duration": "1h", "nodes": 1}})
    run = tmp_path_factory.mktemp("plan") / "20260101T000000000Z-launch-0000"
    run.mkdir()
    manifest = {"schema": 1, "run_id": run.name, "profile_name": "launch", "status": "complete",
                "profile": json.loads(json.dumps(profile.data)),
                "cells": [{"id": c.id, "backend": c.backend, "strategy": c.strategy, "duration_s": 10.0,
                           "time_scale": 1.0} for c in profile.cells]}
    summary = {"schema": 1, "run_id": run.name, "status": "complete",
               "cells": {c.id: {"backend": c.backend, "strategy": c.strategy, "duration_s": 10.0,
                                "operations": {"insert": {"count": 2100}, "read": {"count": 900}},
                                "total": {"count": 3000}} for c in profile.cells}}
    assert [c.id for c in profile.cells] == list(CELLS)
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "summary.json").write_text(json.dumps(summary))
    return run


@pytest.fixture(scope="module")
def at_target(run_dir: Path) -> dict:
    """``keyramp plan RUN --target 12000 --json``, run once for the module: the issue's done-when
    (``--target 50000``, docs/plan.md) in its shape, at a target the suite affords."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", str(run_dir), "--target", "12000", "--json"]) == 0
    return {**json.loads(out.getvalue()), "path": str(run_dir)}


def test_every_cell_answers_reachable_the_ramp_or_the_fix_and_the_cost(at_target: dict) -> None:
    assert at_target["modelled"] is True and at_target["target_ops_per_s"] == 12_000
    assert set(at_target["cells"]) == set(CELLS)
    for cell_id, p in at_target["cells"].items():
        assert isinstance(p["reachable"], bool) and p["why"], cell_id
        assert (p["ramp"] is not None) if p["reachable"] else (p["fix"] is not None), cell_id
        assert p["cost"]["launch_usd_per_hour"] > 0 and p["cost"]["prices"]["as_of"], cell_id
    cells = at_target["cells"]
    assert cells["c01-firestore-random"]["reachable"] and cells["c01-firestore-random"]["sustainable_ops_per_s"] is None
    assert cells["c00-firestore-sequential"]["fix"]["kind"] == "shards"
    assert cells["c03-bigtable-random"]["fix"]["kind"] == "nodes"  # one node serves ~10,000 ops/s of this mix
    nodes = cells["c03-bigtable-random"]["fix"]
    assert nodes["forecast"]["passes"] and not nodes["one_fewer"]["passes"]  # the smallest count that passes
    assert nodes["one_fewer"]["nodes"] == nodes["value"] - 1 and nodes["design"] == f"{nodes['value']} SSD nodes"
    assert cells["c02-bigtable-sequential"]["fix"]["kind"] == "shards"
    assert cells["c02-bigtable-sequential"]["fix"]["nodes"] is not None  # the sharded design on enough nodes


def test_plan_json_reads_into_the_results_model_and_writes_back_the_same(at_target: dict, tmp_path: Path) -> None:
    doc = {k: v for k, v in at_target.items() if k != "path"}
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(doc, indent=2))
    plan = read_launch_plan(saved)
    assert plan.to_json() == doc and json.dumps(plan.to_json(), indent=2) == saved.read_text()
    assert plan.run_id == Path(at_target["path"]).name and [p.cell_id for p in plan.planned] == list(CELLS)
    for cell_id, p in plan.cells.items():  # the cost, typed, and through the forecast's objects and back
        assert isinstance(p.cost, PlanCost) and p.cost.launch_usd_per_hour > 0 and p.cost.prices.as_of, cell_id
        assert CellCost.from_doc(p.cost).to_json() == doc["cells"][cell_id]["cost"]
    bigtable = plan.cells["c03-bigtable-random"].cost
    assert bigtable is not None and bigtable.nodes is not None and bigtable.breakdown["launch_hour"].lines[0].item \
        == "ssd node-hours"


def _undeclared(value: Any, where: str = "") -> list[str]:
    """Keys of ``value`` (a document read) that the model does not declare: they would be missing from the schema."""
    if isinstance(value, JsonDoc):
        return [f"{where}.{k}" for k in value.extra] + [
            bad for f in fields(value) if f.name not in ("extra", "_keys")
            for bad in _undeclared(getattr(value, f.name), f"{where}.{f.name}")]
    if isinstance(value, dict):
        return [bad for k, v in value.items() for bad in _undeclared(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [bad for i, v in enumerate(value) for bad in _undeclared(v, f"{where}[{i}]")]
    return []


def test_the_plan_schema_is_generated_and_declares_every_key_the_planner_writes(at_target: dict) -> None:
    assert PLAN_DOC.read_text(encoding="utf-8") == render_plan(), f"{PLAN_DOC.name} is out of date: run `{COMMAND}`"
    plan = LaunchPlan.from_json({k: v for k, v in at_target.items() if k != "path"})
    assert _undeclared(plan) == []
    schema = json.loads(render_plan())
    assert {"CellLaunchPlan", "PlanCost", "WindowCost", "BilledLine", "PricesUsed", "ListPrice"} <= set(schema["$defs"])


def test_an_older_plan_json_reads_and_an_incomplete_one_names_the_file_and_field(at_target: dict,
                                                                                   tmp_path: Path) -> None:
    doc = {k: v for k, v in at_target.items() if k not in ("path", "cost_label")}  # before costs were labelled
    older = tmp_path / "older.json"
    older.write_text(json.dumps(doc))
    assert read_launch_plan(older).cost_label == LABEL
    cell = "c01-firestore-random"
    cost = {k: v for k, v in doc["cells"][cell]["cost"].items() if k != "prices"}
    broken = tmp_path / "plan.json"
    broken.write_text(json.dumps({**doc, "cells": {cell: {**doc["cells"][cell], "cost": cost}}}))
    with pytest.raises(DocError, match=f"^{re.escape(f'{broken}: cells.{cell}.cost: missing prices')}$"):
        read_launch_plan(broken)
    broken.write_text("{")
    with pytest.raises(DocError, match=re.escape(str(broken))):
        read_launch_plan(broken)
    with pytest.raises(DocError, match=re.escape(f"cells.{CELLS[0]}.reachable: expected a boolean, got a string")):
        LaunchPlan.from_json({**doc, "cells": {CELLS[0]: {**doc["cells"][CELLS[0]], "reachable": "yes"}}})


def test_the_text_is_one_block_per_cell_marked_modelled(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(run_dir), "--cell", "c01-firestore-random"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("plan for 5,000 ops/s (the [launch] peak)")  # no --target: the launch's peak
    assert "c01-firestore-random" in text and "c00-" not in text
    for label in ("sustains*", "reachable*:  yes", "ramp*", "cost*", "* modelled", "(Google's 500/50/5)",
                  "modelled, faster than Google's published rule: "):
        assert label in text, label


def test_prices_override_the_table_and_a_bad_file_is_one_line(run_dir: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    ours = tmp_path / "ours.json"
    price = {"usd": 1.0, "source": "our contract", "as_of": "2026-10-01"}
    ours.write_text(json.dumps({"stores": {"firestore": {"locations": {"us-central1": {"writes_per_100k": price}}}}}))
    assert main(["plan", str(run_dir), "--cell", "c01-firestore-random", "--json", "--prices", str(ours)]) == 0
    cost = json.loads(capsys.readouterr().out)["cells"]["c01-firestore-random"]["cost"]
    assert cost["prices"]["source"].endswith("ours.json")
    writes = next(line for line in cost["breakdown"]["launch_hour"]["lines"] if line["item"] == "writes")
    assert writes["price_usd"] == 1.0 and writes["source"] == "our contract"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"stores": {"firestore": {"locations": {"us-central1": {
        "writes_per_100k": {**price, "usd": "cheap"}}}}}}))
    assert main(["plan", str(run_dir), "--prices", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad.json" in err and "writes_per_100k.usd" in err


@pytest.mark.parametrize(("args", "message"), [
    (["--target", "-5"], "--target"),
    (["--throttle", "2"], "--throttle"),
    (["--cell", "nope"], "unknown cell"),
    (["--location", "mars"], "mars"),
    (["--nodes", "0"], "--nodes"),
    (["--write-profile", "x.toml"], "name one with --cell"),
    (["--project", "p"], "--write-profile"),
    (["--fidelity", "store"], "--write-profile"),
    (["--scale", "10"], "--verify or --write-profile FILE --fidelity store"),
    (["--cell", "c00-firestore-sequential", "--write-profile", "x.toml", "--fidelity", "store", "--project", "p"],
     "cloud rehearsal only"),
])
def test_bad_input_is_one_line_and_exit_2(run_dir: Path, args: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(run_dir), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def _rehearse(run_dir: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["plan", str(run_dir), "--cell", "c01-firestore-random", "--target", "5000", "--json",
                 "--write-profile", str(out), "--project", "acme-load-test", *extra]) == 0
    return json.loads(capsys.readouterr().out)["cells"]["c01-firestore-random"]["ramp"]


def test_the_rehearsal_runs_the_ramp_within_the_evidence_and_lint_accepts_it_unacknowledged(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "rehearsal.toml"
    ramp = _rehearse(run_dir, out, capsys)
    # The stores' own split parameters are bounded by 500/50/5: the rehearsal runs Google's rule, nothing to
    # acknowledge; the faster ramp the model allows is in the plan, labelled, and not in the profile.
    assert (ramp["start_ops"], ramp["growth"], ramp["step_s"], ramp["basis"]) == (500, 0.5, 300, "published_rule")
    faster = ramp["modelled_faster"]
    assert faster["label"] == "modelled, faster than Google's published rule" and faster["step_s"] < 300
    assert main(["lint", "--strict", str(out)]) == 0
    assert "BP-RAMP-1" not in capsys.readouterr().out
    from keyramp.profile._files import load_profile

    profile = load_profile(out)
    assert profile.target == "cloud" and profile.project == "acme-load-test" and profile.backends == ("firestore",)
    sched = profile.cells[0].schedule
    assert (sched.name, sched.start_ops, sched.growth, sched.step_s, sched.ceiling) == (
        "ramp_500_50_5", ramp["start_ops"], ramp["growth"], ramp["step_s"], 5000)
    assert profile.duration_s == ramp["time_to_target_s"] + ramp["hold_s"]
    assert profile.data["cloud"]["max_ops_per_s"] >= 5000 and profile.data["workload"]["ops"] == {
        "insert": 0.7, "read": 0.3}
    assert profile.keys.strategies == ("random",) and profile.acknowledge == {}
    # The faster ramp, written by hand, is held to 500/50/5 (the model alone is no evidence against it).
    by_hand = tmp_path / "by-hand.toml"
    by_hand.write_text(out.read_text().replace('"step" = "300s"', f'"step" = "{int(faster["step_s"])}s"'))
    assert main(["lint", "--strict", str(by_hand)]) == 1
    assert re.search(f"{re.escape(str(by_hand))}: (WARNING|ERROR) BP-RAMP-1: ", capsys.readouterr().out)


def test_with_calibrated_split_parameters_the_faster_ramp_is_planned_and_acknowledged_citing_the_file(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    calibration = tmp_path / "calibration" / "firestore.json"
    calibration.parent.mkdir()
    source = "keyramp calibrate fit of calibrate-firestore-append, calibrate-firestore-jump"
    fitted = {"split_threshold_frac": (0.3, 0.3, 0.4), "split_delay_s": (10, 20, 30)}
    calibration.write_text(json.dumps({"schema": 1, "stores": {"firestore": {
        name: {"low": lo, "mid": mid, "high": hi, "source": source} for name, (lo, mid, hi) in fitted.items()}}}))
    out = tmp_path / "rehearsal.toml"
    ramp = _rehearse(run_dir, out, capsys, "--params", str(calibration))
    assert ramp["basis"] == "calibrated" and str(calibration) in ramp["evidence"] and ramp["step_s"] < 300
    assert ramp["modelled_faster"] is None
    assert main(["lint", "--strict", str(out)]) == 0
    assert "ACKNOWLEDGED BP-RAMP-1: " in capsys.readouterr().out
    from keyramp.profile._files import load_profile

    reason = load_profile(out).acknowledge["BP-RAMP-1"]
    assert str(calibration) in reason and "keyramp calibrate" in reason and "modelled" in reason
    # The same ramp written by hand, without the plan's evidence, is still held to 500/50/5.
    by_hand = tmp_path / "by-hand.toml"
    by_hand.write_text(out.read_text().split("[acknowledge]")[0])
    assert main(["lint", "--strict", str(by_hand)]) == 1
    assert re.search(f"{re.escape(str(by_hand))}: (WARNING|ERROR) BP-RAMP-1: ", capsys.readouterr().out)


def test_rehearsals_of_fixes_lint_clean_on_each_store(at_target: dict, tmp_path: Path) -> None:
    """Bigtable has no 500/50/5 and no 500 writes/s an append point (its nodes take ~10,000 rows/s
    each): its rehearsals are not held to them. On Firestore, what lint would flag and the plan
    forecast safe is acknowledged with the plan's evidence; nothing else is."""
    from keyramp.forecast._plan_profile import ANSWERED_RULES, write_rehearsal
    from keyramp.profile import read_settings
    from keyramp.profile._lint import lint_profile
    from keyramp.results._plan_doc import CellLaunchPlan

    manifest = json.loads((Path(at_target["path"]) / "manifest.json").read_text())
    for cell_id in CELLS:
        plan = CellLaunchPlan.from_json(at_target["cells"][cell_id])
        profile = write_rehearsal(tmp_path / f"{cell_id}.toml", plan, read_settings(manifest["profile"]),
                                  instance="load-1")
        found = lint_profile(profile)
        assert not [f for f in found if f.severity == "error"], found
        assert set(profile.acknowledge) <= set(ANSWERED_RULES)
        assert {f.rule for f in found if f.severity == "acknowledged"} == set(profile.acknowledge)
        if plan.backend == "bigtable":
            assert plan.fix is not None and plan.fix.ramp is not None
            assert profile.launch is not None and profile.launch.nodes == plan.fix.nodes
            strategy = plan.fix.design if plan.fix.kind == "shards" else plan.strategy
            assert profile.keys.strategies == (strategy,) and profile.project == "your-project-id"
            # The fix's ramp starts far above 500 ops/s, its shards take thousands of inserts/s each.
            assert plan.fix.ramp.shape.start_ops > 750 and profile.acknowledge == {}
            assert not {"BP-RAMP-1", "BP-KEY-3"} & {f.rule for f in found}
        elif plan.ramp is not None:  # c01-firestore-random: Google's rule, the faster ramp shown apart only
            assert plan.ramp.basis == "published_rule" and plan.ramp.shape.step_s >= 300
            assert plan.ramp.modelled_faster is not None and "BP-RAMP-1" not in profile.acknowledge


def test_a_ramp_faster_than_the_rule_on_the_stores_own_ranges_is_never_acknowledged(at_target: dict,
                                                                                    tmp_path: Path) -> None:
    """Even a plan (hand-edited, or an older keyramp's) whose ramp is faster than 500/50/5 on parameters the
    rule itself bounds gets no [acknowledge] for BP-RAMP-1: lint still holds the rehearsal to the rule."""
    from keyramp.forecast._plan_profile import write_rehearsal
    from keyramp.profile import read_settings
    from keyramp.profile._lint import lint_profile
    from keyramp.results._plan_doc import CellLaunchPlan

    doc = json.loads(json.dumps(at_target["cells"]["c01-firestore-random"]))
    faster = doc["ramp"]["modelled_faster"]
    doc["ramp"].update(step_s=faster["step_s"], time_to_target_s=faster["time_to_target_s"], modelled_faster=None)
    plan = CellLaunchPlan.from_json(doc)
    assert plan.ramp is not None and plan.ramp.basis == "published_rule" and plan.ramp.step_s < 300
    manifest = json.loads((Path(at_target["path"]) / "manifest.json").read_text())
    profile = write_rehearsal(tmp_path / "faster.toml", plan, read_settings(manifest["profile"]))
    assert "BP-RAMP-1" not in profile.acknowledge
    assert "BP-RAMP-1" in {f.rule for f in lint_profile(profile) if f.severity in ("error", "warning")}


def test_the_rehearsal_on_the_store_like_target_is_the_cloud_ones_ramp_and_design_at_one_kth(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """``--write-profile FILE --fidelity store``: the cloud rehearsal's ramp and design (the fix's when
    the plan has one: the same ``rehearsed(plan)``), replayed as ``--verify`` replays it: rates ÷ K,
    clock ×T, ``[emulator] fidelity = "store"`` with K and T written out; `keyramp lint` passes it; the
    output says what it checks and what not."""
    from keyramp.forecast._plan_verify import verify_variants
    from keyramp.profile import read_settings
    from keyramp.profile._files import load_profile
    from keyramp.results._plan_doc import CellLaunchPlan

    cloud, store, cell_id = tmp_path / "cloud.toml", tmp_path / "store.toml", "c01-firestore-random"
    said = {}
    for out, extra in ((cloud, []), (store, ["--fidelity", "store"])):
        assert main(["plan", str(run_dir), "--cell", cell_id, "--target", "5000", "--json",
                     "--write-profile", str(out), *extra]) == 0
        said[out] = capsys.readouterr()
    assert "with --fidelity store" in said[cloud].err  # the cloud rehearsal points at the store-like one
    assert f"`keyramp run {store}`" in said[store].err and "does not check the model's parameters" in said[store].err
    rehearsal, replay = load_profile(cloud), load_profile(store)
    assert replay.target == "emulator" and replay.emulator.fidelity == "store"
    assert (replay.emulator.scale, replay.emulator.time_scale) == (25.0, 40.0)  # 5,000 ops/s ÷ 200; K x T = 1,000
    cell, cloud_cell = replay.cells[0], rehearsal.cells[0]
    assert cell.strategy == cloud_cell.strategy == "random" and cell.time_scale == 40.0
    for at in (0.0, 600.0, 1200.0):  # the cloud ramp ÷ K, at schedule time (the replay's clock x40)
        assert cell.schedule.rate(at) == pytest.approx(cloud_cell.schedule.rate(at) / 25)
    assert replay.launch is not None and rehearsal.launch is not None
    assert replay.launch.peak == rehearsal.launch.peak == 5000
    plan = CellLaunchPlan.from_json(json.loads(said[store].out)["cells"][cell_id])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    planned = next(v for v in verify_variants(plan, read_settings(manifest["profile"]), scale=25.0, time_scale=40.0)
                   if v.name == "planned ramp")
    assert planned.profile.data["schedule"] == replay.data["schedule"]  # the same replay --verify runs
    assert main(["lint", "--strict", str(store)]) == 0
