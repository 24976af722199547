"""``keyramp plan --verify``'s replays (forecast/_plan_verify.py): each variant of a real plan as a
profile at 1/K with its clock ×T, its launch the real ramp, its target the store-like one."""

from __future__ import annotations

import json
import math

from _plans import cell_plan

from keyramp.forecast._plan_verify import verify_scale, verify_variants
from keyramp.profile._profile import parse_profile
from keyramp.results._plan_doc import GOOGLE_RAMP, CellLaunchPlan

PROFILE = parse_profile({"name": "p", "backend": "firestore", "duration": "10s", "seed": 4,
                         "workload": {"ops": {"insert": 1.0}, "record_count": 500},
                         "keys": {"strategy": "sequential"}, "schedule": {"kind": "constant", "rate": 300}})


def test_an_unreachable_design_is_replayed_under_500_50_5_and_with_its_fix_at_one_kth() -> None:
    plan = CellLaunchPlan.from_json(json.loads(cell_plan("firestore", "sequential")))
    assert not plan.reachable and plan.fix is not None and plan.fix.ramp is not None
    k, t = verify_scale(plan, scale=None, time_scale=None)
    assert (k, t) == (25.0, 40.0)  # 5,000 ops/s at 200 a second on this machine; K x T = 1,000
    variants = verify_variants(plan, PROFILE, scale=k, time_scale=t)
    assert [v.name for v in variants] == ["500/50/5", f"fix: {plan.fix.design}"]
    google, fix = (v.profile for v in variants)
    assert google.emulator.fidelity == "store" and google.emulator.scale == 25.0
    assert google.emulator.time_scale is None  # the model's clock follows the schedule's (x40)
    cell = google.cells[0]
    assert cell.strategy == "sequential" and cell.time_scale == 40.0
    assert cell.schedule.rate(0.0) == GOOGLE_RAMP.start_ops / 25  # the launch's rates / K
    seconds = GOOGLE_RAMP.time_to(5000.0) + 600.0
    assert google.duration_s == math.ceil(seconds / 40)  # the launch's time / T
    assert google.launch is not None and google.launch.duration_s == math.ceil(seconds)
    assert fix.cells[0].strategy == plan.fix.design and variants[1].modelled == plan.fix.ramp.check
    assert variants[0].modelled is None  # the plan forecast no 500/50/5 for a design it cannot reach


def test_a_reachable_design_replays_its_planned_ramp_and_500_50_5() -> None:
    plan = CellLaunchPlan.from_json(json.loads(cell_plan("firestore", "random")))
    assert plan.reachable and plan.ramp is not None
    variants = verify_variants(plan, PROFILE, scale=10, time_scale=10)
    assert [v.name for v in variants] == ["planned ramp", "500/50/5"]
    assert variants[0].modelled == plan.ramp.check and variants[1].modelled == plan.ramp.vs_500_50_5.check
    assert all(v.profile.cells[0].strategy == "random" for v in variants)
