"""Real plans for synthetic runs: ``plan_cell`` on a regenerated design (no run, no emulator), once per
design and target in a test session, written into a run's summary as the run's plan step writes them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["LAUNCH", "add_plans", "cell_plan", "resolved_launch"]

#: The [launch] the plans are made for (its peak is the target).
LAUNCH = {"kind": "ramp_500_50_5", "ceiling": 5000, "duration": "1h"}


@cache
def cell_plan(backend: str, strategy: str, target: float = 5000.0) -> str:
    """``CellLaunchPlan.to_json()`` (as JSON text: cached, never shared mutably) of one design at ``target``."""
    from keyramp.forecast import CellDesign, load_prices
    from keyramp.forecast._plan_cell import plan_cell
    from keyramp.forecast._planner import Planner
    from keyramp.profile._profile import parse_profile

    profile = parse_profile({"name": "p", "backend": backend, "duration": "10s", "seed": 4,
                             "workload": {"ops": {"insert": 1.0}, "record_count": 500},
                             "keys": {"strategy": strategy}, "schedule": {"kind": "constant", "rate": 300}})
    design = CellDesign(backend=backend, strategy=strategy, settings=profile, counts={"insert": 3000.0})
    return json.dumps(plan_cell(Planner(design, target=target), cell_id="c", prices=load_prices()).to_json())


def resolved_launch(table: dict[str, Any] | None = None) -> dict[str, Any]:
    """A [launch] table as the run's manifest holds it (resolved by the profile parser)."""
    from keyramp.profile._profile import parse_profile

    return parse_profile({"name": "p", "backend": "datastore", "launch": dict(table or LAUNCH)}).data["launch"]


def add_plans(run: Path, cells: dict[str, tuple[str, str]], *, launch: dict[str, Any] | None = None) -> None:
    """Puts a [launch] in the run's profile and each named cell's plan (``cell id -> (backend, strategy)``)
    into summary.json's ``cells[id].plan``; ``cells`` empty: the [launch] only (planned on view)."""
    from keyramp.forecast._launch import Launch

    launch = dict(launch or LAUNCH)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["profile"]["launch"] = resolved_launch(launch)
    peak = float(Launch.from_resolved(manifest["profile"]["launch"]).peak)  # the target a run plans for
    (run / "manifest.json").write_text(json.dumps(manifest))
    summary = json.loads((run / "summary.json").read_text())
    for cell_id, (backend, strategy) in cells.items():
        plan = json.loads(cell_plan(backend, strategy, peak))
        summary["cells"][cell_id]["plan"] = {**plan, "cell": cell_id}
    (run / "summary.json").write_text(json.dumps(summary))
