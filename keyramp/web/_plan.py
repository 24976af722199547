"""A cell's launch plan as a view model: reachable or not, the ramp drawn against 500/50/5, the fix, the cost.

Every figure here is modelled (``keyramp.results._plan_doc``, docs/plan.md) and the page says so.
Defensive like the other view models: a plan that does not read (hand-edited, an older
format) is None, never a 500. The chart is an inline SVG drawn from numbers only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keyramp.core import fmt
from keyramp.forecast import as_of_text, faster_text, ramp_text
from keyramp.results import GOOGLE_RAMP, CellLaunchPlan, DocError, Fix, PlanCheck, Ramp, RampShape
from keyramp.web._axes import Frame

__all__ = ["plan_short", "plan_view", "ramp_chart", "read_plan"]

#: The y axis runs to this much above the target, so the target line and its label stay inside.
_HEADROOM = 1.15


def read_plan(raw: object) -> CellLaunchPlan | None:
    """``cells[id].plan`` (or a ``keyramp plan --json`` cell) as a ``CellLaunchPlan``; None when it does not read."""
    if not isinstance(raw, Mapping):
        return None
    try:
        return CellLaunchPlan.from_json(dict(raw))
    except DocError:
        return None


def _steps(shape: RampShape, target: float, end: float) -> list[tuple[float, float]]:
    """(seconds, ops/s) corners of the ramp's staircase up to ``target``, held there until ``end``."""
    pts, t, rate = [], 0.0, min(shape.start_ops, target)
    while t < end and rate < target:
        nxt = min(rate * (1 + shape.growth), target)
        pts += [(t, rate), (t + shape.step_s, rate)]
        t, rate = t + shape.step_s, nxt
    return [*pts, (t, rate), (max(end, t), rate)]


def ramp_chart(ramp: Ramp) -> dict[str, Any]:
    """The planned ramp and Google's 500/50/5 to the same target, ops/s over time, with the target line."""
    target = ramp.target_ops_per_s
    end = max(ramp.time_to_target_s, ramp.google_time_to_target_s, 60.0) * 1.1
    frame = Frame(x_end=end, y_top=target * _HEADROOM)
    lines = [{"name": "planned", "legend": f"planned ramp ({'safe' if ramp.check.passes else 'fails'})",
              "points": frame.polyline(_steps(ramp.shape, target, end))},
             {"name": "google", "legend": f"500/50/5 ({'safe' if ramp.google.passes else 'not safe'})",
              "points": frame.polyline(_steps(GOOGLE_RAMP, target, end))}]
    fast = ramp.modelled_faster
    if fast is not None:  # shown, never recommended: the model alone allows it
        lines.append({"name": "faster", "legend": f"{fast.label} (not recommended)",
                      "points": frame.polyline(_steps(fast, target, end))})
    return {
        **frame.doc(y_text=fmt.count, x_title="time since the launch started", y_title="ops/s"),
        "lines": lines,
        "target_y": frame.y(target), "target_text": f"target {fmt.ops_per_s(target)}", "end_s": end,
    }


def _check(check: PlanCheck | None) -> dict[str, Any] | None:
    if check is None:
        return None
    thr = check.throttled_fraction
    peak = check.peak_throttled_fraction
    return {"passes": check.passes, "throttled": fmt.percent_band(thr.get("low"), thr.get("high")),
            "peak": None if peak is None else fmt.percent(peak.get("high")),
            "nodes": check.nodes, "reason": check.reason}


def _ramp(ramp: Ramp | None) -> dict[str, Any] | None:
    if ramp is None:
        return None
    return {"text": ramp_text(ramp), "check": _check(ramp.check), "chart": ramp_chart(ramp),
            "basis": ramp.basis, "evidence": ramp.evidence, "faster": faster_text(ramp),
            "start": fmt.ops_per_s(ramp.shape.start_ops), "growth": fmt.percent(ramp.shape.growth),
            "step": fmt.duration(ramp.shape.step_s), "time": fmt.duration(ramp.time_to_target_s),
            "google_time": fmt.duration(ramp.google_time_to_target_s), "google_safe": ramp.google.passes}


def _fix(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    return {"kind": fix.kind, "value": None if fix.value is None else fmt.count(fix.value), "design": fix.design,
            "why": fix.why, "passes": fix.passes, "check": _check(fix.forecast), "one_fewer": _check(fix.one_fewer),
            "nodes": fix.nodes, "ramp": _ramp(fix.ramp)}


def _sustains(plan: CellLaunchPlan) -> str:
    band = plan.sustainable_ops_per_s
    if band is None:
        return f"no ceiling set by the key design up to {fmt.ops_per_s(plan.checked_to_ops_per_s)} (checked)"

    def one(v: float | None) -> str:
        return "no ceiling" if v is None else fmt.ops_per_s(v)

    return f"{one(band.low)} – {one(band.high)} (mid {one(band.mid)}) once the store has split"


def plan_short(plan: CellLaunchPlan) -> str:
    """The answer row's plan cell: ``reachable: ramp 30 min (500/50/5: 1 h)`` or ``fix: shards 32``."""
    if plan.reachable:
        ramp = plan.ramp
        if ramp is None:
            return "reachable"
        if ramp.time_to_target_s == 0:
            return "reachable: no ramp needed"
        if ramp.is_google:
            return f"reachable: 500/50/5, {fmt.duration(ramp.time_to_target_s)}"
        return (f"reachable: ramp {fmt.duration(ramp.time_to_target_s)} "
                f"(500/50/5: {fmt.duration(ramp.google_time_to_target_s)})")
    fix = plan.fix
    if fix is None:
        return "not reachable"
    value = "" if fix.value is None else f" {fmt.count(fix.value)}"
    return f"not reachable; fix: {fix.kind.replace('_', ' ')}{value}"


def _cost(plan: CellLaunchPlan) -> dict[str, Any] | None:
    cost = plan.cost
    if cost is None:
        return None
    p = cost.prices
    ramp = None if cost.ramp_usd is None else fmt.usd(cost.ramp_usd)
    return {"hour": fmt.usd(cost.launch_usd_per_hour), "ramp": ramp,
            "nodes": cost.nodes, "storage": None if cost.storage is None else str(cost.storage).upper(),
            "where": f"{p.location} ({p.location_type}), {as_of_text(p.as_of)}", "label": cost.label,
            "not_priced": list(cost.not_priced), "notes": list(cost.notes),
            "short": f"{fmt.usd(cost.launch_usd_per_hour)}/h" + ("" if ramp is None else f", ramp {ramp}")}


def plan_view(plan: CellLaunchPlan | None) -> dict[str, Any] | None:
    """The plan section of a cell (and the answer row's plan and cost), from ``cells[id].plan``."""
    if plan is None:
        return None
    where = None if plan.nodes is None else fmt.plural(plan.nodes, f"{str(plan.storage).upper()} node")
    return {"modelled": True, "reachable": plan.reachable, "why": plan.why, "short": plan_short(plan),
            "target": fmt.ops_per_s(plan.target_ops_per_s), "throttle": fmt.percent(plan.throttle),
            "sustains": _sustains(plan), "check": _check(plan.check), "ramp": _ramp(plan.ramp), "fix": _fix(plan.fix),
            "cost": _cost(plan), "where": where, "keys_from": plan.keys, "params_from": plan.params_from,
            "forecasts": plan.forecasts, "doc": plan.to_json()}
