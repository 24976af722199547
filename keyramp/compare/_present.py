"""How a comparison reads, for every renderer (terminal, Markdown, JUnit, HTML) and the web UI.

Figures go through ``keyramp.core._format`` so one value reads the same everywhere; the verdict
rule is written once from the options in force, so no view restates the defaults; the
key-space table is the headline hotspot figures, rounded, without the model's constants
(step sizes, parameters — summary.json and ``--json`` keep every field).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from keyramp.compare._judge import CompareOptions, MetricRow
from keyramp.compare._model import METRICS, Comparison
from keyramp.compare._warnings import WarningGroup, group_warnings
from keyramp.core import fmt
from keyramp.keyspace import FIGURES, keyspace_headline
from keyramp.results import ThresholdRow

__all__ = [
    "VERDICT_COLORS",
    "baseline_label",
    "grid",
    "headline",
    "keyspace_table",
    "notes",
    "ratio_text",
    "short_id",
    "threshold_result",
    "threshold_rows",
    "value_text",
    "verdict_label",
    "verdict_rule",
    "warning_groups",
]

#: A verdict's colour in the terminal table and the HTML charts.
VERDICT_COLORS = {"worse": "#c62828", "better": "#2e7d32", "same": "#546e7a", "n/a": "#9e9e9e"}


def value_text(value: float | None, metric: str = "") -> str:
    """A metric's value in a comparison table: error rates as percentages, the rest as figures."""
    return fmt.percent(value) if metric == "error_rate" else fmt.number(value)


def ratio_text(row: MetricRow | None) -> str:
    """The ratio to the baseline with its interval (error rate: the difference in points)."""
    if row is None:
        return ""
    if row.metric == "error_rate":
        if not row.baseline and not row.value:
            return ""  # no errors on either side: nothing to say
        if row.ci_low is None or row.ci_high is None:
            return row.note
        return f"Δ {row.ci_low * 100:+.2f}…{row.ci_high * 100:+.2f} pp ({row.note})"
    if row.ratio is None:
        return ""
    text = fmt.ratio(row.ratio)
    if row.ci_low is not None and row.ci_high is not None:
        text += f" [{fmt.ratio(row.ci_low).lstrip('×')}, {fmt.ratio(row.ci_high).lstrip('×')}]"
    return text


def verdict_label(row: MetricRow | None) -> str:
    """A verdict as the tables show it: ``worse``, ``better``, ``same``, ``n/a``, or ``inconclusive``
    for an n/a the machine made (a gated metric that could not be judged: exit 3)."""
    if row is None:
        return ""
    return "inconclusive" if row.verdict == "n/a" and row.note.startswith("inconclusive") else row.verdict


def verdict_rule(options: CompareOptions | None = None) -> str:
    """When a row is ``worse``/``better``, from the options in force (the defaults when None)."""
    o = options or CompareOptions()
    return (f"worse/better only when the {fmt.percent(o.confidence)} bootstrap interval of the ratio clears the "
            f"minimum effect: +{fmt.percent(o.min_effect_latency)} for p50, +{fmt.percent(o.min_effect_tail)} "
            f"for p95 and above, ±{fmt.percent(o.min_effect_throughput)} for throughput; error rates: "
            f"two-proportion test at α = {o.alpha:g}; n/a when the machine explains the change (a starved "
            "load generator, a saturated test box); every other row is the same")


def keyspace_table(cmp: Comparison, run_ids: Sequence[str] | None = None) -> list[tuple[str, str, bool, list[str]]]:
    """(cell, label, modelled, text per run): the key-space headline (``append ×1``, ``spread``) and
    the headline figures any run of the cell has (``keyspace._headline.FIGURES``, the run page's
    labels and formats); runs in ``run_ids`` order (default: the comparison's, baseline first)."""
    order = list(run_ids) if run_ids is not None else [r.run_id for r in cmp.runs]
    out = []
    for cell, per_run in cmp.keyspace.items():
        flats = [per_run.get(run_id, {}) for run_id in order]
        out.append((cell, "key pattern", False, [keyspace_headline(flat) if flat else fmt.MISSING for flat in flats]))
        for figure in FIGURES:
            values: list[Any] = [figure.value(flat) for flat in flats]
            if all(v is None for v in values):
                continue
            out.append((cell, figure.label, figure.modelled, [figure.text(v) for v in values]))
    return out


def grid(cmp: Comparison) -> Iterator[tuple[str, str, str, list[tuple[float | None, MetricRow | None]]]]:
    """Rows of the side-by-side table: (cell, op, metric, [(value, verdict row) per run]).

    The first entry is the baseline (verdict row None) when there is one.
    """
    by_key = {(r.cell, r.op, r.metric, r.run_id): r for r in cmp.rows}
    for (cell, op), per_run in cmp.values.items():
        for metric in METRICS:
            cells = []
            for run in cmp.runs:
                value = per_run.get(run.run_id, {}).get(metric)
                cells.append((value, by_key.get((cell, op, metric, run.run_id))))
            yield cell, op, metric, cells


def short_id(run_id: str) -> str:
    """A run id short enough for a table column (its start and its last characters)."""
    return run_id if len(run_id) <= 28 else run_id[:19] + "…" + run_id[-4:]


def baseline_label(cmp: Comparison) -> str:
    """The baseline column's label (how many runs it pools)."""
    k = len(cmp.baseline_runs)
    return "baseline" if k <= 1 else f"baseline: {k} runs pooled"


def notes(cmp: Comparison) -> list[str]:
    """Why a flagged verdict stands when the machine could have explained it (Little's law, service
    time): one line per row that says so; inconclusive rows are in the warnings."""
    return [f"{r.cell}/{r.op} {r.metric} {r.verdict}: {r.note}" for r in cmp.rows
            if r.verdict in ("worse", "better") and r.note and not r.note.startswith("p=")]


def targets_note(cmp: Comparison) -> str | None:
    """What each run ran against, when any ran against a store model (docs/fidelity.md): its errors
    and latency are the model's answers, not the emulator's or the cloud's. None otherwise."""
    targets = {run.run_id: run.summary.target if run.summary is not None else None for run in cmp.runs}
    if not any(targets.values()):
        return None
    parts = [f"{short_id(rid)}: {t.describe() if t is not None else 'the emulators as they are'}"
             for rid, t in targets.items()]
    mixed = len({t.describe() if t is not None else None for t in targets.values()}) > 1
    return "targets — " + "; ".join(parts) + (
        " (different targets: the comparison shows the targets' difference, not the code's)" if mixed else "")


def headline(cmp: Comparison) -> str:
    """PASS, FAIL or INCONCLUSIVE and what decided it, in one line (every view opens with it)."""
    parts = []
    if cmp.baseline is not None:
        parts.append(f"{fmt.plural(len(cmp.regressions), 'regression')} vs baseline {cmp.baseline.run_id}")
    parts.append(fmt.plural(len(cmp.threshold_failures), "threshold failure"))
    if cmp.forecast_regressions:
        parts.append(f"{fmt.plural(len(cmp.forecast_regressions), 'launch forecast')} worse (modelled)")
    if cmp.new_exceptions:
        parts.append(f"{fmt.plural(len(cmp.new_exceptions), 'new exception class', 'new exception classes')} "
                     "raised by the workload")
    if cmp.inconclusive:
        why = {"3": "the machine, not the store, was measured: rerun on a quieter machine",
               "pass": "passed by --inconclusive pass", "fail": "failed by --inconclusive fail"}[cmp.on_inconclusive]
        parts.append(f"{fmt.plural(cmp.inconclusive, 'gated metric')} inconclusive ({why})")
    return f"{cmp.verdict.upper()}: " + ", ".join(parts)


def threshold_result(row: ThresholdRow) -> str:
    """``pass``, ``FAIL`` or ``inconclusive``: a threshold's result in every view."""
    return "pass" if row.passed else "inconclusive" if row.verdict == "inconclusive" else "FAIL"


def threshold_rows(cmp: Comparison) -> list[tuple[str, str, str, str, str, str]]:
    """(run, cell, threshold, value, result, note) per evaluated threshold: failures first, then the
    inconclusive ones, then the passes (the thresholds table that opens every view)."""
    rank = {"FAIL": 0, "inconclusive": 1, "pass": 2}
    rows = [(run_id, cell, f"{r.name} {r.op} {r.limit:g}", value_text(r.value), threshold_result(r), r.note or "")
            for run_id, by_cell in cmp.thresholds.items() for cell, results in by_cell.items() for r in results]
    return sorted(rows, key=lambda row: rank[row[4]])


def warning_groups(cmp: Comparison) -> list[WarningGroup]:
    """The comparison's warnings, similar ones grouped (``compare._warnings``)."""
    return group_warnings(cmp.alerts)
