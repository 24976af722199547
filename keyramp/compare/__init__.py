"""``keyramp compare``: runs side by side, verdicts vs a baseline, thresholds, CI reports.

Names are imported on first use (``keyramp.core._lazy``): the statistics need numpy and the runs'
time series pyarrow, and ``keyramp --help`` only needs ``CompareOptions``' defaults."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from keyramp.compare._html import render_html
    from keyramp.compare._judge import MetricRow
    from keyramp.compare._junit import render_junit
    from keyramp.compare._model import LATENCY_METRICS, METRICS, Comparison, build_comparison
    from keyramp.compare._options import INCONCLUSIVE_POLICIES, CompareOptions
    from keyramp.compare._present import (
        headline,
        keyspace_table,
        threshold_rows,
        verdict_label,
        verdict_rule,
        warning_groups,
    )
    from keyramp.compare._render import render_json, render_markdown, render_terminal
    from keyramp.compare._resolve import run_compare

if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
