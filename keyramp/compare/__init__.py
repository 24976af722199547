"""``keyramp compare``: runs side by side, verdicts vs a baseline, thresholds, CI reports.

Names are imported on first use (``keyramp._lazy``): the statistics need numpy and the runs'
time series pyarrow, and ``keyramp --help`` only needs ``CompareOptions``' defaults."""

from __future__ import annotations

from typing import TYPE_CHECKING

from keyramp._lazy import lazy_exports

__all__ = [
    "INCONCLUSIVE_POLICIES",
    "CompareOptions",
    "Comparison",
    "MetricRow",
    "build_comparison",
    "render_html",
    "render_json",
    "render_junit",
    "render_markdown",
    "render_terminal",
    "run_compare",
]

#: Public name -> the module that defines it (imported on first use).
_LAZY = {
    "INCONCLUSIVE_POLICIES": "keyramp.compare._options",
    "CompareOptions": "keyramp.compare._options",
    "Comparison": "keyramp.compare._model",
    "MetricRow": "keyramp.compare._judge",
    "build_comparison": "keyramp.compare._model",
    "render_html": "keyramp.compare._html",
    "render_json": "keyramp.compare._render",
    "render_junit": "keyramp.compare._junit",
    "render_markdown": "keyramp.compare._render",
    "render_terminal": "keyramp.compare._render",
    "run_compare": "keyramp.compare._resolve",
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY, __all__)

if TYPE_CHECKING:
    from keyramp.compare._html import render_html
    from keyramp.compare._judge import MetricRow
    from keyramp.compare._junit import render_junit
    from keyramp.compare._model import Comparison, build_comparison
    from keyramp.compare._options import INCONCLUSIVE_POLICIES, CompareOptions
    from keyramp.compare._render import render_json, render_markdown, render_terminal
    from keyramp.compare._resolve import run_compare
