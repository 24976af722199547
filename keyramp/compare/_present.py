"""How a comparison reads, for every renderer (terminal, Markdown, HTML) and the web UI.

Figures go through ``keyramp._format`` so one value reads the same everywhere; the verdict
rule is written once from the options in force, so no view restates the defaults; the
key-space table is the headline hotspot figures, rounded, without the model's constants
(step sizes, parameters — summary.json and ``--json`` keep every field).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import keyramp._format as fmt
from keyramp.compare._judge import CompareOptions, MetricRow
from keyramp.compare._model import Comparison

__all__ = ["KEYSPACE_ROWS", "KeyspaceRow", "keyspace_table", "ratio_text", "value_text", "verdict_rule"]


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


@dataclass(frozen=True)
class KeyspaceRow:
    field: str  # in the flat key-space dict (``model.`` prefix: the tablet model's summary)
    label: str
    text: Callable[[object], str]

    @property
    def modelled(self) -> bool:
        return self.field.startswith("model.")


#: The headline key-space figures, as the run page labels them (web/_keyspace.py).
KEYSPACE_ROWS: tuple[KeyspaceRow, ...] = (
    KeyspaceRow("hottest_1pct_share", "hottest 1 % of the key range", fmt.percent),
    KeyspaceRow("hottest_1pct_ops_per_s", "hot window", fmt.ops_per_s),
    KeyspaceRow("append_points", "append points", fmt.count),
    KeyspaceRow("append_fraction", "appends at the end", fmt.percent),
    KeyspaceRow("prepend_fraction", "prepends at the start", fmt.percent),
    KeyspaceRow("gini", "unevenness (Gini)", lambda v: fmt.number(v, 2)),
    KeyspaceRow("entropy_norm", "evenness (entropy)", lambda v: fmt.number(v, 2)),
    KeyspaceRow("samples", "sampled operations", fmt.count),
    KeyspaceRow("model.max_throttled_fraction", "throttled load (peak)", fmt.percent),
    KeyspaceRow("model.peak_tablets", "tablets (peak)", fmt.count),
    KeyspaceRow("model.max_added_latency_ms", "added latency (peak)", fmt.ms),
)


def keyspace_table(cmp: Comparison, run_ids: Sequence[str] | None = None) -> list[tuple[str, str, bool, list[str]]]:
    """(cell, label, modelled, text per run) for the headline figures any run of the cell has;
    runs in ``run_ids`` order (default: the comparison's, baseline first)."""
    order = list(run_ids) if run_ids is not None else [r.run_id for r in cmp.runs]
    out = []
    for cell, per_run in cmp.keyspace.items():
        for row in KEYSPACE_ROWS:
            values: list[Any] = [per_run.get(run_id, {}).get(row.field) for run_id in order]
            if all(v is None for v in values):
                continue
            out.append((cell, row.label, row.modelled, [row.text(v) for v in values]))
    return out
