"""Build a comparison of runs: side-by-side values, verdicts vs a baseline, thresholds.

The verdict rules (per cell and operation) are ``keyramp.compare._judge``; the between-run
noise a baseline set measures is ``keyramp.compare._noise``. A baseline is one run or a set of
runs of one build (``keyramp baseline set NAME RUN RUN…``, ``compare --last N``): a set's
values are its runs pooled, and every interval is widened by the set's between-run spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from keyramp.compare._exceptions import NewException, new_exceptions
from keyramp.compare._judge import (
    LATENCY_METRICS,
    METRICS,
    TAIL_METRICS,
    CompareOptions,
    MetricRow,
    Replicates,
    Side,
    judge,
    summary_values,
    typed,
)
from keyramp.compare._options import INCONCLUSIVE_POLICIES
from keyramp.compare._verdict import late_fraction
from keyramp.compare._warnings import CompareWarning, group_warnings
from keyramp.core import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, OP_NAMES, fmt
from keyramp.forecast import VERDICT_RANK, forecast_short
from keyramp.profile import Settings, Threshold, parse_table, with_workload_errors
from keyramp.results import CellForecast, KeyspaceFigures, Run, ThresholdRow, cell_identity, evaluate

__all__ = [
    "LATENCY_METRICS",
    "METRICS",
    "TAIL_METRICS",
    "CompareOptions",
    "Comparison",
    "MetricRow",
    "build_comparison",
    "run_operations",
]


@dataclass
class Comparison:
    runs: list[Run]  # baseline (if any) first
    baseline: Run | None  # a set's first run stands for it in the tables
    options: CompareOptions
    #: every run of the baseline (a set: several runs of one build), ``baseline`` first
    baseline_runs: list[Run] = field(default_factory=list)
    #: (cell identity, op) -> run id -> metric -> value (side-by-side table)
    values: dict[tuple[str, str], dict[str, dict[str, float | None]]] = field(default_factory=dict)
    rows: list[MetricRow] = field(default_factory=list)
    #: run id -> cell id -> evaluated thresholds
    thresholds: dict[str, dict[str, list[ThresholdRow]]] = field(default_factory=dict)
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
    #: What the reader must know, each naming the run it is about (``warnings``: as lines).
    alerts: list[CompareWarning] = field(default_factory=list)
    #: ``--inconclusive``: one of INCONCLUSIVE_POLICIES.
    on_inconclusive: str = "3"

    @property
    def warnings(self) -> list[str]:
        return [w.line() for w in self.alerts]

    @property
    def noise(self) -> str:
        """How the between-run noise was accounted for (one line; empty without a baseline)."""
        k, o = len(self.baseline_runs), self.options
        if k == 0:
            return ""
        if k == 1:
            return (f"between-run noise unknown (one baseline run): verdicts rely on the minimum effects "
                    f"(p50 +{o.min_effect_latency:.0%}, p95+ +{o.min_effect_tail:.0%}, throughput "
                    f"±{o.min_effect_throughput:.0%}); a baseline of several runs measures it "
                    "(keyramp baseline set NAME RUN RUN RUN, or compare --last N)")
        return (f"between-run noise measured from {k} baseline runs: every interval is widened by their spread "
                f"(Student's t, {k - 1} degree{'s' if k > 2 else ''} of freedom); the minimum effects still apply")

    @property
    def regressions(self) -> list[MetricRow]:
        return [r for r in self.rows if r.verdict == "worse"]

    @property
    def threshold_failures(self) -> list[tuple[str, str, ThresholdRow]]:
        """Thresholds that failed; an inconclusive one (the machine was measured) is not among them:
        it counts in ``inconclusive`` (exit 3; ``--inconclusive fail`` fails it)."""
        return [(run_id, cell, r) for run_id, cells in self.thresholds.items()
                for cell, results in cells.items() for r in results
                if not r.passed and r.verdict != "inconclusive"]

    @property
    def inconclusive_rows(self) -> list[MetricRow]:
        """Verdicts the machine made n/a: the store's figure could not be judged on this machine."""
        return [r for r in self.rows if r.verdict == "n/a" and r.note.startswith("inconclusive")]

    @property
    def inconclusive_thresholds(self) -> list[tuple[str, str, ThresholdRow]]:
        return [(run_id, cell, r) for run_id, cells in self.thresholds.items()
                for cell, results in cells.items() for r in results if r.verdict == "inconclusive"]

    @property
    def inconclusive(self) -> int:
        """Gated metrics (verdicts and thresholds) that could not be judged."""
        return len(self.inconclusive_rows) + len(self.inconclusive_thresholds)

    @property
    def failed(self) -> bool:
        return bool(self.regressions or self.threshold_failures or self.forecast_regressions or self.new_exceptions)

    @property
    def verdict(self) -> str:
        """``pass``, ``fail`` or ``inconclusive`` (a failure wins; ``--inconclusive`` decides the rest)."""
        if self.failed or (self.inconclusive and self.on_inconclusive == "fail"):
            return "fail"
        return "inconclusive" if self.inconclusive and self.on_inconclusive == "3" else "pass"

    @property
    def exit_code(self) -> int:
        return {"fail": EXIT_FAILED, "inconclusive": EXIT_INCONCLUSIVE}.get(self.verdict, EXIT_OK)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "baseline": self.baseline.run_id if self.baseline else None,
            "baseline_runs": [r.run_id for r in self.baseline_runs],
            "between_run_noise": self.noise,
            "runs": [{"run_id": r.run_id, "profile_name": r.profile_name, "status": r.status,
                      "started_at": r.started_at} for r in self.runs],
            "options": asdict(self.options),
            "values": [{"cell": cell, "op": op, "runs": per_run} for (cell, op), per_run in self.values.items()],
            "verdicts": [r.to_dict() for r in self.rows],
            "thresholds": {run_id: {cell: [r.to_json() for r in results] for cell, results in cells.items()}
                           for run_id, cells in self.thresholds.items()},
            "keyspace": self.keyspace,
            "forecast": self.forecast,
            "forecast_regressions": [{"cell": c, "run_id": r, "baseline": b, "verdict": v}
                                     for c, r, b, v in self.forecast_regressions],
            "new_exceptions": [e.to_dict() for e in self.new_exceptions],
            "warnings": self.warnings,
            "warning_groups": [g.to_dict() for g in group_warnings(self.alerts)],
            "regressions": len(self.regressions),
            "threshold_failures": len(self.threshold_failures),
            "inconclusive": self.inconclusive,
            "on_inconclusive": self.on_inconclusive,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "passed": self.exit_code == 0,
        }


def _cells_by_identity(run: Run) -> dict[str, str]:
    out: dict[str, str] = {}
    for cell_id in typed(run).cells:
        ident = cell_identity(cell_id)
        n = 2
        while ident in out:  # the same configuration twice in one run: keep both, in order
            ident = f"{cell_identity(cell_id)}#{n}"
            n += 1
        out[ident] = cell_id
    return out


def _flat_keyspace(keyspace: KeyspaceFigures | None) -> dict[str, Any]:
    """The figures as compare's JSON shows them: numbers only, ``model.`` / ``tablet_capacity_ops_per_s.``
    prefixes for the parts' numbers."""
    if keyspace is None:
        return {}
    out: dict[str, Any] = {}
    for key, value in keyspace.to_json().items():
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


def _forecast_entry(forecast: CellForecast) -> dict[str, Any]:
    band, launch = forecast.throttled_fraction, forecast.launch
    return {"verdict": forecast.verdict, "short": forecast_short(forecast),
            "throttled_fraction": None if band is None else band.to_json(),
            "launch": None if launch is None else launch.description, "modelled": True}


def run_operations(run: Run) -> list[str]:
    """The operations a run's profile ran (a Python workload's are its method names)."""
    settings = _settings(run)
    return list(settings.workload.ops) if settings is not None else []


def _settings(run: Run) -> Settings | None:
    """The run's profile read back, typed (None: a run without one that reads)."""
    return run.manifest.settings if run.manifest is not None else None


def _judge_run(cmp: Comparison, reps: Replicates, cand: Run) -> None:
    """Verdict rows of one candidate against the baseline, cell by cell and operation by operation."""
    assert cmp.baseline is not None
    base_cells, cand_cells = cmp.identities[cmp.baseline.run_id], cmp.identities[cand.run_id]
    for ident in sorted(set(base_cells) ^ set(cand_cells)):
        base_only = ident in base_cells
        cmp.alerts.append(CompareWarning(kind="unmatched", text="only in this run: not compared", where=ident,
                                         run_id=cmp.baseline.run_id if base_only else cand.run_id,
                                         role="baseline" if base_only else "candidate"))
    base_sides: dict[tuple[tuple[str, str], ...], Side] = {}
    for ident in base_cells:
        if ident not in cand_cells:
            continue
        cand_side = Side(((cand, cand_cells[ident]),))
        for op in typed(cmp.baseline).cells[base_cells[ident]].operations:
            if op not in typed(cand).cells[cand_cells[ident]].operations:
                continue
            # A set's runs that ran this cell and operation (a run of an older profile may lack it).
            members = tuple((run, cmp.identities[run.run_id][ident]) for run in cmp.baseline_runs
                            if ident in cmp.identities[run.run_id]
                            and op in typed(run).cells[cmp.identities[run.run_id][ident]].operations)
            # one side per set of cells, so what it derives from them is derived once for all its ops
            base_side = base_sides.setdefault(tuple((r.run_id, c) for r, c in members), Side(members))
            rows, _ = judge(reps, base_side, cand_side, op, ident)
            cmp.rows.extend(rows)
            if len(base_side.members) > 1:  # the baseline column shows the set, pooled
                cmp.values[(ident, op)][cmp.baseline.run_id] = reps.values(base_side, op)
            _warn_behind(cmp, base_side, cand_side, op, f"{ident}/{op}")
            _warn_inconclusive(cmp, rows, cand, f"{ident}/{op}")


def _warn_behind(cmp: Comparison, base: Side, cand: Side, op: str, where: str) -> None:
    """One warning per run whose generator fell behind its schedule (late starts), naming that run."""
    assert cmp.baseline is not None
    for role, side, run_id in (("baseline", base, cmp.baseline.run_id), ("candidate", cand, cand.run.run_id)):
        late = late_fraction(side.pooled(op))
        if late > cmp.options.max_late_fraction:
            cmp.alerts.append(CompareWarning(
                kind="behind", run_id=run_id, role=role, where=where,
                text=f"generator behind schedule ({fmt.percent(late)} of operations started late): latency "
                     "verdicts may reflect machine load"))


def _warn_inconclusive(cmp: Comparison, rows: Sequence[MetricRow], cand: Run, where: str) -> None:
    """The inconclusive verdicts of one cell and op, one warning per reason, naming the run the
    reason is about (a starved baseline makes a candidate's verdict inconclusive too)."""
    assert cmp.baseline is not None
    unsure: dict[str, list[str]] = {}
    for r in rows:
        if r.note.startswith("inconclusive"):
            unsure.setdefault(r.note.split(" but ", 1)[-1], []).append(r.metric)
    for why, metrics in unsure.items():
        role = "baseline" if why.startswith("the baseline's") else "candidate"
        cmp.alerts.append(CompareWarning(
            kind="inconclusive", role=role, where=where,
            run_id=cmp.baseline.run_id if role == "baseline" else cand.run_id,
            text=f"{', '.join(metrics)} inconclusive — {why}; rerun on a quieter machine"))


def build_comparison(runs: Sequence[Run], *, baseline: Run | Sequence[Run] | None,
                     thresholds: Sequence[Threshold] = (), options: CompareOptions | None = None,
                     on_inconclusive: str = "3") -> Comparison:
    """Compare every run in ``runs`` with ``baseline`` (all must be ``ok``).

    ``baseline`` is one run or a set of runs of one build (its first run stands for it in the
    tables; its values are the set pooled, its spread widens every interval). Without a
    baseline only the side-by-side values and thresholds are produced. Thresholds (the runs'
    own profile ``[thresholds]`` plus ``thresholds``) are evaluated on every run except the
    baseline's.
    """
    opts = options or CompareOptions()
    base_runs = [baseline] if isinstance(baseline, Run) else list(baseline or [])
    in_base = {r.run_id for r in base_runs}
    ordered = base_runs[:1] + [r for r in runs if r.run_id not in in_base]
    if on_inconclusive not in INCONCLUSIVE_POLICIES:
        raise ValueError(f"on_inconclusive must be one of {', '.join(INCONCLUSIVE_POLICIES)}")
    cmp = Comparison(runs=ordered, baseline=base_runs[0] if base_runs else None, options=opts,
                     baseline_runs=base_runs, on_inconclusive=on_inconclusive)
    reps = Replicates(opts)
    cmp.identities = {run.run_id: _cells_by_identity(run) for run in [*base_runs, *ordered]}
    for run in {r.run_id: r for r in [*base_runs, *ordered]}.values():
        if run.died:  # its finished cells are measurements; the cell it was running is not in its summary
            cmp.alerts.append(CompareWarning(
                kind="died", run_id=run.run_id, role="baseline" if run.run_id in in_base else "candidate",
                text=f"the run died ({run.died}): only the cells it finished are compared"))
    identities = cmp.identities

    for run in ordered:
        for ident, cell_id in identities[run.run_id].items():
            cell = typed(run).cells[cell_id]
            for op, stats in cell.operations.items():
                cmp.values.setdefault((ident, op), {})[run.run_id] = summary_values(stats)
            flat = _flat_keyspace(cell.keyspace)
            if flat:
                cmp.keyspace.setdefault(ident, {})[run.run_id] = flat
            if cell.forecast is not None:
                cmp.forecast.setdefault(ident, {})[run.run_id] = _forecast_entry(cell.forecast)

    if cmp.baseline is not None:
        for cand in ordered[1:]:
            _judge_run(cmp, reps, cand)
    if cmp.baseline is not None:
        cmp.new_exceptions = new_exceptions(cmp.baseline_runs, ordered[1:], identities)
        for ident, per_run in cmp.forecast.items():
            base = per_run.get(cmp.baseline.run_id, {}).get("verdict")
            for run in ordered[1:]:
                now = per_run.get(run.run_id, {}).get("verdict")
                if base in VERDICT_RANK and now in VERDICT_RANK and VERDICT_RANK[now] > VERDICT_RANK[base]:
                    cmp.forecast_regressions.append((ident, run.run_id, base, now))

    for run in ordered[1:] if cmp.baseline is not None else ordered:
        own: list[Threshold] = []
        settings = _settings(run)
        # the [thresholds] table as the manifest keeps it (the wire form): parsed here against the run's ops
        table = settings.resolved.get("thresholds") if settings is not None else None
        if table:
            try:  # a Python workload's thresholds name its methods
                own = parse_table(table, operations={*OP_NAMES, *run_operations(run)})
            except Exception as exc:  # noqa: BLE001 - a stored profile is data, not input: warn
                cmp.alerts.append(CompareWarning(kind="thresholds", run_id=run.run_id,
                                                 text=f"ignoring the profile's [thresholds]: {exc}"))
        # as the run itself judged it: a Python workload's own exceptions fail unless allowed
        own = with_workload_errors(own, python_workload=settings is not None and bool(settings.workload.user))
        checks = [*own, *thresholds]
        if checks:
            # the results layer's evaluation reads mappings: the typed cells as such
            cmp.thresholds[run.run_id] = {cell_id: evaluate(checks, cell)
                                          for cell_id, cell in typed(run).cells.items()}
    return cmp
