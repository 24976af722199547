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
from collections.abc import Iterable
from typing import Final

from keyramp.profile import METRICS, WORKLOAD_ERRORS, Threshold
from keyramp.results._generator import generator_limited, limit_text
from keyramp.results._summary import CellLike, CellSummary, ThresholdRow, as_cell
from keyramp.results._values import num

__all__ = ["all_passed", "evaluate", "is_latency"]

_COMPARATORS: Final = {
    "<": lambda v, lim: v < lim,
    "<=": lambda v, lim: v <= lim,
    ">": lambda v, lim: v > lim,
    ">=": lambda v, lim: v >= lim,
    "==": lambda v, lim: v == lim,
}


def _ratio(cell: CellSummary) -> float | None:
    target = achieved = 0.0
    for point in cell.target_ops_per_s:
        if point.target is not None and point.achieved is not None:
            target += point.target
            achieved += point.achieved
    return achieved / target if target > 0 else None


def _plan_value(threshold: Threshold, cell: CellSummary) -> float | None:
    """A plan metric of the cell (None: no plan, or no such figure in it); no ceiling: infinity."""
    plan = cell.plan
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


def _value(threshold: Threshold, cell: CellSummary) -> tuple[bool, float | None]:
    """(applicable, value); an operation the cell does not run makes it not applicable."""
    if threshold.metric.startswith("plan."):
        return cell.probe is None, _plan_value(threshold, cell)
    if threshold.bound is not None:
        if cell.probe is not None:  # a probe cell has no key stream to forecast
            return False, None
        band = cell.forecast.band(threshold.metric.split(".", 1)[1]) if cell.forecast is not None else None
        value = getattr(band, threshold.bound, None) if band is not None else math.nan
        if value is None and threshold.metric == "forecast.adapt_s":
            return True, math.inf  # never adapts within the launch
        number = None if isinstance(value, bool) or not isinstance(value, int | float) else float(value)
        return True, None if number is None or math.isnan(number) else number
    if threshold.metric == "ops_per_s_ratio":
        ratio = _ratio(cell)
        # Closed-model ("users") cells have no scheduled rate: nothing to hold them to.
        return ratio is not None, ratio
    if threshold.operation is None:
        stats = cell.total
    elif threshold.operation not in cell.operations:
        return False, None
    else:
        stats = cell.operations[threshold.operation]
    if threshold.metric == WORKLOAD_ERRORS and stats is not None and stats.workload_errors is None:
        return False, None  # a summary from before keyramp counted them (compare reads old runs)
    node: object = stats
    for key in METRICS[threshold.metric][0]:
        node = getattr(node, key, None)
    return True, num(node)


def is_latency(metric: str) -> bool:
    """A measured latency or service-time percentile: what a generator-limited cell cannot vouch
    for (the launch forecast's modelled ``forecast.added_p99_ms`` is not measured)."""
    return metric.endswith("_ms") and not metric.startswith("forecast.")


def evaluate(thresholds: Iterable[Threshold], cell_summary: CellLike) -> list[ThresholdRow]:
    """Check each threshold against one cell's summary: the rows ``summary.json`` records under the
    cell's ``thresholds`` (``verdict`` "pass", "fail", or "inconclusive": a latency threshold of a
    generator-limited cell, ``note`` says why; only "pass" has ``passed`` true).

    A threshold whose value is missing (no operations completed) fails: a run that
    measured nothing must not pass silently. Latency thresholds of a generator-limited cell
    are inconclusive (see the module docstring).
    """
    cell = as_cell(cell_summary)
    limited = limit_text(cell) if generator_limited(cell) else None
    results = []
    for threshold in thresholds:
        applicable, value = _value(threshold, cell)
        if not applicable:
            continue
        passed = value is not None and bool(_COMPARATORS[threshold.op](value, threshold.limit))
        if value is not None and math.isinf(value):
            value = None  # JSON has no infinity: "never adapts" is recorded as no value
        verdict, note = ("pass" if passed else "fail"), ""
        if limited is not None and is_latency(threshold.metric):
            passed, verdict, note = False, "inconclusive", limited
        results.append(ThresholdRow(name=threshold.name, op=threshold.op, limit=threshold.limit, value=value,
                                    passed=passed, verdict=verdict, note=note))
    return results


def all_passed(results: Iterable[ThresholdRow]) -> bool:
    return all(r.passed for r in results)
