from __future__ import annotations

import io
import json
from pathlib import Path

from _synthetic import make_run
from rich.console import Console

from keyramp.results._summary import RunSummary
from keyramp.run._report import render_table, summary_table


def _summary(tmp_path: Path) -> dict:
    run = make_run(tmp_path, cells=[("bigtable", "sequential"), ("firestore-datastore", "hashed_prefix")])
    return json.loads((run / "summary.json").read_text())


def _printed(summary: dict, width: int) -> str:
    """What ``keyramp run`` prints on a console this wide."""
    buffer = io.StringIO()
    table = summary_table(RunSummary.from_json(summary), width=width)
    Console(file=buffer, width=width, color_system=None).print(table)
    return buffer.getvalue()


def _header(text: str) -> str:
    return next(line for line in text.splitlines() if "cell" in line and "ops/s" in line)


def test_a_wide_console_shows_every_column(tmp_path: Path) -> None:
    text = _printed(_summary(tmp_path), 220)
    header = _header(text)
    for name in ("target", "count", "p95 ms", "p99.9 ms", "late", "dropped", "forecast**", "thresholds"):
        assert name in header
    assert "left out" not in text and "…" not in header


def test_a_narrow_console_leaves_out_the_least_read_columns_and_says_so(tmp_path: Path) -> None:
    summary = _summary(tmp_path)
    header = _header(_printed(summary, 120))
    # What a reader needs to judge the run stays whole; nothing is squeezed to "…".
    for name in ("cell", "ops/s", "errors", "p50 ms", "p99 ms", "key space*", "forecast**", "thresholds"):
        assert name in header
    assert "…" not in header and "count" not in header
    text = _printed(summary, 120)
    assert "left out (all in report.txt)" in " ".join(text.split())
    # Columns go in their drop order: a wider console keeps more of them.
    wider = _header(_printed(summary, 150))
    kept = [name for name in ("count", "target", "p99.9 ms", "p95 ms", "dropped", "late") if name in wider]
    narrow = [name for name in ("count", "target", "p99.9 ms", "p95 ms", "dropped", "late") if name in header]
    assert len(kept) > len(narrow)
    assert kept == ["count", "target", "p99.9 ms", "p95 ms", "dropped", "late"][-len(kept):]


def test_report_txt_keeps_every_column_at_its_width(tmp_path: Path) -> None:
    header = _header(render_table(RunSummary.from_json(_summary(tmp_path))))
    assert "count" in header and "late" in header and "dropped" in header


def test_errors_are_named_by_class_with_their_shares(tmp_path: Path) -> None:
    """The table and report.txt name the store's errors ("19.6 % ABORTED"), not only a rate."""
    run = make_run(tmp_path, cells=[("firestore", "random")], error_rate={"insert": 0.4, "read": 0.0})
    summary = json.loads((run / "summary.json").read_text())
    total = summary["cells"]["c00-firestore-random"]["total"]
    aborted = total["errors"] - 3
    total["errors_by_class"] = {"ABORTED": {"count": aborted}, "DEADLINE_EXCEEDED": {"count": 3}}
    share = f"{100 * aborted / total['count']:.1f} % ABORTED"
    for text in (_printed(summary, 220), render_table(RunSummary.from_json(summary))):
        row = next(line for line in text.splitlines() if "c00-firestore-random" in line)
        assert f"│ {share}, {100 * 3 / total['count']:.2g} % DEADLINE_EXCEEDED │" in row
    clean = _printed(_summary(tmp_path / "clean"), 220)
    assert "│ 0 %" in clean and "ABORTED" not in clean


def test_report_txt_never_cuts_a_cell(tmp_path: Path) -> None:
    summary = _summary(tmp_path)
    cell = next(iter(summary["cells"].values()))
    cell["thresholds"] = [{"name": "forecast.throttled_fraction.mid", "op": "<", "limit": 0.05, "value": 0.5,
                           "passed": False, "verdict": "fail"},
                          {"name": "insert.service_p99_ms", "op": "<", "limit": 5, "value": 9, "passed": False,
                           "verdict": "fail"}]
    text = render_table(RunSummary.from_json(summary), width=120)
    assert "FAIL forecast.throttled_fraction.mid, insert.service_p99_ms" in text
    table = text.split("latency from intended start")[0]
    assert "…" not in table


def test_a_run_stopped_before_any_cell_still_prints_its_table() -> None:
    text = _printed({"run_id": "r", "profile_name": "p", "status": "interrupted", "cells": {}}, 80)
    assert "interrupted" in text and "cell" in text


def test_the_key_space_headline_and_recorded_keys_are_in_the_table(tmp_path: Path) -> None:
    summary = _summary(tmp_path)
    seq, hashed = summary["cells"].values()
    seq["keyspace"] = {"samples": 3000, "append_points": 1, "append_fraction": 1.0, "hottest_1pct_share": 0.03}
    hashed["keyspace"] = {"samples": 3000, "append_points": None, "hottest_1pct_share": 0.012}
    why = "a Python workload writes its own [keys]: the keys it really wrote are projected"  # [..]: no markup
    hashed["forecast"] = {"verdict": "ok", "throttled_fraction": {"low": 0.0, "mid": 0.0, "high": 0.0},
                          "projection": {"keys": "recorded", "why": why}}
    text = " ".join(render_table(RunSummary.from_json(summary)).split())
    # The headline reads the shape, not the 0.03 a rebuilt range gives a sequential stream.
    assert "│ append ×1 │" in text and "│ spread │" in text and "0.03" not in text
    assert "ok 0 % ‡" in text and f"‡ {list(summary['cells'])[1]} forecast: from the recorded keys: {why}" in text


def test_footnotes_share_a_line_when_only_their_figures_differ() -> None:
    from keyramp.run._report import grouped_footnotes

    reason = "machine-limited: {busy}% of its cores busy (busiest load process {core} of a core)"
    notes = [(f"c0{i}", reason.format(busy=100, core=core)) for i, core in enumerate(["0.32", "0.54", "0.30"])]
    notes.append(("c03", "generator-limited: 12% of the schedule dropped"))
    lines = grouped_footnotes(notes, total=5)
    assert lines == ["c00, c01, c02: machine-limited: 100% of its cores busy (busiest load process 0.30–0.54 "
                     "of a core)", "c03 generator-limited: 12% of the schedule dropped"]
    assert grouped_footnotes(notes[:3], total=3)[0].startswith("all 3 cells: machine-limited: 100% of")


def test_planned_cells_get_one_plan_line_each_under_the_table(tmp_path: Path) -> None:
    """A run whose summary holds plans (real ``plan_cell`` plans: sequential ids need shards, random
    ids ramp): report.txt has one modelled line per planned cell, the fix or the ramp and the cost."""
    from _plans import add_plans

    from keyramp.results._plan_doc import CellLaunchPlan

    run = make_run(tmp_path, cells=[("datastore", "sequential"), ("datastore", "random"), ("bigtable", "random")])
    add_plans(run, {"c00-datastore-sequential": ("datastore", "sequential"),
                    "c01-datastore-random": ("datastore", "random")})
    summary = json.loads((run / "summary.json").read_text())
    text = render_table(RunSummary.from_json(summary))
    lines = {line.split()[0]: line for line in text.splitlines() if "  plan* " in line}
    assert set(lines) == {"c00-datastore-sequential", "c01-datastore-random"}  # the unplanned cell has none
    seq = CellLaunchPlan.from_json(summary["cells"]["c00-datastore-sequential"]["plan"])
    assert not seq.reachable and seq.fix is not None and seq.fix.kind == "shards"
    assert f"not reachable — fix: shards {seq.fix.value} ({seq.fix.design})" in lines["c00-datastore-sequential"]
    random = lines["c01-datastore-random"]  # Google's rule recommended; the faster ramp labelled beside it
    assert "reachable — start 500 ops/s, +50 % every 5 min" in random and "(Google's 500/50/5)" in random
    assert "; modelled, faster than Google's published rule: start 500 ops/s, +50 % every " in random
    assert all("/h, ramp $" in line for line in lines.values())
    assert "* plan modelled at the [launch] peak" in text and "None" not in text and "nan" not in text
    plain = RunSummary.from_json(json.loads((make_run(tmp_path / "b") / "summary.json").read_text()))
    assert render_table(plain).count("plan*") == 0


def test_the_live_line_and_the_finished_cell_name_the_stores_errors() -> None:
    """The live status line names the second's errors by class, the finished-cell line their shares;
    a second in which nothing completed has no p99 (never "p99 0.0 ms")."""
    from types import SimpleNamespace

    from keyramp.results._rows import TimeseriesRow
    from keyramp.run._report import LiveStatus

    buffer = io.StringIO()
    live = LiveStatus(Console(file=buffer, width=100, color_system=None), total_cells=1)
    cell = SimpleNamespace(index=0, id="c00-firestore-random", duration_s=10.0)

    def row(count: int, classes: dict[str, int]) -> TimeseriesRow:
        return TimeseriesRow(cell=cell.id, op="*", second=0, count=count, errors=sum(classes.values()), p50_ms=3.0,
                             p99_ms=12.0 if count else 0.0, service_p99_ms=11.0, max_ms=15.0,
                             target_ops_per_s=100.0, late=0, dropped=0, error_classes=classes)

    with live:
        live.second(cell, [row(96, {"ABORTED": 12, "DEADLINE_EXCEEDED": 1})], 6.0, users=10)  # type: ignore[arg-type]
        live.second(cell, [row(0, {})], 12.0, users=10)  # type: ignore[arg-type]
    lines = buffer.getvalue().splitlines()
    assert "errors 13 (12 ABORTED, 1 DEADLINE_EXCEEDED)" in lines[0] and "p99 12 ms" in lines[0]
    assert "p99 – " in lines[1] and "0.0 ms" not in lines[1]
    summary = RunSummary.from_json({"cells": {cell.id: {"total": {
        "count": 400, "errors": 80, "error_rate": 0.2, "errors_by_class": {"ABORTED": {"count": 78},
                                                                          "UNAVAILABLE": {"count": 2}},
        "ops_per_s": 40.0, "latency_ms": {"p99": 2966.0}}}}})
    live.cell_finished(cell, summary.cells[cell.id])  # type: ignore[arg-type]
    done = buffer.getvalue().splitlines()[-1]
    assert done.endswith("400 ops, 40 ops/s, p99 2,966 ms, errors 80 (19.5 % ABORTED, 0.5 % UNAVAILABLE)"), done
