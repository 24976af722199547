"""``keyramp compare``: runs side by side, verdicts vs a baseline, thresholds, CI reports."""

from __future__ import annotations

from keyramp.compare._model import CompareOptions, Comparison, MetricRow, build_comparison
from keyramp.compare._render import render_html, render_json, render_junit, render_markdown, render_terminal
from keyramp.compare._resolve import run_compare

__all__ = [
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
