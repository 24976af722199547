"""Render a ``Comparison`` as one self-contained HTML file: inline CSS and inline SVG charts, no
scripts, no external URLs, so it can be archived as a CI artifact and opened offline."""

from __future__ import annotations

import html
import math
from typing import Any

import pyarrow.compute as pc

from keyramp.compare._model import Comparison, MetricRow
from keyramp.compare._present import (
    VERDICT_COLORS,
    baseline_label,
    grid,
    headline,
    keyspace_table,
    notes,
    ratio_text,
    short_id,
    threshold_rows,
    value_text,
    verdict_label,
    verdict_rule,
    warning_groups,
)
from keyramp.core import fmt
from keyramp.results import Run, read_timeseries

__all__ = ["render_html"]

_VERDICT_CSS = {"fail": "fail", "inconclusive": "na", "pass": "pass"}
_RUN_COLORS = ("#1565c0", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#558b2f", "#4e342e", "#283593")

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#212121;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
td:nth-child(-n+3),th{text-align:left}th{background:#f5f5f5}
.worse{color:#c62828;font-weight:600}.better{color:#2e7d32;font-weight:600}.na{color:#9e9e9e}
.fail{color:#c62828;font-weight:700}.pass{color:#2e7d32;font-weight:700}
.warn{background:#fff8e1;padding:4px 8px;border-left:3px solid #f9a825}
figure{display:inline-block;margin:0 1em 1em 0}figcaption{font-size:12px;color:#555}
code{font-size:12px}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _forest_svg(rows: list[MetricRow]) -> str:
    """Ratio and its interval per metric on a log axis (0.25x … 4x), coloured by verdict."""
    rows = [r for r in rows if r.ratio is not None and r.metric != "error_rate"]
    if not rows:
        return ""
    width, left, right, step = 760, 300, 20, 18
    height = 30 + step * len(rows)
    lo, hi = math.log(0.25), math.log(4.0)

    def x(ratio: float) -> float:
        value = min(max(math.log(max(ratio, 1e-9)), lo), hi)
        return left + (value - lo) / (hi - lo) * (width - left - right)

    parts = [f'<svg width="{width}" height="{height}" role="img" '
             f'aria-label="ratio to baseline with confidence interval">']
    for tick in (0.25, 0.5, 0.9, 1.0, 1.1, 2.0, 4.0):
        tx = x(tick)
        parts.append(f'<line x1="{tx:.1f}" y1="10" x2="{tx:.1f}" y2="{height - 18}" stroke="'
                     f'{"#424242" if tick == 1.0 else "#e0e0e0"}" stroke-dasharray="{"" if tick == 1.0 else "3,3"}"/>')
        parts.append(f'<text x="{tx:.1f}" y="{height - 4}" font-size="10" text-anchor="middle">×{tick:g}</text>')
    for i, r in enumerate(rows):
        assert r.ratio is not None  # filtered above
        y = 20 + i * step
        color = VERDICT_COLORS.get(r.verdict, "#000")
        parts.append(f'<text x="4" y="{y + 4}" font-size="11">{_e(r.cell)} · {_e(r.op)} · {_e(r.metric)}</text>')
        if r.ci_low is not None and r.ci_high is not None:
            parts.append(f'<line x1="{x(r.ci_low):.1f}" y1="{y}" x2="{x(r.ci_high):.1f}" y2="{y}" '
                         f'stroke="{color}" stroke-width="2"/>')
        parts.append(f'<circle cx="{x(r.ratio):.1f}" cy="{y}" r="4" fill="{color}">'
                     f'<title>{_e(r.verdict)} ×{r.ratio:.3f}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def _timeline_svg(series: list[tuple[str, list[tuple[float, float]]]], title: str) -> str:
    """Per-second p99 of each run as polylines."""
    points = [p for _, pts in series for p in pts]
    if not points:
        return ""
    width, height, pad = 420, 200, 36
    max_t = max(max(t for t, _ in points), 1.0)
    max_v = max(max(v for _, v in points), 1e-9) * 1.1

    def sx(t: float) -> float:
        return pad + t / max_t * (width - pad - 10)

    def sy(v: float) -> float:
        return height - pad + 10 - v / max_v * (height - pad - 10)

    parts = [f'<svg width="{width}" height="{height}" role="img" '
             f'aria-label="{_e(title)}">',
             f'<line x1="{pad}" y1="{sy(0):.1f}" x2="{width - 10}" y2="{sy(0):.1f}" stroke="#9e9e9e"/>',
             f'<line x1="{pad}" y1="10" x2="{pad}" y2="{sy(0):.1f}" stroke="#9e9e9e"/>',
             f'<text x="{pad - 4}" y="14" font-size="10" text-anchor="end">{max_v / 1.1:.3g}</text>',
             f'<text x="{pad - 4}" y="{sy(0):.1f}" font-size="10" text-anchor="end">0</text>',
             f'<text x="{width - 10}" y="{height - 4}" font-size="10" text-anchor="end">{max_t:g} s</text>']
    for i, (label, pts) in enumerate(series):
        color = _RUN_COLORS[i % len(_RUN_COLORS)]
        if pts:
            coords = " ".join(f"{sx(t):.1f},{sy(v):.1f}" for t, v in pts)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{coords}">'
                         f'<title>{_e(label)}</title></polyline>')
        parts.append(f'<text x="{pad + 6}" y="{24 + 12 * i}" font-size="10" fill="{color}">'
                     f'{_e(short_id(label))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _p99_series(run: Run) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(cell id, op) -> per-second p99 points, from one read of the run's time series."""
    table = read_timeseries(run, columns=("cell", "op", "second", "p99_ms"))
    table = table.filter(pc.is_valid(table["p99_ms"]))
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for cell, op, second, p99 in zip(*(table[c].to_pylist() for c in table.column_names), strict=True):
        out.setdefault((cell, op), []).append((float(second), float(p99)))
    return out


def _side_by_side(cmp: Comparison) -> list[str]:
    out = ["<h2>Side by side</h2><table><tr><th>cell</th><th>op</th><th>metric</th>"]
    for i, run in enumerate(cmp.runs):
        label = (
            f"{_e(baseline_label(cmp))}<br>" if cmp.baseline is not None and i == 0 else ""
        ) + f"<code>{_e(short_id(run.run_id))}</code>"
        out.append(f"<th>{label}</th>")
        if cmp.baseline is not None and i > 0:
            out.append("<th>ratio [95% CI]</th><th>verdict</th>")
    out.append("</tr>")
    for cell, op, metric, cells in grid(cmp):
        out.append(f"<tr><td>{_e(cell)}</td><td>{_e(op)}</td><td>{_e(metric)}</td>")
        for i, (value, verdict) in enumerate(cells):
            out.append(f"<td>{_e(value_text(value, metric))}</td>")
            if cmp.baseline is not None and i > 0:
                v = verdict_label(verdict)
                css = {"worse": "worse", "better": "better", "n/a": "na", "inconclusive": "na"}.get(v, "")
                out.append(f"<td>{_e(ratio_text(verdict))}</td><td class=\"{css}\">{_e(v)}</td>")
        out.append("</tr>")
    out.append("</table>")
    return out


def _charts(cmp: Comparison) -> list[str]:
    """Each run's ratios to the baseline (forest plots) and each cell's p99 per second."""
    out = []
    if cmp.baseline is not None:
        out.append("<h2>Ratio to baseline (point and confidence interval, log scale)</h2>")
        for run in cmp.runs[1:]:
            svg = _forest_svg([r for r in cmp.rows if r.run_id == run.run_id])
            if svg:
                out.append(f"<figure>{svg}<figcaption><code>{_e(run.run_id)}</code> vs "
                           f"<code>{_e(cmp.baseline.run_id)}</code></figcaption></figure>")
    out.append("<h2>p99 latency per second (ms)</h2>")
    p99 = {run.run_id: _p99_series(run) for run in cmp.runs} if cmp.values else {}
    for cell, op in cmp.values:
        series = []
        for run in cmp.runs:
            cell_id = cmp.identities.get(run.run_id, {}).get(cell)
            series.append((run.run_id, p99[run.run_id].get((cell_id, op), []) if cell_id is not None else []))
        svg = _timeline_svg(series, f"{cell} {op} p99")
        if svg:
            out.append(f"<figure>{svg}<figcaption>{_e(cell)} · {_e(op)}</figcaption></figure>")
    return out


def _answer(cmp: Comparison) -> list[str]:
    """What opens the report: the thresholds, then the warnings grouped and folded."""
    out = []
    if cmp.thresholds:
        out.append("<h2>Thresholds</h2><table><tr><th>run</th><th>cell</th><th>threshold</th><th>value</th>"
                   "<th>result</th></tr>")
        for run_id, cell, name, value, result, note in threshold_rows(cmp):
            css = {"pass": "pass", "FAIL": "fail"}.get(result, "na")
            out.append(f"<tr><td><code>{_e(short_id(run_id))}</code></td><td>{_e(cell)}</td><td>{_e(name)}</td>"
                       f'<td>{_e(value)}</td><td class="{css}">{_e(result)}'
                       + (f"<br><small>{_e(note)}</small>" if note and result != "pass" else "") + "</td></tr>")
        out.append("</table>")
    groups = warning_groups(cmp)
    if groups:
        out.append(f'<details class="warn"><summary>{_e(fmt.plural(len(cmp.alerts), "warning"))}: '
                   f'{_e(", ".join(dict.fromkeys(g.heading for g in groups)))}</summary><ul>')
        out += [f"<li><b>{_e(g.heading)}</b> — {_e(g.line())}</li>" for g in groups]
        out.append("</ul></details>")
    return out


def _tables(cmp: Comparison) -> list[str]:
    """The launch forecast (modelled) and the key space's headline figures."""
    out = []
    if cmp.forecast:
        out.append("<h2>Launch forecast (modelled)</h2><table><tr><th>cell</th>"
                   + "".join(f"<th><code>{_e(short_id(r.run_id))}</code></th>" for r in cmp.runs) + "</tr>")
        for cell, per_run in cmp.forecast.items():
            out.append(f"<tr><td>{_e(cell)}</td>" + "".join(
                f"<td>{_e(per_run.get(r.run_id, {}).get('short', '–'))}</td>" for r in cmp.runs) + "</tr>")
        out.append("</table>")
    if cmp.keyspace:
        out.append("<h2>Key space (headline hotspot figures)</h2><table><tr><th>cell</th><th>figure</th>"
                   + "".join(f"<th><code>{_e(short_id(r.run_id))}</code></th>" for r in cmp.runs) + "</tr>")
        for cell, label, modelled, texts in keyspace_table(cmp):
            out.append(f"<tr><td>{_e(cell)}</td><td>{_e(label)}{' (modelled)' if modelled else ''}</td>"
                       + "".join(f"<td>{_e(t)}</td>" for t in texts) + "</tr>")
        out.append("</table>")
    return out


def render_html(cmp: Comparison) -> str:
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>keyramp compare</title>",
        f"<style>{_CSS}</style></head><body>",
        f'<h1>keyramp compare — <span class="{_VERDICT_CSS.get(cmp.verdict, "pass")}">{_e(headline(cmp))}</span></h1>',
        "<p>Runs: "
        + ", ".join(f"<code>{_e(r.run_id)}</code> ({_e(r.profile_name or '?')}, {_e(r.status)})" for r in cmp.runs)
        + "</p>",
        *_answer(cmp),
        *(f"<p>{_e(note)}</p>" for note in notes(cmp)),
        *_side_by_side(cmp),
        *_charts(cmp),
        *_tables(cmp),
    ]
    o = cmp.options
    out.append(f"<p><small>Verdicts: {_e(verdict_rule(o))} (bootstrap: 1 s interval histograms resampled, "
               f"{o.bootstrap:,} replicates, seed {o.seed}). {_e(cmp.noise)} Generated by keyramp.</small></p>"
               "</body></html>")
    return "\n".join(out) + "\n"
