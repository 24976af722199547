"""Thresholds evaluated on a cell's summary: pass, fail or inconclusive.

The thresholds themselves are the profile's (``keyramp.profile._thresholds``: parsing, the
metric names); judging a run against them is the results' job, next to the generator
verdict it depends on. A latency threshold (``*_ms``) of a generator-limited cell
(``keyramp.results._generator``) is "inconclusive", never "pass": the load generator's own
queue is in those figures. It does not pass (``passed`` is false), so a CI gate on it does
not go green.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from keyramp.profile._thresholds import METRICS, WORKLOAD_ERRORS, Threshold
from keyramp.results._doc import DocError
from keyramp.results._generator import generator_limited, generator_reason
from keyramp.results._plan_doc import CellPlan

__all__ = ["ThresholdResult", "all_passed", "evaluate", "is_latency"]

_COMPARATORS: Final = {
    "<": lambda v, lim: v < lim,
    "<=": lambda v, lim: v <= lim,
    ">": lambda v, lim: v > lim,
    ">=": lambda v, lim: v >= lim,
    "==": lambda v, lim: v == lim,
}


@dataclass(frozen=True)
class ThresholdResult:
    """One evaluated threshold; ``op`` is the comparator (as in summary.json).

    ``verdict``: "pass", "fail", or "inconclusive" (a latency threshold of a generator-limited
    cell, ``note`` says why); only "pass" has ``passed`` true.
    """

    name: str
    op: str
    limit: float
    value: float | None
    passed: bool
    verdict: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if not self.verdict:
            object.__setattr__(self, "verdict", "pass" if self.passed else "fail")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ratio(cell_summary: Mapping[str, Any]) -> float | None:
    timeline = cell_summary.get("target_ops_per_s")
    if not isinstance(timeline, list):
        return None
    target = achieved = 0.0
    for point in timeline:
        if isinstance(point, Mapping) and isinstance(point.get("target"), int | float) and isinstance(
                point.get("achieved"), int | float):
            target += point["target"]
            achieved += point["achieved"]
    return achieved / target if target > 0 else None


def _plan_value(threshold: Threshold, plan: CellPlan | None) -> float | None:
    """A plan metric of the cell (None: no plan, or no such figure in it); no ceiling: infinity."""
    if plan is None:
        return None
    metric = threshold.metric.split(".", 1)[1]
    if metric == "reachable":
        return float(plan.reachable)
    if metric == "sustainable_ops_per_s":
        band = plan.sustainable_ops_per_s  # null, or null at an end: no ceiling below the rate checked
        end = getattr(band, threshold.bound) if band is not None and threshold.bound in ("low", "mid", "high") else None
        return math.inf if end is None else float(end)
    if metric == "time_to_target_s":
        return None if plan.ramp is None else float(plan.ramp.time_to_target_s)
    if metric == "launch_usd_per_hour":
        return None if plan.cost is None else float(plan.cost.launch_usd_per_hour)
    return None


def _cell_plan(cell_summary: Mapping[str, Any]) -> CellPlan | None:
    """The cell's plan, typed (None: none, or one that does not read)."""
    doc = cell_summary.get("plan")
    try:
        return CellPlan.from_json(doc) if isinstance(doc, Mapping) else None
    except DocError:
        return None


def _value(threshold: Threshold, cell_summary: Mapping[str, Any]) -> tuple[bool, float | None]:
    """(applicable, value); an operation the cell does not run makes it not applicable."""
    if threshold.metric.startswith("plan."):
        return "probe" not in cell_summary, _plan_value(threshold, _cell_plan(cell_summary))
    if threshold.bound is not None:
        if "probe" in cell_summary:  # a probe cell has no key stream to forecast
            return False, None
        band = (cell_summary.get("forecast") or {}).get(threshold.metric.split(".", 1)[1])
        value = band.get(threshold.bound, math.nan) if isinstance(band, Mapping) else math.nan
        if value is None and threshold.metric == "forecast.adapt_s":
            return True, math.inf  # never adapts within the launch
        return True, None if not isinstance(value, int | float) or math.isnan(value) else float(value)
    if threshold.metric == "ops_per_s_ratio":
        value = _ratio(cell_summary)
        # Closed-model ("users") cells have no scheduled rate: nothing to hold them to.
        return value is not None, value
    if threshold.operation is None:
        stats = cell_summary.get("total")
    else:
        operations = cell_summary.get("operations") or {}
        if threshold.operation not in operations:
            return False, None
        stats = operations[threshold.operation]
    if threshold.metric == WORKLOAD_ERRORS and isinstance(stats, Mapping) and WORKLOAD_ERRORS not in stats:
        return False, None  # a summary from before keyramp counted them (compare reads old runs)
    node: Any = stats
    for key in METRICS[threshold.metric][0]:
        node = node.get(key) if isinstance(node, Mapping) else None
    if isinstance(node, bool) or not isinstance(node, int | float) or not math.isfinite(node):
        return True, None
    return True, float(node)


def is_latency(metric: str) -> bool:
    """A measured latency or service-time percentile: what a generator-limited cell cannot vouch
    for (the launch forecast's modelled ``forecast.added_p99_ms`` is not measured)."""
    return metric.endswith("_ms") and not metric.startswith("forecast.")


def evaluate(thresholds: Iterable[Threshold], cell_summary: Mapping[str, Any]) -> list[ThresholdResult]:
    """Check each threshold against one cell's summary (the dict under ``summary["cells"][id]``).

    A threshold whose value is missing (no operations completed) fails: a run that
    measured nothing must not pass silently. Latency thresholds of a generator-limited cell
    are inconclusive (see the module docstring).
    """
    limited = generator_reason(cell_summary) if generator_limited(cell_summary) else None
    results = []
    for threshold in thresholds:
        applicable, value = _value(threshold, cell_summary)
        if not applicable:
            continue
        passed = value is not None and _COMPARATORS[threshold.op](value, threshold.limit)
        if value is not None and math.isinf(value):
            value = None  # JSON has no infinity: "never adapts" is recorded as no value
        if limited is not None and is_latency(threshold.metric):
            results.append(ThresholdResult(name=threshold.name, op=threshold.op, limit=threshold.limit, value=value,
                                           passed=False, verdict="inconclusive",
                                           note=f"generator-limited: {limited}"))
            continue
        results.append(ThresholdResult(name=threshold.name, op=threshold.op, limit=threshold.limit,
                                       value=value, passed=bool(passed)))
    return results


def all_passed(results: Iterable[ThresholdResult]) -> bool:
    return all(r.passed for r in results)
