"""What the time charts draw besides the data: each threshold on the chart it gates (a line at
its limit, and the points that breach it), the end of the warm-up and the schedule's steps.

A threshold judges the whole cell (``insert.p99_ms < 50``: the cell's p99); the chart holds it
against each point, so the breached points show *when* the cell went over, not the verdict.
Thresholds the time series cannot show (``errors``, ``late``, the forecast's, the plan's) are
not drawn; latency ones without a series of their own (p90, p99.9, max, service time) are drawn
as a line without breaches.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from keyramp.core import ALL_OPS, UsageError, fmt
from keyramp.profile import make_schedule
from keyramp.results import STEPPED, CellSummary, ManifestCell, num

__all__ = ["cell_markers", "op_thresholds"]

#: metric -> (the chart that shows it, the op series it is held against, or None: a line only)
_CHARTS: dict[str, tuple[str, str | None]] = {
    "p50_ms": ("latency", "p50_ms"), "p95_ms": ("latency", "p95_ms"), "p99_ms": ("latency", "p99_ms"),
    **{f"{p}_ms": ("latency", None) for p in ("p90", "p999", "max", "mean")},
    **{f"service_{p}_ms": ("latency", None) for p in ("p50", "p90", "p95", "p99", "p999", "max", "mean")},
    "error_rate": ("errors", "error_rate"),
    "ops_per_s": ("throughput", "ops_per_s"),
    "ops_per_s_ratio": ("throughput", "ops_per_s"),
}
_PASSES: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq}


def _split(name: str) -> tuple[str, str]:
    """``insert.p99_ms`` -> ("insert", "p99_ms"); a bare metric is the cell's, all operations ("*")."""
    op, _, metric = name.rpartition(".")
    return (op or ALL_OPS), metric


def _spans(t: Sequence[float], values: Sequence[float | None], limits: Sequence[float | None],
           passes: Callable[[float, float], bool], bucket_s: float) -> list[list[float]]:
    """[start, end] of the runs of consecutive points whose value does not pass its limit."""
    spans: list[list[float]] = []
    for x, v, limit in zip(t, values, limits, strict=False):
        if v is None or limit is None or not math.isfinite(v) or passes(v, limit):
            continue
        if spans and spans[-1][1] >= x:
            spans[-1][1] = x + bucket_s
        else:
            spans.append([x, x + bucket_s])
    return spans


def op_thresholds(thresholds: Sequence[Mapping[str, Any]], op: str, series: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The cell's thresholds on operation ``op`` (``*``: the cell's total) as chart lines, each with
    the spans of ``series`` (one op's downsampled chart data, ``_timeseries.downsample``) that breach it."""
    out = []
    for row in thresholds:
        name, limit, comparator = row.get("name") or "", num(row.get("limit")), row.get("op") or "<"
        on, metric = _split(name)
        if on != op or metric not in _CHARTS or limit is None or comparator not in _PASSES:
            continue
        chart, against = _CHARTS[metric]
        t, bucket = series.get("t") or [], float(series.get("bucket_s") or 1)
        line: dict[str, Any] = {"name": name, "chart": chart, "metric": metric, "comparator": comparator,
                                "limit": limit, "verdict": row.get("verdict"), "series": against,
                                "label": f"{name} {comparator} {fmt.number(limit)}", "breaches": []}
        limits: list[float | None] = [limit] * len(t)
        if metric == "ops_per_s_ratio":  # a share of the scheduled rate: a line that follows the target
            target = series.get("target_ops_per_s") or []
            if not target:
                continue
            limits = [None if v is None else v * limit for v in target]
            line.update(values=limits, label=f"{name} {comparator} {fmt.percent(limit)} of target")
        elif metric == "error_rate":
            line["label"] = f"{name} {comparator} {fmt.percent(limit)}"
        elif chart == "latency":
            line["label"] = f"{name} {comparator} {fmt.ms(limit)}"
        if against is not None:
            line["breaches"] = _spans(t, series.get(against) or [], limits, _PASSES[comparator], bucket)
        out.append(line)
    return out


def cell_markers(cell: CellSummary | None, planned: ManifestCell | None) -> list[dict[str, Any]]:
    """Vertical markers on a cell's time charts (wall seconds of the measured phase): where the
    unmeasured warm-up ended, and where a stepped schedule (step, 500/50/5, spike) changes rate."""
    out: list[dict[str, Any]] = []
    warmup = num(cell.warmup_s) if cell is not None else None
    if warmup:
        out.append({"t": 0, "kind": "warmup", "short": "warm-up ended",
                    "label": f"warm-up ended ({fmt.duration(warmup)} before, not measured)"})
    if planned is None or not planned.schedule:
        return out
    duration = num(planned.duration_s) or (num(cell.duration_s) if cell is not None else None)
    scale = num(planned.time_scale) or 1.0
    if not duration:
        return out
    try:
        schedule = make_schedule(planned.schedule, horizon=duration * scale)
    except (UsageError, TypeError, ValueError):  # a hand-edited manifest: no markers, never a 500
        return out
    if schedule.name not in STEPPED:
        return out
    starts = sorted({p for p in schedule.change_points(duration * scale) if 0 < p < duration * scale})
    for i, at in enumerate(starts, start=2):
        label = f"step {i}: {fmt.ops_per_s(schedule.rate(at))}"
        out.append({"t": round(at / scale, 3), "kind": "step", "short": label, "label": label})
    return out
