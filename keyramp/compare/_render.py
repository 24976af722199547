"""Render a ``Comparison`` as text: the terminal table (rich), Markdown and JSON. JUnit XML is
``_junit``, the static HTML report ``_html``."""

from __future__ import annotations

import json
from typing import Any

from keyramp.compare._model import Comparison
from keyramp.compare._present import (
    VERDICT_COLORS,
    baseline_label,
    grid,
    headline,
    keyspace_table,
    notes,
    ratio_text,
    short_id,
    targets_note,
    value_text,
    verdict_rule,
)

__all__ = ["render_json", "render_markdown", "render_terminal"]

_MARK = {"worse": "🔴 worse", "better": "🟢 better", "same": "same", "n/a": "n/a"}


def render_terminal(cmp: Comparison, console: Any) -> None:
    from rich.markup import escape  # deferred: start-up cost (rich: the table path only)
    from rich.table import Table  # deferred: start-up cost (rich: the table path only)

    table = Table(title="keyramp compare", show_lines=False)
    for column in ("cell", "op", "metric"):
        table.add_column(column, no_wrap=True)
    for i, run in enumerate(cmp.runs):
        label = (f"{baseline_label(cmp)}\n" if cmp.baseline is not None and i == 0 else "") + short_id(run.run_id)
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
            row.append(value_text(value, metric))
            if cmp.baseline is not None and i > 0:
                row.append(escape(ratio_text(verdict)))
                v = verdict.verdict if verdict else ""
                row.append(f"[{VERDICT_COLORS.get(v, 'white')}]{v}[/]" if v else "")
        table.add_row(*row)
    console.print(table)
    if (targets := targets_note(cmp)) is not None:
        console.print(escape(targets), highlight=False)
    if cmp.keyspace:
        ks = Table(title="key space (headline hotspot figures; modelled ones are not measured)")
        ks.add_column("cell")
        ks.add_column("figure")
        for run in cmp.runs:
            ks.add_column(short_id(run.run_id), justify="right")
        for cell, label, modelled, texts in keyspace_table(cmp):
            ks.add_row(escape(cell), escape(label + (" (modelled)" if modelled else "")), *texts)
        console.print(ks)
    if cmp.forecast:
        fc = Table(title="launch forecast (modelled: share of launch operations throttled, low–high)")
        fc.add_column("cell")
        for run in cmp.runs:
            fc.add_column(short_id(run.run_id))
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
                    th.add_row(short_id(run_id), escape(cell), escape(f"{r.name} {r.op} {r.limit:g}"),
                               value_text(r.value), "[green]pass[/]" if r.passed else "[yellow]inconclusive[/]"
                               if r.verdict == "inconclusive" else "[red]FAIL[/]")
        console.print(th)
    if cmp.new_exceptions:
        ne = Table(title="new exception classes (the workload's own; the baseline's cell did not raise them)")
        for column in ("run", "cell", "class", "count", "first occurrence"):
            ne.add_column(column)
        for e in cmp.new_exceptions:
            ne.add_row(short_id(e.run_id), escape(e.cell), escape(e.error_class), str(e.count),
                       escape(f"{e.op}: {e.message}" + (f" at {e.where}" if e.where else "")))
        console.print(ne)
    for note in notes(cmp):
        console.print(f"note: {escape(note)}", highlight=False)
    for warning in cmp.warnings:
        console.print(f"[yellow]warning[/]: {escape(warning)}", highlight=False)
    if cmp.noise:
        console.print(escape(cmp.noise), highlight=False)
    console.print(("[red]" if cmp.exit_code else "[green]") + escape(headline(cmp)) + "[/]")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(cmp: Comparison) -> str:
    """GitHub-flavoured Markdown, suitable for ``$GITHUB_STEP_SUMMARY``."""
    lines = [f"## keyramp compare — {'❌' if cmp.exit_code else '✅'} {_md(headline(cmp))}", ""]
    if (targets := targets_note(cmp)) is not None:
        lines += [f"_{_md(targets)}_", ""]
    header = ["cell", "op", "metric"]
    for i, run in enumerate(cmp.runs):
        header.append((f"{baseline_label(cmp)} " if cmp.baseline is not None and i == 0 else "") + f"`{run.run_id}`")
        if cmp.baseline is not None and i > 0:
            header += ["ratio [95% CI]", "verdict"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" if i < 3 else "---:" for i in range(len(header))) + "|")
    for cell, op, metric, cells in grid(cmp):
        row = [_md(cell), _md(op), metric]
        for i, (value, verdict) in enumerate(cells):
            row.append(value_text(value, metric))
            if cmp.baseline is not None and i > 0:
                row += [_md(ratio_text(verdict)), _MARK.get(verdict.verdict, "") if verdict else ""]
        lines.append("| " + " | ".join(row) + " |")
    if cmp.thresholds:
        lines += ["", "### Thresholds", "", "| run | cell | threshold | value | result |", "|---|---|---|---:|---|"]
        for run_id, by_cell in cmp.thresholds.items():
            for cell, results in by_cell.items():
                for r in results:
                    lines.append(
                        f"| `{run_id}` | {_md(cell)} | `{_md(r.name)} {r.op} {r.limit:g}` | {value_text(r.value)} | "
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
    if notes(cmp):
        lines += ["", *[f"- {_md(n)}" for n in notes(cmp)]]
    if cmp.warnings:
        lines += ["", *[f"> ⚠️ {_md(w)}" for w in cmp.warnings]]
    lines += ["", f"<sub>verdict: {_md(verdict_rule(cmp.options))}. {_md(cmp.noise)}</sub>", ""]
    return "\n".join(lines)


def render_json(cmp: Comparison) -> str:
    return json.dumps(cmp.to_dict(), indent=2, default=str) + "\n"
