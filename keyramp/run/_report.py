"""Terminal output: the live status line during a run and the summary table after it."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console, JustifyMethod
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from keyramp.core import fmt
from keyramp.forecast import forecast_short, keys_note
from keyramp.keyspace import keyspace_headline
from keyramp.profile import WORKLOAD_ERRORS
from keyramp.results import (
    LIMIT_WORDS,
    MACHINE_LIMITED,
    CellSummary,
    ExceptionExample,
    Latency,
    OpStats,
    RunObserver,
    RunSummary,
    cell_exceptions,
    counts_text,
    errors_text,
    generator_limited,
    limit_text,
    limit_word,
)
from keyramp.run._report_plan import plan_lines

if TYPE_CHECKING:
    from keyramp.profile import Cell
    from keyramp.results import TimeseriesRow

__all__ = ["Console", "LiveStatus", "plan_lines", "render_table", "summary_table"]


def _mean_target(cell: CellSummary) -> float | None:
    timeline = cell.target_ops_per_s
    if not timeline:
        return None
    return sum(p.target or 0.0 for p in timeline) / len(timeline)


def _is_workload_errors(name: str) -> bool:
    return name.rpartition(".")[2] == WORKLOAD_ERRORS


def _threshold_verdict(cell: CellSummary) -> str:
    """The thresholds column (rich markup): ``workload errors`` in red when the workload raised
    its own exceptions beyond what the profile allows, ``FAIL …``, ``inconclusive …``, ``pass``."""
    if cell.reason == "workload error":
        return "[bold red]failed: workload error[/bold red]"
    checks = cell.thresholds
    if not checks:
        return "-"
    # a summary from before the verdict (issue 28) has only ``passed``
    failed = [t.name for t in checks if (t.verdict or ("pass" if t.passed else "fail")) == "fail"]
    unsure = [t.name for t in checks if t.verdict == "inconclusive"]
    parts = (["[bold red]workload errors[/bold red]"] if any(map(_is_workload_errors, failed)) else [])
    failed = [n for n in failed if not _is_workload_errors(n)]
    parts += (["FAIL " + ", ".join(failed)] if failed else []) + (
        ["inconclusive " + ", ".join(unsure)] if unsure else [])
    return "; ".join(parts) or "pass"


# (header, justify, drop order when the console is too narrow: 0 = always shown)
_COLUMNS: tuple[tuple[str, JustifyMethod, int], ...] = (
    ("cell", "left", 0), ("ops/s", "right", 0), ("target", "right", 2), ("count", "right", 1),
    ("errors", "left", 0), ("p50 ms", "right", 0), ("p95 ms", "right", 4), ("p99 ms", "right", 0),
    ("p99.9 ms", "right", 3), ("late", "right", 6), ("dropped", "right", 5), ("key space*", "left", 0),
    ("forecast**", "left", 0), ("thresholds", "left", 0),
)


def _row(cell_id: str, cell: CellSummary, limited: bool) -> list[str]:
    total = cell.total or OpStats(count=0)  # a cell that failed before its measured phase has none
    lat = total.latency_ms or Latency()
    target = _mean_target(cell)
    return [
        cell_id + (" (incomplete)" if cell.incomplete else "") + (" †" if limited else ""),
        f"{total.ops_per_s or 0:.0f}",
        "-" if target is None else f"{target:.0f}",
        fmt.count(total.count),
        errors_text(total) or fmt.percent(total.error_rate or 0),
        fmt.ms_figure(lat.p50),
        fmt.ms_figure(lat.p95),
        fmt.ms_figure(lat.p99),
        fmt.ms_figure(lat.p999),
        fmt.count(total.late or 0),
        fmt.count(total.dropped or 0),
        keyspace_headline(cell.keyspace),
        forecast_short(cell.forecast, deciding=False) + (" ‡" if keys_note(cell.forecast) else ""),
        _threshold_verdict(cell),
    ]


def _fitting(rows: Sequence[Sequence[str]], width: int | None) -> list[int]:
    """Indexes of the columns to show: on a narrow console the least-read ones go first
    (squeezed, every column would be cut to "…"), and the caption says which."""
    shown = list(range(len(_COLUMNS)))
    if width is None:
        return shown
    # each column: its widest text (markup excluded) + padding and border
    need = {i: max(len(_COLUMNS[i][0]), max((Text.from_markup(r[i]).cell_len for r in rows), default=0)) + 3
            for i in shown}
    for drop in sorted((rank, i) for i, (_, _, rank) in enumerate(_COLUMNS) if rank):
        if 1 + sum(need[i] for i in shown) <= width:
            break
        shown.remove(drop[1])
    return shown


def summary_table(summary: RunSummary, *, width: int | None = None) -> Table:
    """One row per cell: throughput vs target, latency percentiles, errors, hotspot share,
    forecast and thresholds; ``width``: leave out the least-read columns to fit it."""
    title = f"keyramp run {summary.run_id or ''} · {summary.profile_name or ''} · {summary.status or '?'}"
    if summary.reason:
        title += f" ({summary.reason})"
    if summary.target is not None:  # never mistaken for the emulator's or the cloud's figures
        title += f"\ntarget: {summary.target.describe()}"
    rows: list[list[str]] = []
    limited_cells: list[tuple[str, str]] = []
    recorded: list[tuple[str, str]] = []  # cells forecast from the keys they recorded, and why
    for cell_id, cell in summary.cells.items():
        if note := keys_note(cell.forecast):
            recorded.append((cell_id, note))
        limited = cell.total is not None and cell.probe is None and generator_limited(cell)
        if limited:
            limited_cells.append((cell_id, limit_text(cell)))
        rows.append(_row(cell_id, cell, limited))
    shown = _fitting(rows, width)
    table = Table(title=title, title_justify="left", show_lines=False)
    for i in shown:
        name, justify, _ = _COLUMNS[i]
        table.add_column(name, justify=justify, no_wrap=name == "cell")
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    left_out = [name for i, (name, _, _) in enumerate(_COLUMNS) if i not in shown]
    table.caption = (
        "latency from intended start (coordinated-omission corrected) · "
        "* measured key-space pattern: append ×n = new keys land at n places (n hot ranges a split cannot cool), "
        "hot range = share of ops on the busiest 1 % of keys, spread = neither · "
        "** modelled launch forecast (\\[launch]): verdict and share of launch operations throttled, "
        "low–high over the parameter ranges (uncertain: the band reaches ok and worse; at_risk-hotspot: it throttles "
        "everywhere, at_risk to hotspot; keyramp forecast RUN names the parameter that decides)"
    ) + (f" · narrow console: {', '.join(left_out)} left out (all in report.txt)" if left_out else "") + "".join(
        f"\n† {line}" for line in _limit_legend(limited_cells) + grouped_footnotes(limited_cells, total=len(rows))
    ) + "".join(
        f"\n‡ {cell_id} forecast: {escape(note)}" for cell_id, note in recorded) + "".join(
        f"\n§ {cell_id} {escape(c.store_model.line())}" for cell_id, c in summary.cells.items()
        if c.store_model is not None)
    return table


def _limit_legend(limited: Sequence[tuple[str, str]]) -> list[str]:
    """What each limit word among the footnotes means (``results._generator.LIMIT_WORDS``)."""
    return [f"{word} = {meaning}" for word, meaning in LIMIT_WORDS.items()
            if any(text.startswith(f"{word}: ") for _, text in limited)]


def grouped_footnotes(notes: Sequence[tuple[str, str]], *, total: int) -> list[str]:
    """One footnote per reason, not per cell: cells whose reasons differ only in their figures
    share a line, each figure shown as the range the cells spanned ("0.30–0.54 of a core")."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for cell_id, reason in notes:
        groups.setdefault(fmt.merge_figures([reason])[0], []).append((cell_id, reason))
    lines = []
    for members in groups.values():
        _, text = fmt.merge_figures([reason for _, reason in members])
        if len(members) == 1:
            lines.append(f"{members[0][0]} {text}")
            continue
        who = f"all {total} cells" if len(members) == total else ", ".join(c for c, _ in members)
        lines.append(f"{who}: {text}")
    return lines


def workload_exceptions(summary: RunSummary) -> list[str]:
    """The workload's own exceptions of every cell, for the end of the run: per cell and
    class, the first occurrence's message and traceback (user frames, file:line) and the count."""
    lines: list[str] = []
    for cell_id, cell in summary.cells.items():
        stopped = cell.reason == "workload error"
        for i, (example, count) in enumerate(cell_exceptions(cell)):
            if stopped and i == 0:
                lines.append(f"✗ {cell_id}: failed: workload error: every one of its {count:,} warm-up "
                             "operations raised; stopped before its measured phase")
            else:
                lines.append(f"✗ {cell_id}: {example.error_class} raised by the workload {count:,} times; the first:")
            lines.append("  " + example.text().replace("\n", "\n  "))
    return lines


def render_table(summary: RunSummary, *, width: int = 200) -> str:
    """The summary table as plain text, then the workload's own exceptions (report.txt and
    non-terminal output)."""
    table = summary_table(summary)  # every column: report.txt is the full record
    # as wide as the widest row needs, so no cell is cut ("forecast.throttled_fract…"); the caption wraps
    natural = Console(file=io.StringIO(), width=100_000, color_system=None).measure(table).maximum
    buffer = io.StringIO()
    console = Console(file=buffer, width=max(width, natural), color_system=None, force_terminal=False)
    console.print(table)
    for line in [*plan_lines(summary), *workload_exceptions(summary)]:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return buffer.getvalue()


class LiveStatus(RunObserver):
    """A one-line live status: cell, phase or elapsed time, achieved vs target rate, p99, errors."""

    def __init__(self, console: Console, *, total_cells: int, enabled: bool = True) -> None:
        self.console = console
        self.total = total_cells
        self.enabled = enabled
        self._live: Live | None = None
        self._last_plain = -10.0

    def __enter__(self) -> LiveStatus:
        if self.enabled and self.console.is_terminal:
            self._live = Live(Text(""), console=self.console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None

    def _show(self, text: str) -> None:
        if not self.enabled:
            return
        if self._live is not None:
            self._live.update(Text.from_markup(text))
        else:
            self.console.print(text, highlight=False, soft_wrap=True)

    def cell_phase(self, cell: Cell, what: str) -> None:
        if what == "measuring":
            return  # the first second says so
        self._show(f"[bold]{cell.index + 1}/{self.total}[/bold] {cell.id}: {what}")

    def _exception(self, cell: Cell, example: ExceptionExample, what: str) -> None:
        """The workload's own exception, with its traceback: printed as it first happens."""
        self.console.print(f"[red]✗[/red] {cell.id}: {what}", highlight=False)
        self.console.print("  " + example.text().replace("\n", "\n  "), markup=False, highlight=False,
                           soft_wrap=True)

    def second(self, cell: Cell, rows: Sequence[TimeseriesRow], elapsed: float, *, users: int) -> None:
        if self.enabled:
            for op_row in rows[:-1]:
                for example in op_row.exceptions:
                    self._exception(cell, example, f"the workload raised {example.error_class} (first occurrence; "
                                                   "the run goes on, counting them as workload errors)")
        row = rows[-1]
        width = 20
        done = min(width, int(width * elapsed / cell.duration_s))
        bar = "█" * done + "·" * (width - done)
        target = "" if row.target_ops_per_s is None else f" / {row.target_ops_per_s:.0f}"
        failed = counts_text(row.error_classes)
        text = (
            f"[bold]{cell.index + 1}/{self.total}[/bold] {cell.id} {bar} {elapsed:4.0f}/{cell.duration_s:.0f}s "
            f"{row.count}{target} ops/s  p99 {fmt.ms(row.p99_ms if row.count else None)}  errors {row.errors}"
            + (f" ({escape(failed)})" if failed else "") + (f"  dropped {row.dropped}" if row.dropped else "")
        )
        if self._live is None and elapsed - self._last_plain < 5:
            return  # not a terminal: one line every 5 s is plenty for CI logs
        self._last_plain = elapsed
        self._show(text)

    def cell_finished(self, cell: Cell, summary: CellSummary) -> None:
        if not self.enabled:
            return
        self._last_plain = -10.0
        if summary.reason == "workload error":
            example, ops = cell_exceptions(summary)[0]
            self._exception(cell, example, f"[bold red]failed: workload error[/bold red] — every one of its {ops:,} "
                                           "warm-up operations raised; stopped before its measured phase, going on "
                                           "with the next cell")
            return
        total = summary.total or OpStats(count=0)
        p99 = total.latency_ms.p99 if total.latency_ms is not None else None
        failed = errors_text(total)
        self.console.print(
            f"[green]✓[/green] {cell.index + 1}/{self.total} {cell.id}: {fmt.count(total.count)} ops, "
            f"{fmt.ops_per_s(total.ops_per_s or 0)}, p99 {fmt.ms(p99)}, errors {fmt.count(total.errors or 0)}"
            + (f" ({escape(failed)})" if failed else ""),
            highlight=False, soft_wrap=True,  # one line each in a CI log, never cut mid-word
        )
        for line in diagnosis(summary):
            self.console.print(line, highlight=False, soft_wrap=True)


def diagnosis(summary: CellSummary) -> list[str]:
    """The line under a finished cell when the generator could not be trusted, or the store's errors
    cost the schedule (rich markup; empty when the cell kept up): what happened and what to change."""
    word, generator = limit_word(summary), summary.generator
    if generator is not None and generator.store_errors:
        # the seconds without throughput were the seconds the store failed: never the generator's fix
        return [f"[yellow]⚠ {escape(generator.reason or '')}[/yellow] — look at the store's errors (why it "
                "aborted or timed out), not at the load generator"]
    if word is None or summary.total is None or summary.probe is not None:
        return []
    fix = ("rerun on a quieter machine, or with the emulator on another one" if word == MACHINE_LIMITED
           else "its latency is not the store's: lower the rate, use driver = \"grpc\", or add --workers")
    return [f"[yellow]⚠ {escape(limit_text(summary))}[/yellow] — {fix}"]
