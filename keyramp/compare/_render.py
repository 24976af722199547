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
    threshold_rows,
    value_text,
    verdict_label,
    verdict_rule,
    warning_groups,
)
from keyramp.core import fmt

__all__ = ["render_json", "render_markdown", "render_terminal"]

_MARK = {"worse": "🔴 worse", "better": "🟢 better", "same": "same", "n/a": "n/a"}


_TERMINAL_RESULT = {"pass": "[green]pass[/]", "inconclusive": "[yellow]inconclusive[/]", "FAIL": "[red]FAIL[/]"}


def render_terminal(cmp: Comparison, console: Any) -> None:
    """The answer first (the verdict line, the thresholds), then the evidence, the warnings grouped,
    and the verdict line again last, where a CI log's tail shows it."""
    from rich.markup import escape  # deferred: start-up cost (rich: the table path only)
    from rich.table import Table  # deferred: start-up cost (rich: the table path only)

    color = {"fail": "[red]", "inconclusive": "[yellow]"}.get(cmp.verdict, "[green]")
    console.print(color + escape(headline(cmp)) + "[/]")
    if (targets := targets_note(cmp)) is not None:  # a store model's errors are the model's
        console.print(escape(targets), highlight=False)
    if cmp.thresholds:
        th = Table(title="thresholds", title_justify="left")
        for column in ("run", "cell", "threshold", "value", "result"):
            th.add_column(column)
        for run_id, cell, name, value, result, note in threshold_rows(cmp):
            th.add_row(short_id(run_id), escape(cell), escape(name), value,
                       _TERMINAL_RESULT[result] + (f" ({escape(note)})" if note and result != "pass" else ""))
        console.print(th)
    console.print(_side_by_side(cmp, Table, escape))
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
    for group in warning_groups(cmp):
        console.print(f"[yellow]warning[/] ({escape(group.heading)}): {escape(group.line())}", highlight=False)
    if cmp.noise:
        console.print(escape(cmp.noise), highlight=False)
    console.print(color + escape(headline(cmp)) + "[/]")


def _side_by_side(cmp: Comparison, table_class: Any, escape: Any) -> Any:
    table = table_class(title="side by side", show_lines=False)
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
                v = verdict_label(verdict)
                row.append(f"[{VERDICT_COLORS.get(verdict.verdict if verdict else '', 'white')}]{v}[/]" if v else "")
        table.add_row(*row)
    return table


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(cmp: Comparison) -> str:
    """GitHub-flavoured Markdown, suitable for ``$GITHUB_STEP_SUMMARY``: the verdict and the
    thresholds first, the warnings grouped and folded (``<details>``), then the evidence."""
    icon = {"fail": "❌", "inconclusive": "⚠️"}.get(cmp.verdict, "✅")
    lines = [f"## keyramp compare — {icon} {_md(headline(cmp))}", ""]
    if (targets := targets_note(cmp)) is not None:
        lines += [f"_{_md(targets)}_", ""]
    if cmp.thresholds:
        lines += ["### Thresholds", "", "| run | cell | threshold | value | result |", "|---|---|---|---:|---|"]
        for run_id, cell, name, shown, result, note in threshold_rows(cmp):
            mark = {"pass": "✅ pass", "inconclusive": "⚠ inconclusive", "FAIL": "❌ fail"}[result]
            lines.append(f"| `{run_id}` | {_md(cell)} | `{_md(name)}` | {shown} | {mark}"
                         + (f" ({_md(note)})" if note and result != "pass" else "") + " |")
        lines.append("")
    groups = warning_groups(cmp)
    if groups:
        lines += [f"<details><summary>⚠️ {fmt.plural(len(cmp.alerts), 'warning')}: "
                  + _md(", ".join(dict.fromkeys(g.heading for g in groups))) + "</summary>", ""]
        lines += [f"- **{_md(g.heading)}** — {_md(g.line())}" for g in groups]
        lines += ["", "</details>", ""]
    header = ["cell", "op", "metric"]
    for i, run in enumerate(cmp.runs):
        header.append((f"{baseline_label(cmp)} " if cmp.baseline is not None and i == 0 else "") + f"`{run.run_id}`")
        if cmp.baseline is not None and i > 0:
            header += ["ratio [95% CI]", "verdict"]
    lines += ["### Side by side", "", "| " + " | ".join(header) + " |",
              "|" + "|".join("---" if i < 3 else "---:" for i in range(len(header))) + "|"]
    for cell, op, metric, cells in grid(cmp):
        row = [_md(cell), _md(op), metric]
        for i, (value, verdict) in enumerate(cells):
            row.append(value_text(value, metric))
            if cmp.baseline is not None and i > 0:
                row += [_md(ratio_text(verdict)), _MARK.get(verdict.verdict, "") if verdict else ""]
                if verdict_label(verdict) == "inconclusive":
                    row[-1] = "⚠ inconclusive"
        lines.append("| " + " | ".join(row) + " |")
    lines += _markdown_tables(cmp)
    if notes(cmp):
        lines += ["", *[f"- {_md(n)}" for n in notes(cmp)]]
    lines += ["", f"<sub>verdict: {_md(verdict_rule(cmp.options))}. {_md(cmp.noise)}</sub>", ""]
    return "\n".join(lines)


def _markdown_tables(cmp: Comparison) -> list[str]:
    """The launch forecast, the key space and new exception classes, as Markdown sections."""
    lines: list[str] = []
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
    return lines


def render_json(cmp: Comparison) -> str:
    return json.dumps(cmp.to_dict(), indent=2, default=str) + "\n"
