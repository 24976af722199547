"""Pass/fail thresholds on a cell's summary, k6-style.

Sources: a profile's ``[thresholds]`` table and ``--threshold`` expressions::

    error_rate = 0.01              # bare number: value < limit
    "insert.p99_ms" = 50
    "insert.error_rate" = "<=0.05"  # explicit comparator
    ops_per_s_ratio = 0.95         # achieved >= 0.95 x scheduled ops/s
    "forecast.throttled_fraction" = 0.05   # the launch forecast's band (modelled; needs [launch])
    "plan.reachable" = true        # the launch plan reaches the [launch] peak (modelled; docs/plan.md)
    workload_errors = 10           # a Python workload's own exceptions: at most 10 (default 0)
    --threshold 'insert.p99_ms<50'  --threshold 'p99_ms=40'

A name is ``[<operation>.]<metric>``; without an operation the metric is over all the
cell's operations (the summary's ``total``). For throughput metrics a bare number is a
floor (``>=``), for everything else a ceiling (``<``), except ``workload_errors``: a bare
number is how many are allowed (``<=``). A profile with a Python workload gets
``workload_errors <= 0`` unless it names that metric itself: the workload's own exceptions
(not store statuses) fail the run. ``forecast.<metric>[.low|.mid|.high]``
gates on the launch forecast's band, by default its ``high`` end: the whole band must pass.
``plan.<metric>`` gates on the launch plan (docs/plan.md; a run plans its cells only when a
threshold names one): ``plan.reachable = true``, ``plan.sustainable_ops_per_s[.low|.mid|.high]``
(a floor; no ceiling passes), ``plan.time_to_target_s`` and ``plan.launch_usd_per_hour`` (ceilings).

Evaluating them on a run is the results' (``keyramp.results._thresholds``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from keyramp.core import OP_NAMES, UsageError, known_names

__all__ = [
    "FORECAST_METRICS",
    "METRICS",
    "PLAN_METRICS",
    "WORKLOAD_ERRORS",
    "Threshold",
    "parse_expression",
    "parse_table",
    "with_workload_errors",
]

_PERCENTILES: Final = ("p50", "p90", "p95", "p99", "p999", "max", "mean")

#: metric -> (where in an operation's summary, higher is better)
METRICS: Final[dict[str, tuple[tuple[str, ...], bool]]] = {
    **{f"{p}_ms": (("latency_ms", p), False) for p in _PERCENTILES},
    **{f"service_{p}_ms": (("service_ms", p), False) for p in _PERCENTILES},
    "error_rate": (("error_rate",), False),
    "errors": (("errors",), False),
    "workload_errors": (("workload_errors",), False),
    "late": (("late",), False),
    "dropped": (("dropped",), False),
    "count": (("count",), True),
    "ops_per_s": (("ops_per_s",), True),
    "ops_per_s_ratio": ((), True),  # computed from the cell's target_ops_per_s timeline
}

#: The workload's own exceptions (``run._exceptions``): a bare number is an allowance (``<=``).
WORKLOAD_ERRORS: Final = "workload_errors"

#: forecast metric -> (where in ``cells[id].forecast``); each is a band {low, mid, high}.
FORECAST_METRICS: Final = ("throttled_fraction", "peak_throttled_fraction", "adapt_s", "added_p99_ms")
_BOUNDS: Final = ("low", "mid", "high")
#: plan metric -> its comparator for a bare value (``cells[id].plan``); ``reachable`` takes true or false.
PLAN_METRICS: Final = {"reachable": "==", "sustainable_ops_per_s": ">=", "time_to_target_s": "<",
                       "launch_usd_per_hour": "<"}
_EXPR_RE = re.compile(r"^\s*([A-Za-z0-9_.*]+)\s*(<=|>=|<|>|==|=)\s*(\S+)\s*$")
_VALUE_RE = re.compile(r"^\s*(<=|>=|<|>)?\s*(\S+)\s*$")


@dataclass(frozen=True)
class Threshold:
    name: str  # as written, e.g. "insert.p99_ms"
    operation: str | None  # None: over all operations
    metric: str
    op: str  # comparator: < <= > >= (== for plan.reachable)
    limit: float
    #: For ``forecast.*`` and ``plan.sustainable_ops_per_s``: which end of the band (low / mid / high); else None.
    bound: str | None = None



def _limit(text: Any, name: str) -> float:
    """A threshold's limit: a number, or (``plan.reachable``) true or false."""
    if name == "plan.reachable" and (isinstance(text, bool) or str(text).lower() in ("true", "false")):
        return 1.0 if text is True or str(text).lower() == "true" else 0.0
    return _number(text, name)


def _number(text: Any, name: str) -> float:
    if isinstance(text, bool):
        raise UsageError(f"threshold {name!r}: limit must be a number, got {text!r}")
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"threshold {name!r}: limit must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise UsageError(f"threshold {name!r}: limit must be finite")
    return value


def _make_forecast(name: str, comparator: str | None, limit: float) -> Threshold:
    parts = name.split(".")[1:]
    bound = parts.pop() if len(parts) == 2 and parts[-1] in _BOUNDS else "high"
    if len(parts) != 1 or parts[0] not in FORECAST_METRICS:
        raise UsageError(f"threshold {name!r}: forecast metrics are forecast.<metric>[.low|.mid|.high] with "
                         f"<metric> one of {', '.join(FORECAST_METRICS)}")
    return Threshold(name=name, operation=None, metric=f"forecast.{parts[0]}", op=comparator or "<", limit=limit,
                     bound=bound)


def _make_plan(name: str, comparator: str | None, limit: float) -> Threshold:
    parts = name.split(".")[1:]
    bound = parts.pop() if len(parts) == 2 and parts[-1] in _BOUNDS else None
    if len(parts) != 1 or parts[0] not in PLAN_METRICS or (bound and parts[0] != "sustainable_ops_per_s"):
        raise UsageError(f"threshold {name!r}: plan metrics are plan.reachable, plan.sustainable_ops_per_s"
                         f"[.low|.mid|.high], plan.time_to_target_s, plan.launch_usd_per_hour")
    metric = parts[0]
    if metric == "reachable" and (limit not in (0.0, 1.0) or comparator not in (None, "==")):
        raise UsageError(f"threshold {name!r}: plan.reachable is true or false")
    return Threshold(name=name, operation=None, metric=f"plan.{metric}", op=comparator or PLAN_METRICS[metric],
                     limit=limit, bound=bound or ("low" if metric == "sustainable_ops_per_s" else None))


def _make(name: str, comparator: str | None, limit: float, operations: Collection[str] = OP_NAMES) -> Threshold:
    if name.startswith("forecast."):
        return _make_forecast(name, comparator, limit)
    if name.startswith("plan."):
        return _make_plan(name, comparator, limit)
    operation, _, metric = name.rpartition(".")
    if metric not in METRICS:
        raise UsageError(f"threshold {name!r}: unknown metric {metric!r} {known_names(metric, sorted(METRICS))}")
    if operation:
        if operation not in operations:
            raise UsageError(f"threshold {name!r}: unknown operation {operation!r} "
                             f"{known_names(operation, sorted(operations), label='operations')}")
        if metric == "ops_per_s_ratio":
            raise UsageError(f"threshold {name!r}: ops_per_s_ratio is per cell, not per operation")
    higher_is_better = METRICS[metric][1]
    bare = "<=" if metric == WORKLOAD_ERRORS else ">=" if higher_is_better else "<"
    return Threshold(name=name, operation=operation or None, metric=metric, op=comparator or bare, limit=limit)


def with_workload_errors(thresholds: Iterable[Threshold], *, python_workload: bool) -> list[Threshold]:
    """``thresholds`` plus ``workload_errors <= 0`` for a Python workload that does not name the
    metric: its own exceptions fail the run unless the profile allows them."""
    given = list(thresholds)
    if python_workload and not any(t.metric == WORKLOAD_ERRORS for t in given):
        given.append(Threshold(name=WORKLOAD_ERRORS, operation=None, metric=WORKLOAD_ERRORS, op="<=", limit=0.0))
    return given


def parse_table(table: Mapping[str, Any], *, operations: Collection[str] = OP_NAMES) -> list[Threshold]:
    """A profile's ``[thresholds]`` table: name -> number, ``"<=50"``-style string, or a list of those.
    ``operations``: the op names a threshold may name (a Python workload's are its methods)."""
    if not isinstance(table, Mapping):
        raise UsageError("[thresholds] must be a table of name = limit")
    out: list[Threshold] = []
    for name, spec in table.items():
        for item in spec if isinstance(spec, list) else [spec]:
            if isinstance(item, str):
                match = _VALUE_RE.match(item)
                if not match:
                    raise UsageError(f"threshold {name!r}: cannot parse {item!r}")
                out.append(_make(str(name), match.group(1), _limit(match.group(2), name), operations))
            else:
                out.append(_make(str(name), None, _limit(item, name), operations))
    return out


def parse_expression(text: str, *, operations: Collection[str] = OP_NAMES) -> Threshold:
    """A command-line threshold: ``insert.p99_ms<50``; ``name=limit`` means the bare-number default."""
    match = _EXPR_RE.match(text or "")
    if not match:
        raise UsageError(f"cannot parse threshold {text!r} (expected e.g. 'insert.p99_ms<50')")
    name, comparator, limit = match.groups()
    return _make(name, None if comparator in ("=", "==") else comparator, _limit(limit, name), operations)
