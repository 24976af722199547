"""A cloud rehearsal of a plan (``keyramp plan --write-profile FILE``): one cell's planned ramp as a
ready-to-run ``target = "cloud"`` profile — the cell's workload and keys (the fix's design when the
plan has one), the ramp as its schedule and its ``[launch]``, caps from the plan (docs/cloud.md).

The run's manifest holds the resolved profile; the workload table is written back in TOML form
with only what differs from the defaults, so the rehearsal validates like a hand-written profile.
Where lint holds Google's general figures against what the plan forecast safe (a design's append
points at the target; a ramp faster than 500/50/5 only when planned on calibrated parameters), the
profile's ``[acknowledge]`` names each such rule with the plan's evidence: lint reports it as
acknowledged, and the rehearsal measures it. A ramp the model alone allows faster than Google's rule
(``Ramp.modelled_faster``) is never what a rehearsal runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from keyramp.core import UsageError, fmt
from keyramp.forecast._plan_text import ramp_text
from keyramp.profile import WorkloadSettings, lint_profile, load_profile, parse_profile, write_profile
from keyramp.results import CellLaunchPlan, PlanCheck, Ramp

if TYPE_CHECKING:
    from keyramp.profile import Profile, Settings

__all__ = ["ANSWERED_RULES", "PLACEHOLDER_INSTANCE", "PLACEHOLDER_PROJECT", "acknowledgements", "rehearsal_tables",
           "rehearsed", "write_acknowledged", "write_rehearsal"]

#: What the profile says when the command line did not name them: edit before running.
PLACEHOLDER_PROJECT = "your-project-id"
PLACEHOLDER_INSTANCE = "your-instance"
#: Headroom of the caps over the plan (a cap is a hard stop, not the plan).
_CAP_RATE = 1.1
_CAP_TIME = 1.5
#: The rules a plan's forecasts answer: the ramp (BP-RAMP-1), and the key design's append points
#: at the target (BP-KEY-1, BP-KEY-3: the tablet model's subject).
ANSWERED_RULES = ("BP-RAMP-1", "BP-KEY-1", "BP-KEY-3")
_MEASURES = "modelled, not measured: this rehearsal measures it"


def _workload_table(resolved: Mapping[str, Any], backend: str) -> dict[str, Any]:
    """The resolved ``[workload]`` as TOML: the fields that differ from a minimal profile's defaults."""
    ops = dict(resolved.get("ops") or {"insert": 1.0})
    user = bool(resolved.get("user"))
    defaults = parse_profile({"name": "d", "backend": backend, "workload": {"ops": ops}}).data["workload"]
    present = {"user": user, "document": bool(resolved.get("document"))}
    out: dict[str, Any] = {}
    for opt in WorkloadSettings.options():
        if opt.derived or opt.wire not in resolved or any(present.get(o) for o in opt.not_with):
            continue
        value = resolved[opt.wire]
        if opt.toml == "ops" and not user:
            out["ops"] = ops
        elif value != defaults.get(opt.wire):
            out[opt.toml] = _query_diff(value, defaults.get(opt.wire)) if opt.toml == "query" else value
    return {k: v for k, v in out.items() if v != {}}


def _query_diff(value: Mapping[str, Any], default: Any) -> dict[str, Any]:
    default = default if isinstance(default, Mapping) else {}
    return {k: v for k, v in value.items() if v != default.get(k)}


def rehearsed(plan: CellLaunchPlan) -> tuple[Ramp, str, int | None]:
    """What a rehearsal runs: the ramp, the key design and the nodes of the fix when it has a ramp, else the plan's."""
    fix = plan.fix
    if fix is not None and fix.ramp is not None:
        return fix.ramp, fix.design if fix.kind == "shards" else ("random" if fix.kind == "key_design"
                                                                   else plan.strategy), fix.nodes
    if plan.ramp is None:
        raise UsageError(f"--write-profile: {plan.cell_id}: the plan has no safe ramp to rehearse ({plan.why})")
    return plan.ramp, plan.strategy, plan.nodes


def rehearsal_tables(plan: CellLaunchPlan, settings: Settings, *, project: str | None = None,
                     instance: str | None = None) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(top-level fields, tables) of the rehearsal of ``plan`` (from the run's ``settings``)."""
    ramp, strategy, nodes = rehearsed(plan)
    shape, target = ramp.shape, plan.target_ops_per_s
    seconds = math.ceil(ramp.time_to_target_s + ramp.hold_s)
    top = {"name": f"{settings.name}-rehearsal", "target": "cloud",
           "project": project or PLACEHOLDER_PROJECT, "backend": plan.backend, "duration": f"{seconds}s",
           "seed": int(settings.seed),
           "description": f"keyramp plan: {plan.cell_id} ramped to {target:g} ops/s as planned (modelled safe)"}
    ramp_fields = {"kind": "ramp_500_50_5", "start_ops": float(min(shape.start_ops, target)),
                   "growth": shape.growth, "step": f"{math.ceil(shape.step_s)}s", "ceiling": float(target)}
    keys: dict[str, Any] = {"strategy": strategy}
    params = settings.keys.params
    if params and strategy == plan.strategy:
        keys["params"] = dict(params)
    launch: dict[str, Any] = {**ramp_fields, "duration": f"{seconds}s"}
    cloud: dict[str, Any] = {"max_ops_per_s": math.ceil(target * _CAP_RATE),
                             "max_duration": f"{math.ceil(seconds * _CAP_TIME + 300)}s", "cleanup": True}
    if plan.nodes is not None:
        launch |= {"nodes": int(nodes or plan.nodes), "storage": str(plan.storage)}
        cloud["instance"] = instance or PLACEHOLDER_INSTANCE
    schedule = {**ramp_fields, "warmup": "0s", "max_users": max(50, int(target * 0.1) + 10)}
    # The workload table as TOML: written from the resolved table the settings were read from (the wire form).
    tables = {"workload": _workload_table(settings.resolved.get("workload") or {}, plan.backend), "keys": keys,
              "schedule": schedule, "cloud": cloud, "launch": launch,
              "thresholds": {"error_rate": 0.01}}
    return top, tables


def _throttled(check: PlanCheck) -> str:
    thr = check.throttled_fraction
    return f"throttled {fmt.percent_band(thr['low'], thr['high'])} ({'passes' if check.passes else 'fails'})"


def acknowledgements(plan: CellLaunchPlan, rehearsal: Profile) -> dict[str, str]:
    """``[acknowledge]`` of the rehearsal: each rule of ``ANSWERED_RULES`` that lint flags (an error
    or a warning) with the plan's evidence that it is safe here. BP-RAMP-1 only for a ramp planned on
    calibrated split parameters (``Ramp.basis``), citing the calibration file: the stores' own ranges
    are bounded by the 500/50/5 rule itself, so a ramp faster than it rests on nothing else."""
    ramp, strategy, _ = rehearsed(plan)
    where = f"keyramp plan: {plan.cell_id} at {fmt.ops_per_s(plan.target_ops_per_s)}, {strategy} on {plan.backend}"
    design = plan.fix.why if plan.fix is not None else plan.why
    evidence = {"BP-KEY-1": f"{where}: {design} ({_MEASURES})"}
    evidence["BP-KEY-3"] = evidence["BP-KEY-1"]
    if ramp.basis == "calibrated":  # never on the strength of parameters the 500/50/5 rule itself bounds
        evidence["BP-RAMP-1"] = (f"{where}: the ramp {ramp_text(ramp)} was forecast {_throttled(ramp.check)} at a "
                                 f"throttle limit of {fmt.percent(plan.throttle)} with {ramp.evidence} ({_MEASURES})")
    flagged = {f.rule for f in lint_profile(rehearsal) if f.severity in ("error", "warning")}
    return {rule: evidence[rule] for rule in ANSWERED_RULES if rule in flagged and rule in evidence}


def write_rehearsal(path: Path, plan: CellLaunchPlan, settings: Settings, *, project: str | None = None,
                    instance: str | None = None) -> Profile:
    """Write the rehearsal profile and load it back as ``keyramp run`` will (a bad one is an error here)."""
    top, tables = rehearsal_tables(plan, settings, project=project, instance=instance)
    return write_acknowledged(path, plan, top, tables)


def write_acknowledged(path: Path, plan: CellLaunchPlan, top: dict[str, Any], tables: dict[str, Any]) -> Profile:
    """Write a rehearsal (``top`` fields, ``tables``) with the rules its plan answers acknowledged, and
    load it back as ``keyramp run`` will (a bad one is an error here)."""
    acknowledge = acknowledgements(plan, parse_profile({**top, **tables}, source=str(path), path=path))
    if acknowledge:
        tables["acknowledge"] = acknowledge
    try:
        write_profile(path, top, **tables)
    except OSError as exc:
        raise UsageError(f"--write-profile: {path}: cannot write: {exc.strerror or exc}") from None
    return load_profile(path)
