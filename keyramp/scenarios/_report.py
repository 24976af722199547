"""The scenario report: one verdict per best-practice rule with its evidence and charts.

``report_for_runs(run_dirs, out=...)`` writes ``report.html`` (self-contained: inline SVG
charts, key-space heatmaps as PNG data URIs), ``report.md`` (charts as files next to it)
and ``report.json``. ``keyramp run`` calls it after running scenario profiles (those
with ``rules``); ``keyramp scenarios report RUN...`` rebuilds it from run directories. The
verdicts come from ``_verdict``; this module draws and writes them.

An effect the emulator cannot show is reported as "not observable on the emulator",
never as "no difference"; modelled figures are labelled as modelled.
"""

from __future__ import annotations

import html
import json
import secrets
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keyramp.core import UsageError, fmt
from keyramp.keyspace import run_keyspace
from keyramp.results import list_runs
from keyramp.run import PLAN_NOTE
from keyramp.scenarios._charts import (
    Bar,
    Line,
    Mark,
    bar_chart_svg,
    line_chart_svg,
    pace_marks,
    png_data_uri,
)
from keyramp.scenarios._evidence import (
    Evidence,
    RunInfo,
    by_rule,
    collect,
    evidence_for,
    load_runs,
)
from keyramp.scenarios._verdict import own_verdicts, verdict

__all__ = [
    "Evidence",
    "RuleReport",
    "collect",
    "default_report_dir",
    "evidence_for",
    "expand_runs",
    "render_html",
    "render_markdown",
    "report_for_runs",
    "verdict",
    "write_report",
]


@dataclass(kw_only=True)
class RuleReport:
    rule: str
    status: str  # "confirmed (measured)" | "confirmed (modelled)" | "not observable on the emulator" | ...
    verdict: str
    rows: list[Evidence]
    #: (title, svg) per chart.
    charts: list[tuple[str, str]] = field(default_factory=list)
    #: (title, png path) per key-space heatmap.
    heatmaps: list[tuple[str, Path]] = field(default_factory=list)
    #: (title, rule) per heatmap already drawn under an earlier rule: referred to, not repeated.
    heatmap_refs: list[tuple[str, str]] = field(default_factory=list)


# -- charts --------------------------------------------------------------------------------------

def _charts(rule: str, rows: list[Evidence]) -> list[tuple[str, str]]:
    charts: dict[tuple[str, str], list[Bar]] = {}
    for r in rows:
        per_chart = Counter((b.chart, b.unit) for b in r.bars)
        for b in r.bars:
            # a row's only bar in a chart is named by the row alone; several are told apart by series
            series = "" if per_chart[(b.chart, b.unit)] == 1 else f" · {b.series}"
            charts.setdefault((b.chart, b.unit), []).append(Bar(label=f"{r.label}{series}", value=b.value,
                                                                 role=r.role))
    out = [(title, bar_chart_svg(f"{rule}: {title}", bars, unit=unit)) for (title, unit), bars in charts.items()]
    if rule.startswith("BP-RAMP"):
        lines: list[Line] = []
        marks: list[Mark] = []
        for i, r in enumerate(x for x in rows if x.timeline):
            lines.append(Line(name=f"{r.profile}: scheduled", colour=i, dashed=True,
                              points=[(t, tg) for t, tg, _ in r.timeline if tg is not None]))
            lines.append(Line(name=f"{r.profile}: achieved", colour=i, points=[(t, a) for t, _, a in r.timeline]))
            marks += pace_marks(r.profile, r.timeline)
        if lines:
            title = "scheduled vs achieved ops/s (measured)"
            out.append((title, line_chart_svg(f"{rule}: {title}", lines, marks=marks, y_label="operations per second",
                                              x_label="seconds since the cell started (wall clock)")))
    return out


def _heatmaps(rows: list[Evidence], out: Path,
              cache: dict[Path, dict[str, Path]]) -> list[tuple[str, Path, tuple[Path, str]]]:
    """Key-space heatmap PNGs (``keyramp.keyspace``) of the rule's Locust cells. Each run is analysed
    once for all its sampled cells (``cache``: run -> cell -> png), since every analysis parses the
    run's whole key samples and time series."""
    found = []
    for r in rows:
        if r.kind != "modelled" or r.run is None:
            continue
        if r.run not in cache:
            target = out / "keyspace" / r.run.name
            try:
                analysed = run_keyspace(r.run, out_dir=target, png=True)  # cell -> result, cells with samples
                cache[r.run] = {cell: target / f"{cell}.png" for cell in analysed}
            except (UsageError, OSError, ValueError):  # no sampled keys: the charts are simply absent
                cache[r.run] = {}
        png = cache[r.run].get(r.cell)
        if png is not None and png.is_file():
            found.append((f"{r.label}: key-space heatmap (measured key stream)", png, (r.run, r.cell)))
    return found


# -- rendering -----------------------------------------------------------------------------------

def _build(run_dirs: Sequence[Path], out: Path | None) -> tuple[list[RuleReport], list[RunInfo]]:
    runs = load_runs(run_dirs)
    cache: dict[Path, dict[str, Path]] = {}
    drawn: dict[tuple[Path, str], str] = {}  # (run, cell) -> the rule its heatmap is drawn under
    reports = []
    groups = by_rule(runs)
    verdicts = own_verdicts(groups)
    for rule, rows in groups.items():
        own = verdicts[rule]
        rep = RuleReport(rule=rule, status=own.status, verdict=own.text, rows=rows,
                         charts=[] if own.shared_with else _charts(rule, rows))
        if own.shared_with:  # the same runs: their charts are drawn under the rule they were first shown for
            rep.heatmap_refs.append(("charts of these runs", own.shared_with))
        if out is not None:
            for title, png, where in _heatmaps(rows, out, cache):
                if where in drawn:
                    rep.heatmap_refs.append((title, drawn[where]))
                else:
                    drawn[where] = rule
                    rep.heatmaps.append((title, png))
        reports.append(rep)
    return reports, [RunInfo.from_run(run) for run in runs]


def render_markdown(reports: Sequence[RuleReport], runs: Sequence[RunInfo] = (), *,
                    chart_files: Mapping[tuple[str, int], str] | None = None, base: Path | None = None) -> str:
    lines = ["# keyramp scenario report", ""]
    if runs:
        lines += _runs_markdown(runs)
    lines += _plans_markdown(runs)
    lines += ["| rule | status | verdict |", "|---|---|---|"]
    lines += [f"| [{r.rule}](#{r.rule.lower()}) | {r.status} | {_md_cell(r.verdict)} |" for r in reports]
    lines.append("")
    for rep in reports:
        lines += [f"## {rep.rule}", "", f"**Verdict ({rep.status}):** {rep.verdict}", ""]
        lines += [f"- `{r.profile}` / `{r.cell}` ({r.kind}): {r.text}" for r in rep.rows]
        lines.append("")
        for i, (title, _) in enumerate(rep.charts):
            if chart_files and (rep.rule, i) in chart_files:
                lines.append(f"![{title}]({chart_files[(rep.rule, i)]})")
        for title, png in rep.heatmaps:
            rel = png.relative_to(base) if base is not None and png.is_relative_to(base) else png
            lines.append(f"![{title}]({rel})")
        lines += [f"- {title}: see [{rule}](#{rule.lower()})" for title, rule in rep.heatmap_refs]
        lines.append("")
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _runs_line(runs: Sequence[RunInfo]) -> str:
    """``1 run, 12 cells, 2 min measured.``, and what a run ran against if not the emulators as they are."""
    targets = "".join(f" {r.path.name} ran against a {r.target}." for r in runs if r.target)
    return (f"{fmt.plural(len(runs), 'run')}, {fmt.plural(sum(r.cells for r in runs), 'cell')}, "
            f"{fmt.duration(sum(r.seconds for r in runs))} measured.{targets}")


def _plans_markdown(runs: Sequence[RunInfo]) -> list[str]:
    """Each planned cell's plan line (modelled), per run that holds plans; nothing when none does."""
    planned = [r for r in runs if r.plans]
    if not planned:
        return []
    lines = ["## Launch plans (modelled)", ""]
    for r in planned:
        lines += [f"**{r.profile}** ({r.path.name}):", "", *(f"- {_md_cell(c)}" for c in r.plans), ""]
    return [*lines, f"_{PLAN_NOTE}_", ""]


def _plans_html(runs: Sequence[RunInfo]) -> str:
    planned = [r for r in runs if r.plans]
    if not planned:
        return ""
    esc = html.escape
    parts = ["<h2 id='plans'>Launch plans <span class='modelled'>(modelled)</span></h2>"]
    for r in planned:
        parts.append(f"<p><b>{esc(r.profile)}</b> ({esc(r.path.name)})</p><ul class='plans'>"
                     + "".join(f"<li class='modelled'>{esc(c)}</li>" for c in r.plans) + "</ul>")
    return "".join([*parts, f"<p><i>{esc(PLAN_NOTE)}</i></p>"])


def _runs_markdown(runs: Sequence[RunInfo]) -> list[str]:
    bad = [r for r in runs if r.status != "complete"]
    lines = [_runs_line(runs)]
    lines += [f"- **{r.profile}** ({r.path.name}) {r.status}: {r.reason or ''}" for r in bad]
    return [*lines, ""]


_CSS = ("body{font:14px system-ui,sans-serif;max-width:70em;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .5em;vertical-align:top}"
        ".st{font-weight:bold;white-space:nowrap}.confirmed{color:#064}.modelled{color:#449}"
        ".not{color:#840}.unsupported,.no{color:#888}.measured{color:#064}li{margin:.3em 0}"
        ".charts{display:flex;flex-wrap:wrap;gap:1em}.chart{background:#fafafa;border:1px solid #eee}"
        "img.heat{max-width:100%;border:1px solid #eee}.bad{color:#a00}")


def _cls(status: str) -> str:
    return status.split()[0].strip("();,")


def render_html(reports: Sequence[RuleReport], runs: Sequence[RunInfo] = (), *, embed_png: bool = True) -> str:
    esc = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>keyramp scenario report</title>",
             f"<style>{_CSS}</style></head><body><h1>keyramp scenario report</h1>"]
    if runs:
        parts.append(f"<p>{html.escape(_runs_line(runs))} Bars: <span style='color:#c0392b'>"
                     "anti-pattern</span>, <span style='color:#1e8449'>best practice</span>, "
                     "<span style='color:#2e5c8a'>both measured in one probe</span>.</p>")
        bad = [r for r in runs if r.status != "complete"]
        if bad:
            parts.append("<ul>" + "".join(f"<li class='bad'><b>{esc(r.profile)}</b> ({esc(r.path.name)}) "
                                          f"{esc(r.status)}: {esc(r.reason or '')}</li>" for r in bad) + "</ul>")
    parts.append(_plans_html(runs))
    parts.append("<table><tr><th>rule</th><th>status</th><th>verdict</th></tr>")
    for rep in reports:
        parts.append(f"<tr><td><a href='#{esc(rep.rule)}'>{esc(rep.rule)}</a></td>"
                     f"<td class='st {_cls(rep.status)}'>{esc(rep.status)}</td><td>{esc(rep.verdict)}</td></tr>")
    parts.append("</table>")
    for rep in reports:
        parts.append(f"<h2 id='{esc(rep.rule)}'>{esc(rep.rule)}</h2><p><b class='{_cls(rep.status)}'>"
                     f"Verdict ({esc(rep.status)}):</b> {esc(rep.verdict)}</p><ul>")
        for r in rep.rows:
            role = f", {esc(r.role)}" if r.role else ""
            parts.append(f"<li class='{_cls(r.kind)}'><code>{esc(r.profile)}</code> / <code>{esc(r.cell)}</code> "
                         f"({esc(r.kind)}{role}): {esc(r.text)}</li>")
        parts.append("</ul><div class='charts'>")
        parts += [svg for _, svg in rep.charts]
        parts.append("</div>")
        for title, png in rep.heatmaps:
            src = png_data_uri(png) if embed_png else esc(str(png))
            parts.append(f"<figure><img class='heat' alt='{esc(title)}' src='{src}'><figcaption>{esc(title)}"
                         "</figcaption></figure>")
        if rep.heatmap_refs:
            parts.append("<ul>" + "".join(f"<li>{esc(title)}: see <a href='#{esc(rule)}'>{esc(rule)}</a></li>"
                                          for title, rule in rep.heatmap_refs) + "</ul>")
    parts.append("</body></html>")
    return "".join(parts)


def _json(reports: Sequence[RuleReport], runs: Sequence[RunInfo], out: Path) -> dict[str, Any]:
    return {
        "schema": 1,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": [{"path": str(r.path), "profile": r.profile, "status": r.status, "reason": r.reason,
                  "rules": list(r.rules), "cells": r.cells, "seconds": r.seconds,
                  "plans": list(r.plans)} for r in runs],
        "rules": {rep.rule: {
            "status": rep.status,
            "verdict": rep.verdict,
            "evidence": [{"profile": r.profile, "cell": r.cell, "backend": r.backend, "role": r.role,
                          "kind": r.kind, "probe": r.probe, "text": r.text, "values": dict(r.values),
                          "run": str(r.run) if r.run else None} for r in rep.rows],
            "charts": [title for title, _ in rep.charts],
            "heatmaps": [str(p.relative_to(out)) if p.is_relative_to(out) else str(p) for _, p in rep.heatmaps],
            "heatmaps_shown_under": [{"title": title, "rule": rule} for title, rule in rep.heatmap_refs],
        } for rep in reports},
    }


#: Scenario reports live in ``<results>/reports/``, out of the way of scripts that pick the
#: newest entry of ``<results>/`` as the newest run.
REPORTS_DIR = "reports"


def default_report_dir(results: Path = Path("results")) -> Path:
    """``results/reports/scenarios-<UTC stamp>-<hex>``: sorted by time, and two runs finishing in
    the same second (CI matrix jobs, one --out) never share a report."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now * 1000) % 1000:03d}Z"
    return Path(results) / REPORTS_DIR / f"scenarios-{stamp}-{secrets.token_hex(2)}"


def report_for_runs(run_dirs: Sequence[Path], *, out: Path | None = None) -> Path:
    """Write ``report.html`` + ``report.md`` + ``report.json`` (+ ``charts/``, ``keyspace/``)
    for scenario runs into ``out`` (default ``results/reports/scenarios-<stamp>``); returns ``out``.

    Runs whose profiles name no ``rules`` contribute nothing; none at all is a ``UsageError``.
    """
    out = Path(out) if out is not None else default_report_dir()
    out.mkdir(parents=True, exist_ok=True)
    reports, runs = _build(run_dirs, out)
    if not reports:
        raise UsageError("no rules found: the runs' profiles name no `rules`")
    charts_dir = out / "charts"
    charts_dir.mkdir(exist_ok=True)
    files: dict[tuple[str, int], str] = {}
    for rep in reports:
        for i, (_, svg) in enumerate(rep.charts):
            name = f"{rep.rule.lower()}-{i}.svg"
            (charts_dir / name).write_text(svg, encoding="utf-8")
            files[(rep.rule, i)] = f"charts/{name}"
    (out / "report.md").write_text(render_markdown(reports, runs, chart_files=files, base=out), encoding="utf-8")
    (out / "report.html").write_text(render_html(reports, runs), encoding="utf-8")
    (out / "report.json").write_text(json.dumps(_json(reports, runs, out), indent=1, default=str), encoding="utf-8")
    return out


def write_report(run_dirs: list[Path], out: Path) -> Path:
    """Kept for callers of the first version: same as ``report_for_runs(run_dirs, out=out)``."""
    return report_for_runs(run_dirs, out=out)


def expand_runs(paths: list[str]) -> list[Path]:
    """Run directories from ``paths``: each a run, or a results directory holding runs (oldest first)."""
    runs: list[Path] = []
    for item in paths:
        p = Path(item)
        if (p / "manifest.json").is_file():
            runs.append(p)
        elif p.is_dir():  # a results directory: every run in it with a manifest, oldest first
            runs.extend(r.path for r in reversed(list_runs(p)) if (r.path / "manifest.json").is_file())
        else:
            raise UsageError(f"{p}: no such run directory")
    if not runs:
        raise UsageError("no run directories found")
    return runs
