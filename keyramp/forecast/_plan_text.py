"""A plan in words: one block per cell, every figure marked modelled (``keyramp plan``'s text)."""

from __future__ import annotations

from keyramp.core import fmt
from keyramp.forecast._prices import as_of_text
from keyramp.results import CellLaunchPlan, Fix, LaunchPlan, PlanCheck, Ramp, RampShape, RateBand

__all__ = ["ceiling_text", "cell_block", "faster_short", "faster_text", "plan_text", "ramp_text"]

_MARK = "*"


def ceiling_text(v: float | None) -> str:
    """One end of what a design sustains: a rate, or none below the rates checked."""
    return "no ceiling" if v is None else fmt.ops_per_s(v)


def _sustains(band: RateBand | None, checked_to: float | None) -> str:
    if band is None:
        return f"no ceiling set by the key design up to {fmt.ops_per_s(checked_to)} (checked)"
    one = ceiling_text
    return f"{one(band.low)} – {one(band.high)} (mid {one(band.mid)}) once the store has split"


def _check(check: PlanCheck | None) -> str:
    if check is None:
        return "not checked"
    thr = check.throttled_fraction
    text = f"throttled {fmt.percent_band(thr['low'], thr['high'])}"
    peak = check.peak_throttled_fraction
    if peak is not None:
        text += f", worst 10-s step {fmt.percent(peak['high'])}"
    return f"{text} ({'passes' if check.passes else 'fails'})"


def _shape_text(shape: RampShape, target: float, time_s: float) -> str:
    if time_s == 0:
        return f"start at {fmt.ops_per_s(target)}: no ramp needed"
    return (f"start {fmt.ops_per_s(shape.start_ops)}, +{fmt.percent(shape.growth)} every {fmt.duration(shape.step_s)}: "
            f"{fmt.ops_per_s(target)} in {fmt.duration(time_s)}")


def ramp_text(ramp: Ramp) -> str:
    """``start 500 ops/s, +50 % every 10 min: 50,000 ops/s in 2 h (500/50/5 takes 1 h, not safe, ×2 its time)``;
    Google's own ramp says so (``… in 1 h (Google's 500/50/5)``)."""
    head = _shape_text(ramp.shape, ramp.target_ops_per_s, ramp.time_to_target_s)
    google = ramp.google_time_to_target_s
    if ramp.is_google:
        return f"{head} (Google's 500/50/5)"
    verdict = "also safe" if ramp.google.passes else "not safe"
    if google <= 0:  # a target at or below 500 ops/s: Google's rule starts there too
        return f"{head} (500/50/5 starts there too, {verdict})"
    speed = "" if ramp.time_to_target_s == 0 else f", {fmt.ratio(ramp.time_to_target_s / google)} its time"
    return f"{head} (500/50/5 takes {fmt.duration(google)}, {verdict}{speed})"


def faster_text(ramp: Ramp) -> str | None:
    """The faster ramp the model alone allows, labelled (None when there is none)."""
    fast = ramp.modelled_faster
    if fast is None:
        return None
    return (f"{fast.label}: {_shape_text(fast, ramp.target_ops_per_s, fast.time_to_target_s)} "
            f"({_check(fast.check)}; not recommended: its split parameters are bounded by that rule — "
            "keyramp calibrate measures them)")


def faster_short(ramp: Ramp | None) -> str:
    """``; modelled, faster than Google's published rule: +50 % every 4.2 min, 42 min`` (or nothing)."""
    fast = None if ramp is None else ramp.modelled_faster
    if ramp is None or fast is None:
        return ""
    if fast.time_to_target_s == 0:
        return f"; {fast.label}: start at {fmt.ops_per_s(ramp.target_ops_per_s)}"
    return (f"; {fast.label}: start {fmt.ops_per_s(fast.start_ops)}, +{fmt.percent(fast.growth)} every "
            f"{fmt.duration(fast.step_s)}, {fmt.duration(fast.time_to_target_s)}")


def _ramp_lines(ramp: Ramp, lead: str, indent: str) -> list[str]:
    lines = [f"{lead}{ramp_text(ramp)}", f"{indent}its forecast: {_check(ramp.check)}"]
    if ramp.basis == "calibrated":
        lines.append(f"{indent}rests on: {ramp.evidence}")
    faster = faster_text(ramp)
    return lines + ([f"{indent}{faster}"] if faster else [])


def _fix_lines(fix: Fix) -> list[str]:
    value = "" if fix.value is None else f" {fmt.count(fix.value)}"
    # one sentence on one line: the fix, its design and why (a terminal wraps it; a line break cut it in two)
    lines = [f"  fix{_MARK}:        {fix.kind.replace('_', ' ')}{value}: {fix.design} — {fix.why}"]
    if fix.forecast is not None:
        lines.append(f"                check at the target: {_check(fix.forecast)}")
    if fix.one_fewer is not None:
        lines.append(f"                one fewer: {_check(fix.one_fewer)}")
    if fix.ramp is not None:
        lines += _ramp_lines(fix.ramp, "                its ramp: ", "                ")
    return lines


def cell_block(plan: CellLaunchPlan) -> str:
    """The cell's answer: sustains, reachable and why, the ramp or the fix, the cost."""
    where = "" if plan.nodes is None else f", {fmt.plural(plan.nodes, str(plan.storage).upper() + ' node')}"
    lines = [f"{plan.cell_id}  ({plan.backend}, {plan.strategy}{where}; keys {plan.keys or '-'}, parameters: "
             f"{plan.params_from})",
             f"  sustains{_MARK}:   {_sustains(plan.sustainable_ops_per_s, plan.checked_to_ops_per_s)}",
             f"  reachable{_MARK}:  {'yes' if plan.reachable else 'no'} — {plan.why}"]
    if plan.ramp is not None:
        lines += _ramp_lines(plan.ramp, f"  ramp{_MARK}:       ", "                ")
    if plan.fix is not None:
        lines += _fix_lines(plan.fix)
    cost = plan.cost
    if cost is not None:
        text = f"{fmt.usd(cost.launch_usd_per_hour)} per hour at {fmt.ops_per_s(plan.target_ops_per_s)}"
        if cost.ramp_usd is not None:
            text += f"; the ramp {fmt.usd(cost.ramp_usd)}"
        if cost.nodes is not None:
            text += f" ({fmt.plural(cost.nodes, str(cost.storage).upper() + ' node')})"
        p = cost.prices
        lines.append(f"  cost{_MARK}:       {text}; {p.location} ({p.location_type}), {as_of_text(p.as_of)}")
    return "\n".join(lines)


def plan_text(plan: LaunchPlan) -> str:
    """The whole plan: the target, a block per cell, and what "modelled" and "passes" mean."""
    head = (f"plan for {fmt.ops_per_s(plan.target_ops_per_s)} ({plan.target_from}), throttled share ≤ "
            f"{fmt.percent(plan.throttle)}")
    rules = plan.criteria
    foot = [f"{_MARK} modelled: forecasts of each key design over the model's parameter ranges "
            "(docs/keyspace-model.md), not measurements; costs: " + plan.cost_label + " (docs/plan.md)",
            f"  passes — steady: {rules['steady']}; ramp: {rules['ramp']}"]
    return "\n\n".join([head, *(cell_block(c) for c in plan.planned), "\n".join(foot)])
