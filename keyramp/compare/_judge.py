"""Verdicts for one cell and operation: a candidate run against a baseline (one run or a set).

Verdict design (CI noise on shared machines is large, so A/A must rarely flag):

* latency percentiles (lower is better): ``worse`` only when the whole bootstrap
  confidence interval of candidate/baseline lies above ``1 + min_effect`` (25 % for
  p50, 50 % for p95 and above), i.e. we are confident the change is at least the
  minimum effect; ``better`` below ``1 / (1 + min_effect)``. The interval resamples
  1 s interval histograms, so it reflects within-run noise; the minimum effect absorbs
  the between-run noise that one baseline run cannot show. A baseline that is a set of
  runs measures that noise, and each interval is widened by it (``_noise``).
* the machine, not the store (the rules of ``keyramp.results._generator``, which also set a
  run's ``generator_limited``): a latency verdict is n/a ("inconclusive") when the run that
  looks slower was machine-limited (the emulator shared a saturated load machine) or its load
  process CPU-bound, or lost more of its schedule to a starved generator than the other (late
  starts); a starved *baseline* is judged on service time for ``worse``.
* throughput (ops/s, higher is better): ``min_effect_throughput`` (5 %); when either run's
  load process was CPU-bound or its machine saturated, the machine set the throughput (in a
  closed model it is whatever the machine gives): a difference is n/a unless the store's own
  service time moved with it (Little's law: users ÷ service time predicts the change).
* error rate: two-proportion z-test at ``alpha`` (default 0.01) plus a minimum
  absolute change (default 0.1 percentage points).
* too few samples for a percentile (fewer than ``min_tail`` operations above it) or a
  missing metric: ``n/a``, never a failure.

Measured A/A and A/B rates: docs/ci.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from keyramp.compare._noise import between_run_spread, widen
from keyramp.compare._options import CompareOptions
from keyramp.compare._stats import (
    bootstrap_replicates,
    interval_matrix,
    percentiles_from_counts,
    ratio_ci,
    two_proportion,
)
from keyramp.compare._verdict import Pooled, behind_note, late_budget, median, ratio_verdict
from keyramp.results import (
    CellSummary,
    Latency,
    OpStats,
    Run,
    RunSummary,
    generator_late,
    littles_rate,
    num,
    read_intervals,
    starved_reason,
)

__all__ = [
    "LATENCY_METRICS",
    "METRICS",
    "TAIL_METRICS",
    "CompareOptions",
    "MetricRow",
    "Replicates",
    "Side",
    "judge",
    "summary_values",
]

#: metric name -> percentile (the summary's latency_ms keys)
LATENCY_METRICS: dict[str, tuple[str, float]] = {
    "p50_ms": ("p50", 50.0), "p95_ms": ("p95", 95.0), "p99_ms": ("p99", 99.0), "p999_ms": ("p999", 99.9),
}
METRICS: tuple[str, ...] = ("ops_per_s", *LATENCY_METRICS, "error_rate")
#: percentiles judged with ``min_effect_tail`` instead of ``min_effect_latency``
TAIL_METRICS = frozenset({"p95_ms", "p99_ms", "p999_ms"})
_FLAGS = ("worse", "better")


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
    #: runs in the baseline (a set measures the between-run noise)
    baseline_runs: int = 1
    #: the set's standard deviation of log values (the between-run spread); None: one run
    spread: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Side:
    """One side of a comparison: (run, that run's cell id) per run — one for a candidate, one
    or more for a baseline (a set of runs of one build)."""

    members: tuple[tuple[Run, str], ...]

    @property
    def run(self) -> Run:
        return self.members[0][0]

    @property
    def key(self) -> str:
        return "+".join(f"{run.run_id}/{cell}" for run, cell in self.members)

    def cells(self) -> list[CellSummary]:
        return [typed(run).cells[cell] for run, cell in self.members]

    def stats(self, op: str) -> list[OpStats]:
        return [typed(run).cells[cell].operations[op] for run, cell in self.members]

    def pooled(self, op: str) -> Pooled:
        """Counts of the op over every run of the side."""
        stats = self.stats(op)
        return Pooled(count=sum(int(s.count or 0) for s in stats), late=sum(int(s.late or 0) for s in stats),
                      errors=sum(int(s.errors or 0) for s in stats))

    def first_reason(self, reason: Callable[[CellSummary], str | None]) -> str | None:
        return next((r for cell in self.cells() if (r := reason(cell))), None)


def typed(run: Run) -> RunSummary:
    """A compared run's summary through the results model (compare takes usable runs only)."""
    summary = run.summary
    if summary is None:
        raise ValueError(f"{run.run_id}: {run.summary_error or 'no summary'}")
    return summary


def _pct(latency: Latency | None, key: str) -> float | None:
    """A percentile (``p50`` … ``max``, a ``Latency`` field) of a latency block that may be absent."""
    return num(getattr(latency, key)) if latency is not None else None


def summary_values(stats: OpStats) -> dict[str, float | None]:
    out: dict[str, float | None] = {"ops_per_s": num(stats.ops_per_s), "error_rate": num(stats.error_rate)}
    for metric, (key, _) in LATENCY_METRICS.items():
        out[metric] = _pct(stats.latency_ms, key)
    return out


@dataclass(frozen=True)
class _Boot:
    pct: np.ndarray  # (n, P) replicate percentiles, µs
    rate: np.ndarray  # (n,) replicate ops/s
    point_ms: np.ndarray  # (P,) percentiles of all the side's intervals merged, ms
    point_rate: float  # their ops/s


class Replicates:
    """Bootstrap replicates per (side, op), computed once and shared by every comparison."""

    def __init__(self, options: CompareOptions) -> None:
        self.options = options
        self._cache: dict[tuple[str, str, bool], _Boot | None] = {}
        self._percentiles = [p for _, p in LATENCY_METRICS.values()]

    def get(self, side: Side, op: str, *, service: bool = False) -> _Boot | None:
        key = (side.key, op, service)
        if key not in self._cache:
            # A set's intervals are resampled together: the within-run noise of its pooled value.
            intervals = [h for run, cell in side.members for h in read_intervals(run, cell, op, service=service)]
            matrix = interval_matrix(intervals)
            if matrix.n < 3 or matrix.total == 0:
                self._cache[key] = None
            else:
                # A per-(cell, op) seed keeps results reproducible and independent of order.
                rng = np.random.default_rng([self.options.seed, *map(ord, f"{side.key}/{op}")])
                pct, rate = bootstrap_replicates(matrix, self._percentiles, n=self.options.bootstrap, rng=rng)
                point = percentiles_from_counts(matrix.values_us, matrix.counts.sum(axis=0), self._percentiles)[0]
                self._cache[key] = _Boot(pct, rate, point / 1000.0, matrix.total / float(matrix.lengths_s.sum()))
        return self._cache[key]

    def values(self, side: Side, op: str) -> dict[str, float | None]:
        """The side's metric values: a run's summary, or a set's pooled intervals and counts."""
        if len(side.members) == 1:
            return summary_values(side.stats(op)[0])
        boot = self.get(side, op)
        each = [summary_values(s) for s in side.stats(op)]
        out = {m: median([v[m] for v in each]) for m in METRICS}
        if boot is not None:
            out["ops_per_s"] = boot.point_rate
            out.update({m: float(boot.point_ms[j]) for j, m in enumerate(LATENCY_METRICS)})
        pooled = side.pooled(op)
        out["error_rate"] = pooled.errors / pooled.count if pooled.count else None
        return out


def _machine_late(side: Side, op: str, opts: CompareOptions) -> float:
    """Share of a side's operations that started late because the generator fell behind (the one
    rule of ``keyramp.results._generator``: CPU-bound load process, saturated machine, or users
    mostly idle); lateness with every user busy is the store's (it can be the regression itself)."""
    pairs = [(generator_late(cell, stats, busy_limit=opts.busy_users_fraction), int(stats.count or 0))
             for cell, stats in zip(side.cells(), side.stats(op), strict=True)]
    total = sum(n for _, n in pairs)
    return sum(late * n for late, n in pairs) / total if total else 0.0


def _latency_suspect(cell: CellSummary) -> str | None:
    return starved_reason(cell, latency=True)


class _Judge:
    """The rows of one (cell, op): shared figures computed once, one method per kind of metric."""

    def __init__(self, reps: Replicates, base: Side, cand: Side, op: str, ident: str) -> None:
        self.reps, self.base, self.cand, self.op, self.ident = reps, base, cand, op, ident
        self.opts = opts = reps.options
        self.b_vals, self.c_vals = reps.values(base, op), reps.values(cand, op)
        self.b_boot, self.c_boot = reps.get(base, op), reps.get(cand, op)
        self.k = len(base.members)
        each = [summary_values(s) for s in base.stats(op)] if self.k > 1 else []
        # The between-run spread of each ratio metric over a baseline set (error rates are counts: pooled).
        self.spread = {m: between_run_spread([v[m] for v in each], opts.confidence)
                       for m in ("ops_per_s", *LATENCY_METRICS)} if each else {}

    def row(self, metric: str, ratio: float | None, low: float | None, high: float | None, verdict: str,
            note: str) -> MetricRow:
        spread = self.spread.get(metric)
        return MetricRow(cell=self.ident, op=self.op, metric=metric, run_id=self.cand.run.run_id,
                         baseline_run_id=self.base.run.run_id, baseline=self.b_vals[metric],
                         value=self.c_vals[metric], ratio=ratio, ci_low=low, ci_high=high, verdict=verdict,
                         note=note, baseline_runs=self.k, spread=round(spread[0], 4) if spread else None)

    def ratio_of(self, metric: str) -> float | None:
        b, c = self.b_vals[metric], self.c_vals[metric]
        return c / b if b and c is not None and b > 0 else None

    def interval(self, metric: str, ratio: float | None, low: float | None,
                 high: float | None) -> tuple[float | None, float | None]:
        """The bootstrap interval, widened by the baseline set's between-run spread."""
        spread = self.spread.get(metric)
        if spread is None or ratio is None or ratio <= 0:
            return low, high
        return widen(ratio, low, high, spread[1])

    def throughput(self) -> MetricRow:
        ratio = self.ratio_of("ops_per_s")
        low = high = None
        if self.b_boot is not None and self.c_boot is not None:
            low, high = ratio_ci(self.c_boot.rate, self.b_boot.rate, self.opts.confidence)
        low, high = self.interval("ops_per_s", ratio, low, high)
        verdict, note = ratio_verdict(ratio, low, high, self.opts.min_effect_throughput, True)
        starved = [f"the {name}'s {reason}" for name, side in (("baseline", self.base), ("candidate", self.cand))
                   if (reason := side.first_reason(starved_reason))]
        if verdict in _FLAGS and starved and self.opts.inconclusive_when_behind:
            moved, detail = self._service_moved(worse=verdict == "worse")
            if moved:
                note = f"the store's service time moved with it ({detail})"
            else:
                verdict, note = "n/a", (f"inconclusive: {verdict} but {' and '.join(starved)}, and the store's "
                                        f"service time did not move with it ({detail}): the machine set the "
                                        "throughput")
        elif verdict == "same" and self.opts.inconclusive_when_behind and (
                base := self.base.first_reason(starved_reason)):
            # The machine set the baseline's rate: a drop of the store's can hide in what it gave it (a
            # starved candidate that kept the baseline's rate kept it despite the machine: that stands).
            verdict, note = "n/a", (f"inconclusive: same but the baseline's {base}: the machine set its "
                                    "throughput, and a drop of the store's could hide in it")
        return self.row("ops_per_s", ratio, low, high, verdict, note)

    def _service_moved(self, *, worse: bool) -> tuple[bool, str]:
        """Whether the store's service time explains a throughput change: its p50 verdict agrees
        (and is not itself the machine's), and Little's law (users ÷ mean service time) predicts
        a change past the minimum effect in the same direction."""
        opts = self.opts
        b_rate = _geomean([littles_rate(c) for c in self.base.cells()])
        c_rate = _geomean([littles_rate(c) for c in self.cand.cells()])
        predicted = c_rate / b_rate if b_rate and c_rate else None
        b_svc = _geomean([_pct(s.service_ms, "p50") for s in self.base.stats(self.op)])
        c_svc = _geomean([_pct(s.service_ms, "p50") for s in self.cand.stats(self.op)])
        if not b_svc or not c_svc or predicted is None:
            return False, "service times not recorded"
        ratio = c_svc / b_svc
        b_reps = self.reps.get(self.base, self.op, service=True)
        c_reps = self.reps.get(self.cand, self.op, service=True)
        low = high = None
        if b_reps is not None and c_reps is not None:
            low, high = ratio_ci(c_reps.pct[:, 0], b_reps.pct[:, 0], opts.confidence)
        spread = between_run_spread([_pct(s.service_ms, "p50") for s in self.base.stats(self.op)],
                                    opts.confidence) if self.k > 1 else None
        if spread is not None:
            low, high = widen(ratio, low, high, spread[1])
        verdict, _ = ratio_verdict(ratio, low, high, opts.min_effect_latency, False)
        slower = self.cand if ratio > 1 else self.base
        effect = opts.min_effect_throughput
        agrees = verdict == ("worse" if worse else "better") and not slower.first_reason(_latency_suspect) and (
            predicted < 1 / (1 + effect) if worse else predicted > 1 + effect)
        interval = f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else ""
        return agrees, (f"service p50 ×{ratio:.2f}{interval} {verdict}; Little's law (users ÷ mean service time) "
                        f"predicts ×{predicted:.2f}")

    def latency(self) -> tuple[list[MetricRow], str]:
        opts, rows = self.opts, []
        b_pool, c_pool = self.base.pooled(self.op), self.cand.pooled(self.op)
        behind = behind_note(b_pool, c_pool, opts)
        b_machine, c_machine = _machine_late(self.base, self.op, opts), _machine_late(self.cand, self.op, opts)
        b_suspect, c_suspect = self.base.first_reason(_latency_suspect), self.cand.first_reason(_latency_suspect)
        for j, (metric, (_, pct)) in enumerate(LATENCY_METRICS.items()):
            ratio = self.ratio_of(metric)
            if min(b_pool.count, c_pool.count) * (1 - pct / 100.0) < opts.min_tail:
                rows.append(self.row(metric, ratio, None, None, "n/a", f"too few operations for {metric[:-3]}"))
                continue
            low = high = None
            if self.b_boot is not None and self.c_boot is not None:
                low, high = ratio_ci(self.c_boot.pct[:, j], self.b_boot.pct[:, j], opts.confidence)
            low, high = self.interval(metric, ratio, low, high)
            effect = opts.min_effect_tail if metric in TAIL_METRICS else opts.min_effect_latency
            verdict, note = ratio_verdict(ratio, low, high, effect, False)
            # Only the direction the machine explains is suspect: a run that looks slower
            # *despite* being the calmer one stands. ``same`` is suspect when the baseline was the
            # machine's: a regression of the candidate's can hide in the baseline's inflated figure.
            suspect, who = (c_suspect, "candidate") if verdict == "worse" else (b_suspect, "baseline")
            if opts.inconclusive_when_behind and suspect:
                why = ("a regression could hide in the machine's share of the baseline" if verdict == "same"
                       else "the machine was measured")
                rows.append(self.row(metric, ratio, low, high, "n/a",
                                     f"inconclusive: {verdict} but the {who}'s {suspect}: {why}"))
                continue
            slower, other = (c_machine, b_machine) if verdict == "worse" else (b_machine, c_machine)
            who = "candidate" if verdict == "worse" else "baseline"
            if opts.inconclusive_when_behind and verdict in _FLAGS and slower - other > late_budget(pct, opts):
                rows.append(self.row(metric, ratio, low, high, "n/a",
                                     f"inconclusive: {verdict} but the {who}'s generator was starved ({slower:.0%} "
                                     f"of operations late while users were idle, vs {other:.0%}): the machine was "
                                     "measured"))
                continue
            if (opts.inconclusive_when_behind and verdict != "worse" and not c_suspect
                    and b_machine - c_machine > late_budget(pct, opts)):
                # The *baseline* lost its schedule to the machine: its stalled seconds widen the
                # interval until a real regression hides in it (measured: x2.2 p50 judged "same").
                # Service time (from the actual start) leaves that queueing out; it is judged
                # only for "worse", where the calmer candidate cannot owe it to the machine.
                service = self._service_worse(j, effect)
                if service is not None:
                    rows.append(self.row(metric, *service, "worse",
                                         f"judged on service time: the baseline's generator was starved "
                                         f"({b_machine:.0%} late while users were idle, vs {c_machine:.0%})"))
                    continue
                if verdict == "same":  # its stalled seconds widened the interval: a regression can hide in it
                    rows.append(self.row(metric, ratio, low, high, "n/a",
                                         f"inconclusive: same but the baseline's generator was starved "
                                         f"({b_machine:.0%} of operations late while users were idle, vs "
                                         f"{c_machine:.0%}): a regression could hide in its stalled seconds"))
                    continue
            rows.append(self.row(metric, ratio, low, high, verdict, "; ".join(n for n in (note, behind) if n)))
        return rows, behind

    def _service_worse(self, j: int, effect: float) -> tuple[float, float, float] | None:
        """(ratio, CI low, CI high) of service-time percentile ``j`` when that says ``worse``, else None."""
        key = list(LATENCY_METRICS.values())[j][0]
        b = _geomean([_pct(s.service_ms, key) for s in self.base.stats(self.op)])
        c = _pct(self.cand.stats(self.op)[0].service_ms, key)
        b_reps = self.reps.get(self.base, self.op, service=True)
        c_reps = self.reps.get(self.cand, self.op, service=True)
        if not b or c is None or b_reps is None or c_reps is None:
            return None
        low, high = ratio_ci(c_reps.pct[:, j], b_reps.pct[:, j], self.opts.confidence)
        verdict, _ = ratio_verdict(c / b, low, high, effect, False)
        return (c / b, low, high) if verdict == "worse" and low is not None and high is not None else None

    def error_rate(self) -> MetricRow:
        """Two-proportion test on the counts (a set's pooled)."""
        b, c = self.base.pooled(self.op), self.cand.pooled(self.op)
        if b.count == 0 or c.count == 0:
            return self.row("error_rate", None, None, None, "n/a", "no operations")
        _z, p_value, low, high = two_proportion(b.errors, b.count, c.errors, c.count)
        diff = c.errors / c.count - b.errors / b.count
        significant = p_value < self.opts.alpha and abs(diff) > self.opts.min_error_diff
        verdict = "same" if not significant else ("worse" if diff > 0 else "better")
        ratio = (c.errors / c.count) / (b.errors / b.count) if b.errors else None
        return self.row("error_rate", ratio, num(low), num(high), verdict, f"p={p_value:.3g}")


def _geomean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals and len(vals) == len(values) else None


def judge(reps: Replicates, base: Side, cand: Side, op: str, ident: str) -> tuple[list[MetricRow], str]:
    """Every metric's verdict for ``op`` of one cell, and a note when a generator fell behind."""
    j = _Judge(reps, base, cand, op, ident)
    latency, behind = j.latency()
    return [j.throughput(), *latency, j.error_rate()], behind
