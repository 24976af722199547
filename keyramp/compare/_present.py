"""How a comparison reads, for every renderer (terminal, Markdown, HTML) and the web UI.

Figures go through ``keyramp._format`` so one value reads the same everywhere; the verdict
rule is written once from the options in force, so no view restates the defaults; the
key-space table is the headline hotspot figures, rounded, without the model's constants
(step sizes, parameters — summary.json and ``--json`` keep every field).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keyramp._format as fmt
from keyramp.compare._judge import CompareOptions, MetricRow
from keyramp.compare._model import Comparison
from keyramp.keyspace._headline import FIGURES, keyspace_headline

__all__ = ["keyspace_table", "ratio_text", "value_text", "verdict_rule"]


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
