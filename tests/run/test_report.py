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
    for name in ("cell", "ops/s", "err %", "p50 ms", "p99 ms", "key space*", "forecast**", "thresholds"):
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

    from keyramp.results._plan_doc import CellPlan

    run = make_run(tmp_path, cells=[("datastore", "sequential"), ("datastore", "random"), ("bigtable", "random")])
    add_plans(run, {"c00-datastore-sequential": ("datastore", "sequential"),
                    "c01-datastore-random": ("datastore", "random")})
    summary = json.loads((run / "summary.json").read_text())
    text = render_table(RunSummary.from_json(summary))
    lines = {line.split()[0]: line for line in text.splitlines() if "  plan* " in line}
    assert set(lines) == {"c00-datastore-sequential", "c01-datastore-random"}  # the unplanned cell has none
    seq = CellPlan.from_json(summary["cells"]["c00-datastore-sequential"]["plan"])
    assert not seq.reachable and seq.fix is not None and seq.fix.kind == "shards"
    assert f"not reachable — fix: shards {seq.fix.value} ({seq.fix.design})" in lines["c00-datastore-sequential"]
    random = lines["c01-datastore-random"]  # Google's rule recommended; the faster ramp labelled beside it
    assert "reachable — start 500 ops/s, +50 % every 5 min" in random and "(Google's 500/50/5)" in random
    assert "; modelled, faster than Google's published rule: start 500 ops/s, +50 % every " in random
    assert all("/h, ramp $" in line for line in lines.values())
    assert "* plan modelled at the [launch] peak" in text and "None" not in text and "nan" not in text
    plain = RunSummary.from_json(json.loads((make_run(tmp_path / "b") / "summary.json").read_text()))
    assert render_table(plain).count("plan*") == 0
