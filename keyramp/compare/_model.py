"""Build a comparison of runs: side-by-side values, verdicts vs a baseline, thresholds.

Verdict design (CI noise on shared machines is large, so A/A must rarely flag):

* latency percentiles (lower is better): ``worse`` only when the whole bootstrap
  confidence interval of candidate/baseline lies above ``1 + min_effect`` (25 % for
  p50, 50 % for p95 and above), i.e. we are confident the change is at least the
  minimum effect; ``better`` below ``1 / (1 + min_effect)``. The interval resamples
  1 s interval histograms, so it reflects within-run noise; the minimum effect absorbs
  the between-run noise that no single run can show.
* a starved load generator (operations started late while its users sat idle or its
  process was CPU-bound: the one rule of ``keyramp.results._generator``, which also sets
  a run's ``generator_limited``) measures the machine: a verdict that the lateness
  explains is n/a ("inconclusive"); a starved *baseline* is judged on service time for
  ``worse`` (see ``_compare_cell_op``).
  Measured A/A and A/B rates: docs/ci.md.
* throughput (ops/s, higher is better): same rule with ``min_effect_throughput`` (5 %).
* error rate: two-proportion z-test at ``alpha`` (default 0.01) plus a minimum
  absolute change (default 0.1 percentage points).
* too few samples for a percentile (fewer than ``min_tail`` operations above it) or a
  missing metric: ``n/a``, never a failure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from keyramp._types import OP_NAMES
from keyramp.compare._exceptions import NewException, new_exceptions
from keyramp.compare._stats import bootstrap_replicates, interval_matrix, ratio_ci, two_proportion
from keyramp.profile._thresholds import Threshold, ThresholdResult, evaluate, parse_table, with_workload_errors
from keyramp.results._catalog import Run, cell_identity
from keyramp.results._generator import busy_users, generator_late
from keyramp.results._read import read_intervals

__all__ = [
    "LATENCY_METRICS",
    "METRICS",
    "TAIL_METRICS",
    "CompareOptions",
    "Comparison",
    "MetricRow",
    "build_comparison",
    "busy_users",
    "run_operations",
]

#: metric name -> percentile (the summary's latency_ms keys)
LATENCY_METRICS: dict[str, tuple[str, float]] = {
    "p50_ms": ("p50", 50.0), "p95_ms": ("p95", 95.0), "p99_ms": ("p99", 99.0), "p999_ms": ("p999", 99.9),
}
METRICS: tuple[str, ...] = ("ops_per_s", *LATENCY_METRICS, "error_rate")
VERDICTS = ("better", "same", "worse", "n/a")


#: percentiles judged with ``min_effect_tail`` instead of ``min_effect_latency``
TAIL_METRICS = frozenset({"p95_ms", "p99_ms", "p999_ms"})


@dataclass(frozen=True, kw_only=True)
class CompareOptions:
    #: p50: the smallest change that counts (the whole CI must clear it). Measured on a
    #: shared 2-core box (docs/ci.md): identical runs' p50 differ by up to x1.3 even when
    #: the generator kept up; 0.10 flagged 8 % of A/A comparisons, 0.25 flagged 2.4 %.
    min_effect_latency: float = 0.25
    #: p95/p99/p99.9: tails move far more between runs on a shared machine than the median
    min_effect_tail: float = 0.50
    min_effect_throughput: float = 0.05
    alpha: float = 0.01
    min_error_diff: float = 0.001
    confidence: float = 0.95
    bootstrap: int = 1000
    seed: int = 0
    min_tail: int = 5
    #: above this share of late operations (started > 10 ms after their intended time)
    #: latency rows carry a warning: the machine, not the store, may be what was measured.
    max_late_fraction: float = 0.10
    #: A latency verdict is n/a ("inconclusive") when the run that looks slower had more
    #: operations start late than the other, beyond ``min(max_late_fraction, 1 - p/100)``,
    #: while its users were mostly idle: its generator was starved by the machine.
    inconclusive_when_behind: bool = True
    #: users busier than this share (Little's law: ops/s x mean service time / users)
    #: mean the store, not the machine, made operations late: the verdict stands.
    busy_users_fraction: float = 0.8


@dataclass(frozen=True, kw_only=True)
class MetricRow:
    """One metric of one cell/op: a candidate run against the baseline."""

    cell: str  # identity (cell id without its cNN- index)
    op: str
    metric: str
    run_id: str
    baseline_run_id: str
    baseline: float | None
    value: float | None
    ratio: float | None
    ci_low: float | None  # ratio CI; for error_rate the CI of the difference
    ci_high: float | None
    verdict: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Comparison:
    runs: list[Run]  # baseline (if any) first
    baseline: Run | None
    options: CompareOptions
    #: (cell identity, op) -> run id -> metric -> value (side-by-side table)
    values: dict[tuple[str, str], dict[str, dict[str, float | None]]] = field(default_factory=dict)
    rows: list[MetricRow] = field(default_factory=list)
    #: run id -> cell id -> evaluated thresholds
    thresholds: dict[str, dict[str, list[ThresholdResult]]] = field(default_factory=dict)
    #: cell identity -> run id -> flat keyspace metrics (hotspot figures; shown, never judged)
    keyspace: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: run id -> cell identity -> that run's cell id (``x#2`` for a configuration repeated in a run)
    identities: dict[str, dict[str, str]] = field(default_factory=dict)
    #: cell identity -> run id -> launch forecast (modelled): verdict, short text, throttled band
    forecast: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: (cell identity, run id, baseline verdict, verdict): a candidate's forecast got worse
    forecast_regressions: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: The workload's own exception classes a candidate raised and the baseline did not.
    new_exceptions: list[NewException] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[MetricRow]:
        return [r for r in self.rows if r.verdict == "worse"]

    @property
    def threshold_failures(self) -> list[tuple[str, str, ThresholdResult]]:
        return [(run_id, cell, r) for run_id, cells in self.thresholds.items()
                for cell, results in cells.items() for r in results if not r.passed]

    @property
    def exit_code(self) -> int:
        failed = self.regressions or self.threshold_failures or self.forecast_regressions or self.new_exceptions
        return 1 if failed else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "baseline": self.baseline.run_id if self.baseline else None,
            "runs": [{"run_id": r.run_id, "profile_name": r.profile_name, "status": r.status,
                      "started_at": r.started_at} for r in self.runs],
            "options": asdict(self.options),
            "values": [{"cell": cell, "op": op, "runs": per_run} for (cell, op), per_run in self.values.items()],
            "verdicts": [r.to_dict() for r in self.rows],
            "thresholds": {run_id: {cell: [r.to_dict() for r in results] for cell, results in cells.items()}
                           for run_id, cells in self.thresholds.items()},
            "keyspace": self.keyspace,
            "forecast": self.forecast,
            "forecast_regressions": [{"cell": c, "run_id": r, "baseline": b, "verdict": v}
                                     for c, r, b, v in self.forecast_regressions],
            "new_exceptions": [e.to_dict() for e in self.new_exceptions],
            "warnings": self.warnings,
            "regressions": len(self.regressions),
            "threshold_failures": len(self.threshold_failures),
            "passed": self.exit_code == 0,
        }


def _cells_by_identity(run: Run) -> dict[str, str]:
    out: dict[str, str] = {}
    for cell_id in run.cells:
        ident = cell_identity(cell_id)
        n = 2
        while ident in out:  # the same configuration twice in one run: keep both, in order
            ident = f"{cell_identity(cell_id)}#{n}"
            n += 1
        out[ident] = cell_id
    return out


def _summary_values(stats: dict[str, Any]) -> dict[str, float | None]:
    latency = stats.get("latency_ms") or {}
    out: dict[str, float | None] = {"ops_per_s": _num(stats.get("ops_per_s")),
                                    "error_rate": _num(stats.get("error_rate"))}
    for metric, (key, _) in LATENCY_METRICS.items():
        out[metric] = _num(latency.get(key))
    return out


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _flat_keyspace(keyspace: Any) -> dict[str, Any]:
    if not isinstance(keyspace, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in keyspace.items():
        if isinstance(value, bool):
            if key == "modelled":
                out[key] = value
        elif isinstance(value, int | float) and math.isfinite(value):
            out[key] = value
        elif isinstance(value, dict):
            for sub, inner in value.items():
                if isinstance(inner, int | float) and not isinstance(inner, bool) and math.isfinite(inner):
                    out[f"{key}.{sub}"] = inner
    return out


#: How bad a forecast verdict is: a candidate ranking above its baseline is a forecast regression.
_VERDICT_RANK = {"ok": 0, "at_risk": 1, "uncertain": 1, "hotspot": 2}


def _forecast_entry(forecast: dict[str, Any]) -> dict[str, Any]:
    from keyramp.forecast._text import forecast_short

    return {"verdict": forecast.get("verdict"), "short": forecast_short(forecast),
            "throttled_fraction": forecast.get("throttled_fraction"),
            "launch": (forecast.get("launch") or {}).get("description"), "modelled": True}


class _Replicates:
    """Bootstrap replicates per (run, cell, op), computed once and shared by every comparison."""

    def __init__(self, options: CompareOptions) -> None:
        self.options = options
        self._cache: dict[tuple[str, str, str, bool], tuple[np.ndarray, np.ndarray] | None] = {}
        self._percentiles = [p for _, p in LATENCY_METRICS.values()]

    def get(self, run: Run, cell: str, op: str, *, service: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        key = (run.run_id, cell, op, service)
        if key not in self._cache:
            intervals = read_intervals(run, cell, op, service=service)
            matrix = interval_matrix(intervals)
            if matrix.n < 3 or matrix.total == 0:
                self._cache[key] = None
            else:
                # A per-(cell, op) seed keeps results reproducible and independent of order.
                seed = [self.options.seed, *map(ord, f"{run.run_id}/{cell}/{op}")]
                rng = np.random.default_rng(seed)
                self._cache[key] = bootstrap_replicates(matrix, self._percentiles, n=self.options.bootstrap, rng=rng)
        return self._cache[key]


def _verdict(ratio: float | None, low: float | None, high: float | None, effect: float,
             higher_is_better: bool) -> tuple[str, str]:
    if ratio is None:
        return "n/a", "no value"
    if low is None or high is None:
        # No interval (no .hlog): demand twice the minimum effect before judging.
        effect *= 2
        up, down = ratio > 1 + effect, ratio < 1 / (1 + effect)
        note = "no CI (no interval histograms)"
    else:
        # The whole interval must clear the minimum effect, not merely exclude 1: with
        # short runs the interval is wide and a point estimate past 10 % is common in A/A.
        # Symmetric on the ratio's log scale: x1.5 worse mirrors x0.67 better.
        up, down = low > 1 + effect, high < 1 / (1 + effect)
        note = ""
    if higher_is_better:
        return ("better" if up else "worse" if down else "same"), note
    return ("worse" if up else "better" if down else "same"), note


def _late_fraction(stats: dict[str, Any]) -> float:
    count = stats.get("count") or 0
    late = stats.get("late") or 0
    return late / count if isinstance(count, int | float) and isinstance(late, int | float) and count > 0 else 0.0


def _machine_late(cell: dict[str, Any], stats: dict[str, Any], opts: CompareOptions) -> float:
    """Share of an op's operations that started late because the generator fell behind (the one
    rule of ``keyramp.results._generator``: CPU-bound load process, or users mostly idle);
    lateness with every user busy is the store's (it can be the regression itself)."""
    return generator_late(cell, stats, busy_limit=opts.busy_users_fraction)


def _late_budget(pct: float, opts: CompareOptions) -> float:
    """How much more machine lateness the slower-looking run may have before percentile ``pct``
    of it is queueing in the generator: 10 % for p50, 5 % for p95, 1 % for p99."""
    return min(opts.max_late_fraction, 1.0 - pct / 100.0)


def _behind_note(b_stats: dict[str, Any], c_stats: dict[str, Any], opts: CompareOptions) -> str:
    """A note when the load generator fell behind its schedule in either run.

    Latency is measured from the intended start, so when many operations start late the
    figures are dominated by queueing in an overloaded generator (measured here: 10-60 %
    late on a 2-core box at load 5 moved A/A p50 from 2.2 to 67 ms).
    """
    b, c = _late_fraction(b_stats), _late_fraction(c_stats)
    if max(b, c) <= opts.max_late_fraction:
        return ""
    return f"generator behind schedule: {b:.0%} late in baseline, {c:.0%} in candidate"


def _service_worse(reps: _Replicates, base: Run, base_cell: str, cand: Run, cand_cell: str, op: str,
                   b_stats: dict[str, Any], c_stats: dict[str, Any], j: int, effect: float,
                   opts: CompareOptions) -> tuple[float, float, float] | None:
    """(ratio, CI low, CI high) of service-time percentile ``j`` when that says ``worse``, else None."""
    key = list(LATENCY_METRICS.values())[j][0]
    b = _num((b_stats.get("service_ms") or {}).get(key))
    c = _num((c_stats.get("service_ms") or {}).get(key))
    b_reps, c_reps = reps.get(base, base_cell, op, service=True), reps.get(cand, cand_cell, op, service=True)
    if not b or c is None or b_reps is None or c_reps is None:
        return None
    low, high = ratio_ci(c_reps[0][:, j], b_reps[0][:, j], opts.confidence)
    verdict, _ = _verdict(c / b, low, high, effect, False)
    return (c / b, low, high) if verdict == "worse" and low is not None and high is not None else None


def _compare_cell_op(reps: _Replicates, base: Run, base_cell: str, cand: Run, cand_cell: str, op: str,
                     ident: str, opts: CompareOptions) -> tuple[list[MetricRow], str]:
    """The metric rows of one cell/op, and the "generator behind" note ("" if neither run fell behind).

    The note is returned on its own: rows that took another path (too few operations,
    inconclusive, judged on service time) do not carry it, yet the warning still applies.
    """
    b_stats = base.cells[base_cell]["operations"].get(op) or {}
    c_stats = cand.cells[cand_cell]["operations"].get(op) or {}
    b_vals, c_vals = _summary_values(b_stats), _summary_values(c_stats)
    b_reps, c_reps = reps.get(base, base_cell, op), reps.get(cand, cand_cell, op)
    rows = []

    def row(metric: str, ratio: float | None, low: float | None, high: float | None, verdict: str,
            note: str) -> MetricRow:
        return MetricRow(cell=ident, op=op, metric=metric, run_id=cand.run_id, baseline_run_id=base.run_id,
                         baseline=b_vals[metric], value=c_vals[metric], ratio=ratio, ci_low=low, ci_high=high,
                         verdict=verdict, note=note)

    def ratio_of(metric: str) -> float | None:
        b, c = b_vals[metric], c_vals[metric]
        return c / b if b and c is not None and b > 0 else None

    # throughput
    ratio = ratio_of("ops_per_s")
    low = high = None
    if b_reps is not None and c_reps is not None:
        low, high = ratio_ci(c_reps[1], b_reps[1], opts.confidence)
    verdict, note = _verdict(ratio, low, high, opts.min_effect_throughput, True)
    rows.append(row("ops_per_s", ratio, low, high, verdict, note))

    # latency percentiles
    counts = (int(b_stats.get("count") or 0), int(c_stats.get("count") or 0))
    behind = _behind_note(b_stats, c_stats, opts)
    b_machine = _machine_late(base.cells[base_cell], b_stats, opts)
    c_machine = _machine_late(cand.cells[cand_cell], c_stats, opts)
    for j, (metric, (_, pct)) in enumerate(LATENCY_METRICS.items()):
        ratio = ratio_of(metric)
        if min(counts) * (1 - pct / 100.0) < opts.min_tail:
            rows.append(row(metric, ratio, None, None, "n/a", f"too few operations for {metric[:-3]}"))
            continue
        low = high = None
        if b_reps is not None and c_reps is not None:
            low, high = ratio_ci(c_reps[0][:, j], b_reps[0][:, j], opts.confidence)
        effect = opts.min_effect_tail if metric in TAIL_METRICS else opts.min_effect_latency
        verdict, note = _verdict(ratio, low, high, effect, False)
        # The run that looks slower lost more of its schedule to a starved generator than
        # the other: the difference is the machine's, not the store's. Only that direction
        # is suspect: a run that looks slower *despite* being the calmer one stands.
        slower, other = (c_machine, b_machine) if verdict == "worse" else (b_machine, c_machine)
        if (opts.inconclusive_when_behind and verdict in ("worse", "better")
                and slower - other > _late_budget(pct, opts)):
            rows.append(row(metric, ratio, low, high, "n/a",
                            f"inconclusive: {verdict} but that run's generator was starved ({slower:.0%} of "
                            f"operations late while users were idle, vs {other:.0%}): the machine was measured"))
            continue
        if (opts.inconclusive_when_behind and verdict != "worse"
                and b_machine - c_machine > _late_budget(pct, opts)):
            # The *baseline* lost its schedule to the machine: its stalled seconds widen the
            # interval until a real regression hides in it (measured: x2.2 p50 judged "same").
            # Service time (from the actual start) leaves that queueing out; it is judged
            # only for "worse", where the calmer candidate cannot owe it to the machine.
            service = _service_worse(reps, base, base_cell, cand, cand_cell, op, b_stats, c_stats, j, effect,
                                     opts)
            if service is not None:
                s_ratio, s_low, s_high = service
                rows.append(row(metric, s_ratio, s_low, s_high, "worse",
                                f"judged on service time: the baseline's generator was starved ({b_machine:.0%} "
                                f"late while users were idle, vs {c_machine:.0%})"))
                continue
        rows.append(row(metric, ratio, low, high, verdict, "; ".join(n for n in (note, behind) if n)))

    # error rate: two-proportion test on counts
    b_n, c_n = counts
    b_x, c_x = int(b_stats.get("errors") or 0), int(c_stats.get("errors") or 0)
    if b_n == 0 or c_n == 0:
        rows.append(row("error_rate", None, None, None, "n/a", "no operations"))
    else:
        _z, p_value, low, high = two_proportion(b_x, b_n, c_x, c_n)
        diff = c_x / c_n - b_x / b_n
        significant = p_value < opts.alpha and abs(diff) > opts.min_error_diff
        verdict = "same" if not significant else ("worse" if diff > 0 else "better")
        ratio = (c_x / c_n) / (b_x / b_n) if b_x else None
        rows.append(row("error_rate", ratio, _num(low), _num(high), verdict, f"p={p_value:.3g}"))
    return rows, behind


def run_operations(run: Run) -> list[str]:
    """The operations a run's profile ran (a Python workload's are its method names)."""
    return list((((run.manifest or {}).get("profile") or {}).get("workload") or {}).get("ops") or {})


def build_comparison(runs: Sequence[Run], *, baseline: Run | None, thresholds: Sequence[Threshold] = (),
                     options: CompareOptions | None = None) -> Comparison:
    """Compare every run in ``runs`` with ``baseline`` (all must be ``ok``).

    Without a baseline only the side-by-side values and thresholds are produced.
    Thresholds (the runs' own profile ``[thresholds]`` plus ``thresholds``) are evaluated
    on every run except the baseline.
    """
    opts = options or CompareOptions()
    ordered = ([baseline] if baseline else []) + [r for r in runs if baseline is None or r.run_id != baseline.run_id]
    cmp = Comparison(runs=ordered, baseline=baseline, options=opts)
    reps = _Replicates(opts)
    cmp.identities = {run.run_id: _cells_by_identity(run) for run in ordered}
    identities = cmp.identities

    for run in ordered:
        for ident, cell_id in identities[run.run_id].items():
            cell = run.cells[cell_id]
            for op, stats in (cell.get("operations") or {}).items():
                if isinstance(stats, dict):
                    cmp.values.setdefault((ident, op), {})[run.run_id] = _summary_values(stats)
            flat = _flat_keyspace(cell.get("keyspace"))
            if flat:
                cmp.keyspace.setdefault(ident, {})[run.run_id] = flat
            if isinstance(cell.get("forecast"), dict):
                cmp.forecast.setdefault(ident, {})[run.run_id] = _forecast_entry(cell["forecast"])

    if baseline is not None:
        base_cells = identities[baseline.run_id]
        for cand in ordered[1:]:
            cand_cells = identities[cand.run_id]
            for ident in sorted(set(base_cells) ^ set(cand_cells)):
                where = baseline.run_id if ident in base_cells else cand.run_id
                cmp.warnings.append(f"cell {ident} only in {where}: not compared")
            for ident, base_cell in base_cells.items():
                if ident not in cand_cells:
                    continue
                cand_cell = cand_cells[ident]
                b_ops = baseline.cells[base_cell]["operations"]
                c_ops = cand.cells[cand_cell]["operations"]
                for op in b_ops:
                    if op in c_ops:
                        rows, behind = _compare_cell_op(reps, baseline, base_cell, cand, cand_cell, op, ident,
                                                        opts)
                        cmp.rows.extend(rows)
                        if behind:
                            cmp.warnings.append(f"{ident}/{op} {cand.run_id}: {behind}; "
                                                "latency verdicts may reflect machine load")
                        unsure = [r.metric for r in rows if r.note.startswith("inconclusive")]
                        if unsure:
                            cmp.warnings.append(f"{ident}/{op} {cand.run_id}: {', '.join(unsure)} inconclusive "
                                                "(load generator starved by the machine): rerun on a quieter machine")

    if baseline is not None:
        cmp.new_exceptions = new_exceptions(baseline, ordered[1:], identities)
        for ident, per_run in cmp.forecast.items():
            base = per_run.get(baseline.run_id, {}).get("verdict")
            for run in ordered[1:]:
                now = per_run.get(run.run_id, {}).get("verdict")
                if base in _VERDICT_RANK and now in _VERDICT_RANK and _VERDICT_RANK[now] > _VERDICT_RANK[base]:
                    cmp.forecast_regressions.append((ident, run.run_id, base, now))

    for run in ordered:
        if baseline is not None and run.run_id == baseline.run_id:
            continue
        own: list[Threshold] = []
        profile = (run.manifest or {}).get("profile") or {}
        table = profile.get("thresholds")
        if table:
            try:  # a Python workload's thresholds name its methods
                own = parse_table(table, operations={*OP_NAMES, *run_operations(run)})
            except Exception as exc:  # noqa: BLE001 - a stored profile is data, not input: warn
                cmp.warnings.append(f"{run.run_id}: ignoring the profile's [thresholds]: {exc}")
        # as the run itself judged it: a Python workload's own exceptions fail unless allowed
        own = with_workload_errors(own, python_workload=bool((profile.get("workload") or {}).get("user")))
        checks = [*own, *thresholds]
        if checks:
            cmp.thresholds[run.run_id] = {cell_id: evaluate(checks, cell) for cell_id, cell in run.cells.items()}
    return cmp
