"""Checking a plan by running it (``keyramp plan RUN --verify``): one cell's plan replayed at 1/K
scale against the store-like target (docs/fidelity.md) — the planned ramp, Google's 500/50/5 to
the same target, and the fix — each a profile whose measured throttled share is shown next to
the share the plan forecast for it.

Each variant's schedule is the launch's ramp with its rates ÷ K and its clock ×T
(``schedule.time_scale``), its ``[launch]`` the real ramp (so the run forecasts it as the plan
did), and ``[emulator] fidelity = "store"`` with ``scale = K``: the model's capacities ÷ K and,
following the schedule's clock, its delays ÷ T. This checks the projection, the planner and real
clients with real retries end to end; it does not check the model's parameters, which only
``keyramp calibrate`` on the cloud can do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from keyramp.core import UsageError
from keyramp.forecast._plan_profile import _workload_table, rehearsed, write_acknowledged
from keyramp.profile import Settings, parse_profile
from keyramp.results import GOOGLE_RAMP, CellLaunchPlan, PlanCheck, RampShape

if TYPE_CHECKING:
    from keyramp.profile import Profile

__all__ = ["CHECKS_WHAT", "Variant", "verify_scale", "verify_variants", "write_store_rehearsal"]

#: What a verification checks, said with every one.
CHECKS_WHAT: Final = ("measured at 1/K against the store-like target: this checks the projection, the planner and "
                      "real clients with real retries end to end; it does not check the model's parameters, which "
                      "only `keyramp calibrate` on the cloud can do")
#: The highest rate a verification asks of this machine, ops/s, when K is not given.
_MACHINE_OPS = 200.0
#: K x T at most this when T is not given (the store model's scale check: docs/fidelity.md).
_KT = 1000.0
_HOLD_S = 600.0


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One replay: its name, the profile (resolved) and what the plan forecast for it (None: nothing)."""

    name: str
    design: str
    profile: Any  # keyramp.profile.Profile
    modelled: PlanCheck | None


def verify_scale(plan: CellLaunchPlan, *, scale: float | None, time_scale: float | None) -> tuple[float, float]:
    """K (default: the target ÷ 200 ops/s, at least 1) and T (default: 1,000 ÷ K, at least 1)."""
    k = scale if scale is not None else max(1.0, math.ceil(plan.target_ops_per_s / _MACHINE_OPS))
    t = time_scale if time_scale is not None else max(1.0, math.floor(_KT / k))
    for name, value in (("--scale", k), ("--time-scale", t)):
        if not 0 < value < math.inf:
            raise UsageError(f"{name}: must be a finite number > 0, got {value:g}")
    return k, t


def _variants(plan: CellLaunchPlan) -> list[tuple[str, RampShape, str, float, PlanCheck | None]]:
    out: list[tuple[str, RampShape, str, float, PlanCheck | None]] = []
    google = GOOGLE_RAMP
    if plan.ramp is not None:
        out.append(("planned ramp", plan.ramp.shape, plan.strategy, plan.ramp.hold_s, plan.ramp.check))
        out.append(("500/50/5", google, plan.strategy, plan.ramp.hold_s, plan.ramp.vs_500_50_5.check))
    else:
        out.append(("500/50/5", google, plan.strategy, _HOLD_S, None))
    fix = plan.fix
    if fix is not None and fix.ramp is not None and fix.kind == "shards":
        out.append((f"fix: {fix.design}", fix.ramp.shape, fix.design, fix.ramp.hold_s, fix.ramp.check))
    return out


def _replay(plan: CellLaunchPlan, settings: Settings, *, what: str, shape: RampShape, design: str,
            hold_s: float, nodes: int | None, scale: float, time_scale: float) -> dict[str, Any]:
    """A profile (plain values) replaying ``shape`` to the plan's target with ``design`` at 1/``scale``,
    clock ×``time_scale``: the launch's ramp ÷ K in the schedule, the real ramp as its ``[launch]``."""
    target = plan.target_ops_per_s
    seconds = shape.time_to(target) + hold_s
    ramp = {"kind": "ramp_500_50_5", "growth": shape.growth, "step": f"{shape.step_s:g}s"}
    peak = target / scale
    params = settings.keys.params
    return {
        "name": f"{settings.name}-verify", "backend": plan.backend,
        "driver": settings.driver, "duration": f"{math.ceil(seconds / time_scale)}s",
        "seed": int(settings.seed),
        "description": f"keyramp plan: {plan.cell_id}, {what}, at 1/{scale:g} (clock x{time_scale:g})",
        # the workload table as TOML, from the resolved table the settings were read from (the wire form)
        "workload": _workload_table(settings.resolved.get("workload") or {}, plan.backend),
        "keys": {"strategy": design, **({"params": dict(params)} if params and design == plan.strategy else {})},
        "schedule": {**ramp, "start_ops": min(shape.start_ops, target) / scale, "ceiling": peak,
                     "time_scale": time_scale, "warmup": "1s", "max_users": max(20, int(peak * 0.2) + 10)},
        "launch": {**ramp, "start_ops": float(min(shape.start_ops, target)), "ceiling": float(target),
                   "duration": f"{math.ceil(seconds)}s",
                   **({"nodes": int(nodes), "storage": str(plan.storage)} if nodes is not None else {})},
        "emulator": {"fidelity": "store", "scale": scale},
    }


def verify_variants(plan: CellLaunchPlan, settings: Settings, *, scale: float, time_scale: float) -> list[Variant]:
    """The replays of ``plan`` (from the run's ``settings``) at 1/``scale``, clock ×``time_scale``."""
    variants = []
    for name, shape, design, hold_s, modelled in _variants(plan):
        data = _replay(plan, settings, what=f"--verify {name}", shape=shape, design=design, hold_s=hold_s,
                       nodes=plan.nodes, scale=scale, time_scale=time_scale)
        variants.append(Variant(name=name, design=design, modelled=modelled,
                                profile=parse_profile(data, source=f"plan --verify ({name})")))
    return variants


def write_store_rehearsal(path: Path, plan: CellLaunchPlan, settings: Settings, *, scale: float,
                          time_scale: float) -> Profile:
    """``--write-profile FILE --fidelity store``: the cloud rehearsal's ramp and design (the fix's when
    there is one) replayed as ``--verify`` replays it, at 1/``scale`` with its clock ×``time_scale``,
    against the store-like target (``[emulator] fidelity = "store"``, the model's K and T written
    out); its ``[acknowledge]`` as the cloud rehearsal's. Loaded back as ``keyramp run`` will load it."""
    ramp, design, nodes = rehearsed(plan)
    data = _replay(plan, settings, what="rehearsal on the store-like target", shape=ramp.shape, design=design,
                   hold_s=ramp.hold_s, nodes=(nodes or plan.nodes) if plan.nodes is not None else None, scale=scale,
                   time_scale=time_scale)
    data["name"] = f"{settings.name}-rehearsal-store"
    data["emulator"]["time_scale"] = time_scale
    data["thresholds"] = {"error_rate": 0.01}
    top = {k: v for k, v in data.items() if not isinstance(v, dict)}
    return write_acknowledged(path, plan, top, {k: v for k, v in data.items() if isinstance(v, dict)})
