"""The key-space figures and the launch plan as results documents (results/_keyspace_doc.py, _plan_doc.py):
read and written back byte for byte, older shapes read, a misshapen field named by its path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from keyramp.keyspace import keyspace_headline, summarize_cell
from keyramp.results import CellLaunchPlan, KeyspaceFigures, PlanCheck, Ramp, RampShape, RateBand
from keyramp.results._doc import DocError
from keyramp.results._plan_doc import GOOGLE_RAMP
from keyramp.results._summary import CellSummary, RunSummary

DATA = Path(__file__).parent / "data"
#: summary.json ``keyspace`` of two cells of a real quickstart run (Datastore; Bigtable, whose model has a
#: cluster cap), and two plans as forecast/_plan.py's hand-written ``to_json`` wrote them before the move
#: (a reachable cell with its ramp; an append-point cell with its shard fix, the fix's ramp and the cost).
KEYSPACE = json.loads((DATA / "keyspace-issue27.json").read_text())
PLANS = json.loads((DATA / "plans-issue27.json").read_text())


def _same_bytes(doc: dict[str, Any], model: type[KeyspaceFigures] | type[CellLaunchPlan]) -> None:
    untouched = copy.deepcopy(doc)
    assert json.dumps(model.from_json(doc).to_json()) == json.dumps(doc)
    assert doc == untouched


@pytest.mark.parametrize("cell", sorted(KEYSPACE))
def test_real_keyspace_figures_read_back_byte_for_byte(cell: str) -> None:
    doc = KEYSPACE[cell]
    _same_bytes(doc, KeyspaceFigures)
    ks = KeyspaceFigures.from_json(doc)
    assert ks.model is not None and ks.model.params is not None and ks.tablet_capacity_ops_per_s is not None
    assert ks.model.params.capacity == doc["model"]["params"]["capacity"]
    assert ks.tablet_capacity_ops_per_s.source == doc["tablet_capacity_ops_per_s"]["source"]
    assert not ks.extra and not ks.model.extra and not ks.model.params.extra  # every field the writer has is declared


def test_the_writers_figures_read_back_byte_for_byte() -> None:
    """What keyspace's ``summary_entry`` builds (a sequential stream and an empty one) is what it writes."""
    keys = [f"k{i:06d}" for i in range(2000)]
    times = [i / 200 for i in range(2000)]
    for figures in (summarize_cell(keys, times, ["insert"] * 2000, backend="bigtable"),
                    summarize_cell([], [], [], backend="datastore")):
        doc = json.loads(json.dumps(figures.to_json()))
        _same_bytes(doc, KeyspaceFigures)
    assert figures.empty and keyspace_headline(figures) == "-"


def test_an_older_keyspace_shape_reads_and_keeps_what_it_had() -> None:
    """Before the hot window and the append points (and with a model field since renamed)."""
    old = {"hottest_bucket_share": 0.41, "gini": 0.93, "modelled": False,
           "model": {"peak_tablets": 3, "throttled_fraction": 0.12, "modelled": True}}
    _same_bytes(old, KeyspaceFigures)
    ks = KeyspaceFigures.from_json(old)
    assert ks.gini == 0.93 and ks.extra == {"modelled": False}
    assert ks.model is not None and ks.model.peak_tablets == 3 and ks.model.extra == {"throttled_fraction": 0.12}
    assert ks.append_points is None and not ks.recorded("append_points")  # absent: not "measured spread"
    assert KeyspaceFigures.from_json({"append_points": None}).recorded("append_points")


@pytest.mark.parametrize("name", sorted(PLANS))
def test_plans_written_before_the_move_read_back_byte_for_byte(name: str) -> None:
    _same_bytes(PLANS[name], CellLaunchPlan)


def test_a_ramp_rebuilt_from_its_shape_is_the_one_written() -> None:
    """The derived figures (times to target, 500/50/5's, their ratio) come from the shape and the target."""
    doc = PLANS["reachable"]["ramp"]
    plan = CellLaunchPlan.from_json(PLANS["reachable"])
    ramp = plan.ramp
    shape = RampShape.from_json({k: doc[k] for k in ("start_ops", "growth", "step_s")})
    assert ramp is not None and ramp.shape == shape
    again = Ramp.of(shape=ramp.shape, target_ops_per_s=ramp.target_ops_per_s, hold_s=ramp.hold_s, check=ramp.check,
                    google=ramp.google)
    # (what the ramp rests on is newer than this plan: written by a planner, not derived from the shape)
    newer = ("basis", "evidence", "modelled_faster")
    assert json.dumps({k: v for k, v in again.to_json().items() if k not in newer}) == json.dumps(doc)
    assert ramp.google_time_to_target_s == GOOGLE_RAMP.time_to(plan.target_ops_per_s) > ramp.time_to_target_s


def test_a_fix_plan_reads_by_attribute() -> None:
    plan = CellLaunchPlan.from_json(PLANS["fix"])
    fix = plan.fix
    assert plan.cell_id == PLANS["fix"]["cell"] and not plan.reachable and plan.sustainable_ops_per_s is not None
    assert fix is not None and fix.kind == "shards" and fix.passes and fix.one_fewer is not None
    assert fix.one_fewer.passes is False and fix.ramp is not None and fix.ramp.check.passes
    assert plan.cost is not None and plan.cost.modelled is True


def test_a_band_is_written_at_a_tenth_of_an_op_and_an_empty_reason_not_at_all() -> None:
    band = RateBand(low=1234.56, mid=None, high=2000.04)
    assert band.to_json() == {"low": 1234.6, "mid": None, "high": 2000.0}
    assert band.low == 1234.56  # the searches' own figure stays exact in memory (the shard count divides it)
    check = PlanCheck(launch="x", measure="steady", throttled_fraction={"low": 0.0, "mid": 0.0, "high": 0.0},
                      passes=True, reason="")
    assert "reason" not in check.to_json() and check.to_json()["verdict"] is None


@pytest.mark.parametrize(("part", "path", "value", "problem"), [
    ("keyspace", ("model", "params", "capacity"), "big", "keyspace.model.params.capacity: expected a number, got a "
                                                         "string"),
    ("keyspace", ("append_points",), [1], "keyspace.append_points: expected a number, got a list"),
    ("plan", ("fix", "ramp", "vs_500_50_5", "check", "passes"), "yes",
     "plan.fix.ramp.vs_500_50_5.check.passes: expected a boolean, got a string"),
    ("plan", ("fix", "ramp", "step_s"), None, "plan.fix.ramp.step_s: expected a number, got null"),
])
def test_a_misshapen_subdocument_field_is_named_by_its_path(part: str, path: tuple[str, ...], value: Any,
                                                             problem: str) -> None:
    cell: dict[str, Any] = {"keyspace": copy.deepcopy(KEYSPACE["c00-datastore-sequential"]),
                            "plan": copy.deepcopy(PLANS["fix"])}
    CellSummary.from_json(cell)  # reads as it is
    where = cell[part]
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    with pytest.raises(DocError) as err:
        RunSummary.from_json({"schema": 1, "schema_version": 2, "cells": {"c00": cell}})
    assert str(err.value) == f"RunSummary.cells.c00.{problem}"
