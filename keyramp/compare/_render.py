"""Render a ``Comparison``: terminal (rich), Markdown, JUnit XML, JSON, static HTML.

The HTML report is one self-contained file: inline CSS and inline SVG charts, no
scripts, no external URLs, so it can be archived as a CI artifact and opened offline.
"""

from __future__ import annotations

import html
import json
import math
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pyarrow.compute as pc

from keyramp._format import plural
from keyramp.compare._model import METRICS, Comparison, MetricRow
from keyramp.compare._present import keyspace_table, verdict_rule
from keyramp.compare._present import ratio_text as _ratio_text
from keyramp.compare._present import value_text as _fmt
from keyramp.results._catalog import Run
from keyramp.results._read import read_timeseries

__all__ = ["grid", "render_html", "render_json", "render_junit", "render_markdown", "render_terminal"]

_UNITS = {"ops_per_s": "ops/s", "error_rate": ""}
_MARK = {"worse": "🔴 worse", "better": "🟢 better", "same": "same", "n/a": "n/a"}
_COLORS = {"worse": "#c62828", "better": "#2e7d32", "same": "#546e7a", "n/a": "#9e9e9e"}
_RUN_COLORS = ("#1565c0", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#558b2f", "#4e342e", "#283593")


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


def _short(run_id: str) -> str:
    return run_id if len(run_id) <= 28 else run_id[:19] + "…" + run_id[-4:]


def _baseline_label(cmp: Comparison) -> str:
    k = len(cmp.baseline_runs)
    return "baseline" if k <= 1 else f"baseline: {k} runs pooled"


def _notes(cmp: Comparison) -> list[str]:
    """Why a flagged verdict stands when the machine could have explained it (Little's law, service
    time): one line per row that says so; inconclusive rows are in the warnings."""
    return [f"{r.cell}/{r.op} {r.metric} {r.verdict}: {r.note}" for r in cmp.rows
            if r.verdict in ("worse", "better") and r.note and not r.note.startswith("p=")]


def _headline(cmp: Comparison) -> str:
    parts = []
    if cmp.baseline is not None:
        parts.append(f"{plural(len(cmp.regressions), 'regression')} vs baseline {cmp.baseline.run_id}")
    parts.append(plural(len(cmp.threshold_failures), "threshold failure"))
    if cmp.forecast_regressions:
        parts.append(f"{plural(len(cmp.forecast_regressions), 'launch forecast')} worse (modelled)")
    if cmp.new_exceptions:
        parts.append(f"{plural(len(cmp.new_exceptions), 'new exception class', 'new exception classes')} "
                     "raised by the workload")
    return ("FAIL" if cmp.exit_code else "PASS") + ": " + ", ".join(parts)


# ----------------------------------------------------------------------------- terminal


def render_terminal(cmp: Comparison, console: Any) -> None:
    from rich.markup import escape  # deferred: start-up cost (rich: the table path only)
    from rich.table import Table  # deferred: start-up cost (rich: the table path only)

    table = Table(title="keyramp compare", show_lines=False)
    for column in ("cell", "op", "metric"):
        table.add_column(column, no_wrap=True)
    for i, run in enumerate(cmp.runs):
        label = (f"{_baseline_label(cmp)}\n" if cmp.baseline is not None and i == 0 else "") + _short(run.run_id)
        table.add_column(label, justify="right")
        if cmp.baseline is not None and i > 0:
            table.add_column("ratio [95% CI]", justify="right")
            table.add_column("verdict")
    previous = None
    for cell, op, metric, cells in grid(cmp):
        key = (cell, op)
        row: list[str] = [escape(cell) if key != previous else "", escape(op) if key != previous else "", metric]
        previous = key
        for i, (value, verdict) in enumerate(cells):
            row.append(_fmt(value, metric))
            if cmp.baseline is not None and i > 0:
                row.append(escape(_ratio_text(verdict)))
                v = verdict.verdict if verdict else ""
                row.append(f"[{_COLORS.get(v, 'white')}]{v}[/]" if v else "")
        table.add_row(*row)
    console.print(table)
    if cmp.keyspace:
        ks = Table(title="key space (headline hotspot figures; modelled ones are not measured)")
        ks.add_column("cell")
        ks.add_column("figure")
        for run in cmp.runs:
            ks.add_column(_short(run.run_id), justify="right")
        for cell, label, modelled, texts in keyspace_table(cmp):
            ks.add_row(escape(cell), escape(label + (" (modelled)" if modelled else "")), *texts)
        console.print(ks)
    if cmp.forecast:
        fc = Table(title="launch forecast (modelled: share of launch operations throttled, low–high)")
        fc.add_column("cell")
        for run in cmp.runs:
            fc.add_column(_short(run.run_id))
        for cell, per_run in cmp.forecast.items():
            fc.add_row(escape(cell), *[escape(per_run.get(r.run_id, {}).get("short", "–")) for r in cmp.runs])
        console.print(fc)
    if cmp.thresholds:
        th = Table(title="thresholds")
        for column in ("run", "cell", "threshold", "value", "result"):
            th.add_column(column)
        for run_id, by_cell in cmp.thresholds.items():
            for cell, results in by_cell.items():
                for r in results:
                    th.add_row(_short(run_id), escape(cell), escape(f"{r.name} {r.op} {r.limit:g}"), _fmt(r.value),
                               "[green]pass[/]" if r.passed else "[yellow]inconclusive[/]"
                               if r.verdict == "inconclusive" else "[red]FAIL[/]")
        console.print(th)
    if cmp.new_exceptions:
        ne = Table(title="new exception classes (the workload's own; the baseline's cell did not raise them)")
        for column in ("run", "cell", "class", "count", "first occurrence"):
            ne.add_column(column)
        for e in cmp.new_exceptions:
            ne.add_row(_short(e.run_id), escape(e.cell), escape(e.error_class), str(e.count),
                       escape(f"{e.op}: {e.message}" + (f" at {e.where}" if e.where else "")))
        console.print(ne)
    for note in _notes(cmp):
        console.print(f"note: {escape(note)}", highlight=False)
    for warning in cmp.warnings:
        console.print(f"[yellow]warning[/]: {escape(warning)}", highlight=False)
    if cmp.noise:
        console.print(escape(cmp.noise), highlight=False)
    console.print(("[red]" if cmp.exit_code else "[green]") + escape(_headline(cmp)) + "[/]")


# ----------------------------------------------------------------------------- markdown


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(cmp: Comparison) -> str:
    """GitHub-flavoured Markdown, suitable for ``$GITHUB_STEP_SUMMARY``."""
    lines = [f"## keyramp compare — {'❌' if cmp.exit_code else '✅'} {_md(_headline(cmp))}", ""]
    header = ["cell", "op", "metric"]
    for i, run in enumerate(cmp.runs):
        header.append((f"{_baseline_label(cmp)} " if cmp.baseline is not None and i == 0 else "") + f"`{run.run_id}`")
        if cmp.baseline is not None and i > 0:
            header += ["ratio [95% CI]", "verdict"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" if i < 3 else "---:" for i in range(len(header))) + "|")
    for cell, op, metric, cells in grid(cmp):
        row = [_md(cell), _md(op), metric]
        for i, (value, verdict) in enumerate(cells):
            row.append(_fmt(value, metric))
            if cmp.baseline is not None and i > 0:
                row += [_md(_ratio_text(verdict)), _MARK.get(verdict.verdict, "") if verdict else ""]
        lines.append("| " + " | ".join(row) + " |")
    if cmp.thresholds:
        lines += ["", "### Thresholds", "", "| run | cell | threshold | value | result |", "|---|---|---|---:|---|"]
        for run_id, by_cell in cmp.thresholds.items():
            for cell, results in by_cell.items():
                for r in results:
                    lines.append(
                        f"| `{run_id}` | {_md(cell)} | `{_md(r.name)} {r.op} {r.limit:g}` | {_fmt(r.value)} | "
                        f"{'✅ pass' if r.passed else '⚠ inconclusive' if r.verdict == 'inconclusive' else '❌ fail'}"
                        " |"
                    )
    if cmp.forecast:
        lines += ["", "### Launch forecast (modelled: share of launch operations throttled, low–high)", "",
                  "| cell | " + " | ".join(f"`{r.run_id}`" for r in cmp.runs) + " |", "|---|" + "---|" * len(cmp.runs)]
        worse = {(c, r) for c, r, _, _ in cmp.forecast_regressions}
        for cell, per_run in cmp.forecast.items():
            vals = [_md(per_run.get(r.run_id, {}).get("short", "–")) + (" ❌" if (cell, r.run_id) in worse else "")
                    for r in cmp.runs]
            lines.append(f"| {_md(cell)} | " + " | ".join(vals) + " |")
    if cmp.keyspace:
        lines += ["", "### Key space (headline hotspot figures)", "", "| cell | figure | " +
                  " | ".join(f"`{r.run_id}`" for r in cmp.runs) + " |", "|---|---|" + "---:|" * len(cmp.runs)]
        lines += [f"| {_md(cell)} | {_md(label)}{' (modelled)' if modelled else ''} | " + " | ".join(texts) + " |"
                  for cell, label, modelled, texts in keyspace_table(cmp)]
    if cmp.new_exceptions:
        lines += ["", "### New exception classes (the workload's own; the baseline's cell did not raise them)", "",
                  "| run | cell | class | count | first occurrence |", "|---|---|---|---:|---|"]
        lines += [f"| `{e.run_id}` | {_md(e.cell)} | `{e.error_class}` | {e.count} | "
                  f"`{_md(e.op)}: {_md(e.message)}`" + (f" at `{_md(e.where)}`" if e.where else "") + " |"
                  for e in cmp.new_exceptions]
    if _notes(cmp):
        lines += ["", *[f"- {_md(n)}" for n in _notes(cmp)]]
    if cmp.warnings:
        lines += ["", *[f"> ⚠️ {_md(w)}" for w in cmp.warnings]]
    lines += ["", f"<sub>verdict: {_md(verdict_rule(cmp.options))}. {_md(cmp.noise)}</sub>", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- JUnit


def render_junit(cmp: Comparison) -> str:
    """JUnit XML (the Ant/Jenkins shape): a testcase per compared metric and per threshold."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    host = socket.gethostname()
    root = ET.Element("testsuites", name="keyramp compare")
    suites: list[ET.Element] = []

    def suite(name: str) -> ET.Element:
        el = ET.SubElement(root, "testsuite", name=name, timestamp=now, hostname=host, time="0",
                           id=str(len(suites)), package="keyramp")
        ET.SubElement(el, "properties")
        suites.append(el)
        return el

    for run in cmp.runs[1:] if cmp.baseline is not None else []:
        assert cmp.baseline is not None  # the loop runs only with a baseline
        rows = [r for r in cmp.rows if r.run_id == run.run_id]
        el = suite(f"compare {run.run_id} vs {cmp.baseline.run_id}")
        for r in rows:
            case = ET.SubElement(el, "testcase", name=f"{r.op}.{r.metric}",
                                 classname=f"keyramp.compare.{r.cell}", time="0")
            detail = (f"{r.metric}: baseline {_fmt(r.baseline, r.metric)}, now {_fmt(r.value, r.metric)} "
                      f"{_ratio_text(r)}").strip() + (f" ({r.note})" if r.note and r.metric != "error_rate" else "")
            if r.verdict == "worse":
                ET.SubElement(case, "failure", message=f"regression: {detail}", type="regression").text = detail
            elif r.verdict == "n/a":
                ET.SubElement(case, "skipped", message=r.note or "no value")
            else:
                ET.SubElement(case, "system-out").text = f"{r.verdict}: {detail}"
    if cmp.baseline is not None and cmp.forecast:
        worse = {(c, r): (b, v) for c, r, b, v in cmp.forecast_regressions}
        for run in cmp.runs[1:]:
            el = suite(f"launch forecast {run.run_id} vs {cmp.baseline.run_id} (modelled)")
            for cell, per_run in cmp.forecast.items():
                if run.run_id not in per_run or cmp.baseline.run_id not in per_run:
                    continue
                case = ET.SubElement(el, "testcase", name="forecast.verdict", classname=f"keyramp.forecast.{cell}",
                                     time="0")
                detail = (f"baseline {per_run[cmp.baseline.run_id]['short']}, now {per_run[run.run_id]['short']} "
                          "(modelled)")
                if (cell, run.run_id) in worse:
                    ET.SubElement(case, "failure", message=f"forecast worse: {detail}", type="forecast").text = detail
                else:
                    ET.SubElement(case, "system-out").text = detail
    if cmp.new_exceptions:
        el = suite("new exception classes (the workload's own)")
        for e in cmp.new_exceptions:
            case = ET.SubElement(el, "testcase", name=e.error_class, classname=f"keyramp.exceptions.{e.cell}", time="0")
            text = f"{e.run_id}: {e.op}: {e.message}" + (f" at {e.where}" if e.where else "") + f" ({e.count}×)"
            ET.SubElement(case, "failure", message=text, type="exception").text = text
    for run_id, by_cell in cmp.thresholds.items():
        el = suite(f"thresholds {run_id}")
        for cell, results in by_cell.items():
            for t in results:
                case = ET.SubElement(el, "testcase", name=f"{t.name} {t.op} {t.limit:g}",
                                     classname=f"keyramp.thresholds.{cell}", time="0")
                if not t.passed:
                    text = f"{t.name} = {_fmt(t.value)}, required {t.op} {t.limit:g}"
                    if t.verdict == "inconclusive":  # not a pass either: the gate stays red
                        text = f"inconclusive: {t.note or text}"
                    ET.SubElement(case, "failure", message=text, type="threshold").text = text
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for el in suites:
        counts = {
            "tests": len(el.findall("testcase")),
            "failures": len(el.findall("testcase/failure")),
            "errors": 0,
            "skipped": len(el.findall("testcase/skipped")),
        }
        for key, value in counts.items():
            el.set(key, str(value))
            totals[key] += value
        ET.SubElement(el, "system-out").text = ""
        ET.SubElement(el, "system-err").text = ""
    # Jenkins' junit-10.xsd allows only name/time/tests/failures/errors on the root
    # (``skipped`` is per suite), and strict consumers reject unknown attributes.
    for key in ("tests", "failures", "errors"):
        root.set(key, str(totals[key]))
    root.set("time", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# ----------------------------------------------------------------------------- JSON


def render_json(cmp: Comparison) -> str:
    return json.dumps(cmp.to_dict(), indent=2, default=str) + "\n"


# ----------------------------------------------------------------------------- HTML

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
        color = _COLORS.get(r.verdict, "#000")
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
        parts.append(f'<text x="{pad + 6}" y="{24 + 12 * i}" font-size="10" fill="{color}">{_e(_short(label))}</text>')
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


def render_html(cmp: Comparison) -> str:
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>keyramp compare</title>",
        f"<style>{_CSS}</style></head><body>",
        f'<h1>keyramp compare — <span class="{"fail" if cmp.exit_code else "pass"}">{_e(_headline(cmp))}</span></h1>',
        "<p>Runs: "
        + ", ".join(f"<code>{_e(r.run_id)}</code> ({_e(r.profile_name or '?')}, {_e(r.status)})" for r in cmp.runs)
        + "</p>",
    ]
    for note in _notes(cmp):
        out.append(f"<p>{_e(note)}</p>")
    for warning in cmp.warnings:
        out.append(f'<p class="warn">{_e(warning)}</p>')

    out.append("<h2>Side by side</h2><table><tr><th>cell</th><th>op</th><th>metric</th>")
    for i, run in enumerate(cmp.runs):
        label = (
            f"{_e(_baseline_label(cmp))}<br>" if cmp.baseline is not None and i == 0 else ""
        ) + f"<code>{_e(_short(run.run_id))}</code>"
        out.append(f"<th>{label}</th>")
        if cmp.baseline is not None and i > 0:
            out.append("<th>ratio [95% CI]</th><th>verdict</th>")
    out.append("</tr>")
    for cell, op, metric, cells in grid(cmp):
        out.append(f"<tr><td>{_e(cell)}</td><td>{_e(op)}</td><td>{_e(metric)}</td>")
        for i, (value, verdict) in enumerate(cells):
            out.append(f"<td>{_e(_fmt(value, metric))}</td>")
            if cmp.baseline is not None and i > 0:
                v = verdict.verdict if verdict else ""
                css = {"worse": "worse", "better": "better", "n/a": "na"}.get(v, "")
                out.append(f"<td>{_e(_ratio_text(verdict))}</td><td class=\"{css}\">{_e(v)}</td>")
        out.append("</tr>")
    out.append("</table>")

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

    if cmp.thresholds:
        out.append("<h2>Thresholds</h2><table><tr><th>run</th><th>cell</th><th>threshold</th><th>value</th>"
                   "<th>result</th></tr>")
        for run_id, by_cell in cmp.thresholds.items():
            for cell, results in by_cell.items():
                for r in results:
                    out.append(f"<tr><td><code>{_e(run_id)}</code></td><td>{_e(cell)}</td>"
                               f"<td>{_e(f'{r.name} {r.op} {r.limit:g}')}</td><td>{_e(_fmt(r.value))}</td>"
                               f'<td class="{"pass" if r.passed else "fail"}">'
                               f'{"pass" if r.passed else "inconclusive" if r.verdict == "inconclusive" else "FAIL"}'
                               '</td></tr>')
        out.append("</table>")
    if cmp.forecast:
        out.append("<h2>Launch forecast (modelled)</h2><table><tr><th>cell</th>"
                   + "".join(f"<th><code>{_e(_short(r.run_id))}</code></th>" for r in cmp.runs) + "</tr>")
        for cell, per_run in cmp.forecast.items():
            out.append(f"<tr><td>{_e(cell)}</td>" + "".join(
                f"<td>{_e(per_run.get(r.run_id, {}).get('short', '–'))}</td>" for r in cmp.runs) + "</tr>")
        out.append("</table>")
    if cmp.keyspace:
        out.append("<h2>Key space (headline hotspot figures)</h2><table><tr><th>cell</th><th>figure</th>"
                   + "".join(f"<th><code>{_e(_short(r.run_id))}</code></th>" for r in cmp.runs) + "</tr>")
        for cell, label, modelled, texts in keyspace_table(cmp):
            out.append(f"<tr><td>{_e(cell)}</td><td>{_e(label)}{' (modelled)' if modelled else ''}</td>"
                       + "".join(f"<td>{_e(t)}</td>" for t in texts) + "</tr>")
        out.append("</table>")
    o = cmp.options
    out.append(f"<p><small>Verdicts: {_e(verdict_rule(o))} (bootstrap: 1 s interval histograms resampled, "
               f"{o.bootstrap:,} replicates, seed {o.seed}). {_e(cmp.noise)} Generated by keyramp.</small></p>"
               "</body></html>")
    return "\n".join(out) + "\n"
