"""Scenario profiles, [workload.query] validation and the per-rule report."""

from __future__ import annotations

import html
import json
import re
import uuid
from pathlib import Path

import pytest

from keyramp.core._errors import UsageError
from keyramp.profile._files import collect_profiles
from keyramp.profile._profile import parse_profile
from keyramp.scenarios import report_for_runs
from keyramp.scenarios._report import collect, verdict, write_report
from keyramp.workload._workload import query_spec

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "profiles" / "scenarios"


def test_every_rule_is_covered_by_a_scenario_or_the_readme() -> None:
    rules = set(re.findall(r"\| (BP-[A-Z]+-\d+) \|", (ROOT / "docs/best-practices.md").read_text()))
    assert len(rules) >= 30
    profiles = collect_profiles([str(SCENARIOS)])
    covered = {r for p in profiles for r in p.data["rules"]}
    readme = (SCENARIOS / "README.md").read_text()
    missing = sorted(r for r in rules if r not in covered and r not in readme)
    assert not missing, missing


def test_scenario_profiles_are_valid_short_and_named_by_rule() -> None:
    profiles = collect_profiles([str(SCENARIOS)])
    assert len(profiles) >= 20
    for p in profiles:
        assert p.data["duration_s"] <= 60, p.name
        assert p.data["rules"], p.name
        assert p.path is not None and p.path.stem.startswith(p.data["rules"][0].lower())


def _planned_s(profile) -> float:
    """Cell durations + warm-ups (the first Locust cell on each emulator warms up ≥ 10 s)."""
    from keyramp.backends import EMULATOR_FOR
    from keyramp.targets._emulator_target import FIRST_WARMUP_S as first_warmup

    data, total, warmed = profile.data, 0.0, set()
    for cell in profile.cells:
        total += cell.duration_s
        if data["workload"]["probe"] == "none" and data["schedule"]["warmup_s"] > 0:
            first = EMULATOR_FOR[cell.backend] not in warmed
            total += max(data["schedule"]["warmup_s"], first_warmup if first else 0.0)
            warmed.add(EMULATOR_FOR[cell.backend])
    return total


def test_every_scenario_fits_in_a_minute_and_the_readme_states_the_total() -> None:
    profiles = collect_profiles([str(SCENARIOS)])
    planned = {p.name: _planned_s(p) for p in profiles}
    assert max(planned.values()) <= 60, planned
    total_min = round(sum(planned.values()) / 60)
    assert f"at most {total_min} min" in (SCENARIOS / "README.md").read_text(), total_min


def test_query_table_maps_to_query_spec() -> None:
    raw = {"name": "q", "workload": {"ops": {"query": 1.0}, "query": {
        "field": "n", "op": ">=", "value": 3, "order_by": "n", "paginate": "offset", "page": 150,
        "keys_only": True}}}
    q = parse_profile(raw).workload.query
    spec = query_spec(q, limit=20, page=q.page)
    assert (spec.field, spec.op, spec.value, spec.offset, spec.keys_only) == ("n", ">=", 3, 3000, True)


@pytest.mark.parametrize("query, message", [
    ({"op": "~"}, "op: one of"),
    ({"field": "n"}, "needs a value"),
    ({"paginate": "cursor"}, "page ≥ 1"),
    ({"keys_only": True, "projection": ["a"]}, "exclude each other"),
    ({"ancestor": True}, "entity_group_size"),
    ({"nope": 1}, "unknown field 'nope'"),
])
def test_bad_query_table_is_a_usage_error(query: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_profile({"name": "q", "workload": {"query": query}})


def test_unknown_probe_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown probe 'x'"):
        parse_profile({"name": "p", "workload": {"probe": "x"}})
    with pytest.raises(UsageError, match="unknown parameter"):
        parse_profile({"name": "p", "workload": {"probe": "batch", "probe_params": {"keys": 2}}})


def _run(tmp: Path, name: str, rules: list[str], cell: dict, description: str = "") -> Path:
    run = tmp / name
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"profile_name": name, "profile": {
        "rules": rules, "description": description}}))
    (run / "summary.json").write_text(json.dumps({"status": "complete", "cells": {
        "c00-datastore-random": {"backend": "datastore", **cell}}}))
    return run


def _contention(keys: int, aborted: int, committed_per_s: float = 5.0) -> dict:
    return {"probe": {"name": "contention", "backend": "datastore", "result": {
        "threads": 8, "keys": keys, "assign": "per-thread", "same_group": False, "op": "transaction",
        "committed": 10, "committed_per_s": committed_per_s, "aborted": aborted, "abort_rate": 0.5,
        "latency_ms": {"p50": 1.0, "p99": 2.0}, "error_samples": {}}}}


def _keyspace(hot1: float, throttled: float) -> dict:
    return {"keyspace": {"hottest_1pct_share": hot1, "append_fraction": 1.0, "moving_hotspot": True,
                         "model": {"peak_tablets": 3, "max_throttled_fraction": throttled}}}


def _consistency(stale: float, attempts: int = 100, consistency: float = 0.5) -> dict:
    return {"probe": {"name": "consistency", "backend": "datastore", "result": {
        "attempts": attempts, "emulator_consistency": consistency, "expected_stale_rate": 1 - consistency,
        "global_stale": round(stale * attempts), "global_stale_rate": stale, "ancestor_stale_rate": 0.0,
        "lookup_stale_rate": 0.0, "queries_until_visible": {"mean": 1.9, "max": 7, "never_within_cap": 0}}}}


def test_report_gives_measured_and_not_observable_verdicts(tmp_path: Path) -> None:
    runs = [
        _run(tmp_path, "bp-shard-1-hot-counter", ["BP-SHARD-1"], _contention(1, 40), "Anti-pattern: one"),
        _run(tmp_path, "bp-shard-1-sharded-counter", ["BP-SHARD-1"], _contention(16, 0), "Best practice: 16"),
        _run(tmp_path, "bp-qry-3", ["BP-QRY-3"], {"probe": {"name": "deleted_range", "result": {
            "entities": 600, "deleted": 500, "head_query_ms": 5.0, "stored_start_ms": 4.8, "ratio": 1.04}}}),
        _run(tmp_path, "bp-key-1", ["BP-KEY-1"], {"keyspace": {"hottest_1pct_share": 0.9, "append_fraction": 1.0,
                                                               "moving_hotspot": True, "model": None}}),
    ]
    by_rule = collect(runs)
    out = write_report(runs, tmp_path / "report")
    md = (out / "report.md").read_text()
    assert "## BP-SHARD-1" in md and "confirmed (measured)" in md and "aborted 40" in md
    qry3 = md.split("## BP-QRY-3")[1].split("##")[0]
    assert "not observable on the emulator" in qry3 and "no difference" not in qry3
    assert "modelled" in md.split("## BP-KEY-1")[1].split("##")[0]
    assert "<h2 id='BP-SHARD-1'>" in (out / "report.html").read_text()
    assert set(by_rule) == {"BP-SHARD-1", "BP-QRY-3", "BP-KEY-1"}
    data = json.loads((out / "report.json").read_text())
    assert data["rules"]["BP-QRY-3"]["status"] == "not observable on the emulator"
    assert data["rules"]["BP-SHARD-1"]["charts"][0] == "aborted transactions"
    assert "<svg" in (out / "charts" / "bp-shard-1-0.svg").read_text()


def _status(tmp_path: Path, *cells: tuple[str, dict, str]) -> tuple[str, str]:
    tmp = tmp_path / uuid.uuid4().hex[:8]
    rows = collect([_run(tmp, name, ["BP-X-1"], cell, desc) for name, cell, desc in cells])
    return verdict(rows["BP-X-1"])


def test_contention_verdict_counts_a_starved_hot_key_without_aborts(tmp_path: Path) -> None:
    # Firestore's locks: the hot document aborts nothing but commits far less.
    status, text = _status(tmp_path, ("hot", _contention(1, 0, committed_per_s=0.5), "Anti-pattern"),
                           ("spread", _contention(4, 0, committed_per_s=40.0), "Best practice"))
    assert status == "confirmed (measured)" and "0.5/s" in text
    status, text = _status(tmp_path, ("hot", _contention(1, 0, 30.0), "Anti-pattern"),
                           ("spread", _contention(4, 0, 40.0), "Best practice"))
    assert status == "not observable on the emulator", text


def test_keyspace_verdict_compares_the_pair_by_role(tmp_path: Path) -> None:
    # Without a [launch] the measured patterns decide: a hot range against a spread fix.
    status, text = _status(tmp_path, ("seq", _keyspace(0.95, 0.4), "Anti-pattern: sequential"),
                           ("rnd", _keyspace(0.02, 0.0), "Best practice: random"))
    assert status == "confirmed (modelled)" and "not observable on the emulator" in text
    assert "hot range 95 % of ops on 1 % of keys) vs" in text and "(spread)" in text
    status, text = _status(tmp_path, ("a", _keyspace(0.9, 0.3), "Anti-pattern"), ("b", _keyspace(0.9, 0.3),
                                                                                  "Best practice"))
    assert status == "modelled" and "not confirmed by the model" in text
    # The tablet model at the test's own rate (0.4 vs 0.0 here) is cited nowhere: one model per claim.
    assert "40 %" not in text and "modelled throttling" not in text


def test_the_launch_forecast_confirms_a_pair_the_key_stream_alone_cannot_tell_apart(tmp_path: Path) -> None:
    # BP-RATE-2's pair: the same random document keys; only the monotonic index differs, which the
    # forecast projects (modelled) and the hotspot metrics of the document keys cannot see.
    def cell(verdict: str, low: float, mid: float, high: float) -> dict:
        return {**_keyspace(0.02, 0.0), "forecast": {
            "modelled": True, "verdict": verdict, "throttled_fraction": {"low": low, "mid": mid, "high": high},
            "launch": {"description": "ramp 500 ops/s +50% every 300s up to 5000 for 1h"}}}

    status, text = _status(tmp_path, ("idx", cell("hotspot", 0.6, 0.7, 0.75), "Anti-pattern: indexed monotonic"),
                           ("exempt", cell("ok", 0.0, 0.0, 0.001), "Best practice: exempt"))
    assert status == "confirmed (modelled)", text
    # One breath: the design, what it does at the launch, the fix; the figures are in the evidence rows.
    verdict_text = text.split(". not observable")[0]
    assert verdict_text == ("confirmed (modelled): idx (spread): hotspot 60 %–75 % at the launch (ramp 500 ops/s "
                            "+50% every 300s up to 5000 for 1h); fix: exempt (spread): ok 0 %–0.1 %"), verdict_text
    assert len(verdict_text.split()) < 45


def test_a_forecast_from_recorded_keys_says_so_in_the_evidence(tmp_path: Path) -> None:
    why = "a Python workload writes its own keys: the keys it really wrote are projected"
    cell = {**_keyspace(0.02, 0.0), "forecast": {
        "modelled": True, "verdict": "ok", "throttled_fraction": {"low": 0.0, "mid": 0.0, "high": 0.0},
        "launch": {"description": "constant 5000 ops/s for 1h"}, "projection": {"keys": "recorded", "why": why}}}
    rows = collect([_run(tmp_path, "app", ["BP-X-1"], cell, "Best practice: app ids")])["BP-X-1"]
    assert f"(from the recorded keys: {why})" in rows[0].text and "key space (measured): spread" in rows[0].text
    cell["forecast"]["projection"]["keys"] = "regenerated"  # the usual path: nothing to add
    rows = collect([_run(tmp_path, "design", ["BP-X-1"], cell, "Best practice")])["BP-X-1"]
    assert "recorded keys" not in rows[0].text


def test_consistency_verdict_needs_enough_attempts_and_a_stale_rate_near_one_minus_c(tmp_path: Path) -> None:
    assert _status(tmp_path, ("c", _consistency(0.47), ""))[0] == "confirmed (measured)"
    assert _status(tmp_path, ("c", _consistency(0.5, attempts=5), ""))[0] == "measured"
    status, text = _status(tmp_path, ("c", _consistency(0.0), ""))
    assert status == "not observable on the emulator" and "consistency 0.5" in text
    assert _status(tmp_path, ("c", _consistency(0.0, consistency=1.0), ""))[0] == "measured"


def test_html_charts_escape_run_strings(tmp_path: Path) -> None:
    evil = "<img src=x onerror=alert(1)>"
    runs = [_run(tmp_path, "evil", [evil], _contention(1, 3), f"Anti-pattern: {evil}")]
    page = (report_for_runs(runs, out=tmp_path / "r") / "report.html").read_text()
    assert evil not in page and html.escape(evil) in page and "<svg" in page


def test_report_rejects_a_non_run_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a run directory"):
        collect([tmp_path])


def test_each_rule_lists_only_the_cells_its_key_strategies_speak_to(tmp_path: Path) -> None:
    # The quickstart's shape: 2 backends × sequential / random / hashed_prefix, one run citing
    # several key rules. It used to list all 6 cells (and 6 heatmaps) under every rule.
    from _synthetic import make_run

    run = make_run(tmp_path / "results", profile_name="quick", seconds=3,
                   cells=[(b, s) for b in ("datastore", "bigtable") for s in ("sequential", "random", "hashed_prefix")])
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["profile"]["rules"] = ["BP-KEY-1", "BP-KEY-2", "BP-KEY-3", "BP-KEY-5"]
    manifest["profile"]["description"] = "Sequential vs random vs hashed-prefix keys"  # no role in it
    (run / "manifest.json").write_text(json.dumps(manifest))
    summary = json.loads((run / "summary.json").read_text())
    hot = {"sequential": 0.9, "random": 0.02, "hashed_prefix": 0.03}
    for cell in summary["cells"].values():
        cell["keyspace"] = {"hottest_1pct_share": hot[cell["strategy"]], "append_fraction": 0.5,
                            "moving_hotspot": cell["strategy"] == "sequential", "model": None}
    (run / "summary.json").write_text(json.dumps(summary))

    out = report_for_runs([run], out=tmp_path / "report")
    rules = json.loads((out / "report.json").read_text())["rules"]

    def cells(rule: str) -> dict[str, str]:
        return {e["cell"]: e["role"] for e in rules[rule]["evidence"]}

    assert cells("BP-KEY-1") == {"c00-datastore-sequential": "anti-pattern", "c01-datastore-random": "best practice",
                                 "c03-bigtable-sequential": "anti-pattern", "c04-bigtable-random": "best practice"}
    assert cells("BP-KEY-3") == {"c00-datastore-sequential": "anti-pattern",
                                 "c02-datastore-hashed_prefix": "best practice",
                                 "c03-bigtable-sequential": "anti-pattern",
                                 "c05-bigtable-hashed_prefix": "best practice"}
    assert cells("BP-KEY-2") == {"c00-datastore-sequential": "anti-pattern", "c03-bigtable-sequential": "anti-pattern"}
    # roles come from the rule's table, so the pair is compared although the description names none
    assert rules["BP-KEY-1"]["status"] == rules["BP-KEY-3"]["status"] == "confirmed (modelled)"
    # a cited rule none of the strategies speaks to says so instead of showing unrelated cells
    assert [e["kind"] for e in rules["BP-KEY-5"]["evidence"]] == ["not applicable"]
    assert rules["BP-KEY-5"]["status"] == "no usable evidence"
    assert "field_promotion" in rules["BP-KEY-5"]["verdict"]
    # every cell's heatmap is drawn once, under the first rule that cites it; later rules refer to it
    drawn = [h for r in rules.values() for h in r["heatmaps"]]
    assert len(drawn) == len(set(drawn)) == 6
    assert len(rules["BP-KEY-1"]["heatmaps"]) == 4 and len(rules["BP-KEY-3"]["heatmaps"]) == 2
    assert {r["rule"] for r in rules["BP-KEY-3"]["heatmaps_shown_under"]} == {"BP-KEY-1"}
    md = (out / "report.md").read_text()
    assert md.count("](keyspace/") == 6 and "see [BP-KEY-1](#bp-key-1)" in _md_section(md, "BP-KEY-3")
    assert "hashed-prefix" not in _md_section(md, "BP-KEY-1")


def _md_section(md: str, rule: str) -> str:
    return md.split(f"## {rule}\n")[1].split("\n## ")[0]


_CPU_BOUND = ("the busiest load process used 0.97 of a core (CPU-bound); 3% of operations started late, 0.0% of "
              "the schedule dropped")


def _paced(achieved: list[float], target: float, *, limited: bool = False) -> dict:
    """A Locust cell's key space and its scheduled-vs-achieved timeline (one point a second)."""
    cell = {**_keyspace(0.02, 0.0), "strategy": "random", "total": {"count": int(sum(achieved))},
            "target_ops_per_s": [{"t": float(t), "target": target, "achieved": a} for t, a in enumerate(achieved)]}
    if limited:
        cell.update(generator_limited=True, generator={"reason": _CPU_BOUND})
    return cell


def test_each_rule_of_shared_runs_gets_its_own_verdict(tmp_path: Path) -> None:
    # The ramp profiles cite BP-RAMP-1 and BP-RAMP-2 over the same cells: BP-RAMP-2 once showed
    # BP-RAMP-1's sentence, word for word, as its own verdict.
    runs = [_run(tmp_path, "cold", ["BP-RAMP-1", "BP-RAMP-2"], _paced([1200, 300, 2455, 1700], 1688),
                 "Anti-pattern: full load at once"),
            _run(tmp_path, "ramp", ["BP-RAMP-1", "BP-RAMP-2"], _paced([500, 500, 520, 510], 500),
                 "Best practice: 500/50/5")]
    out = report_for_runs(runs, out=tmp_path / "r")
    rules = json.loads((out / "report.json").read_text())["rules"]
    one, two = rules["BP-RAMP-1"], rules["BP-RAMP-2"]
    assert one["status"] == "modelled"  # the same keys on both sides: the model cannot tell them apart
    assert two["status"] == "partly tested: the runs of BP-RAMP-1"
    assert one["verdict"] not in two["verdict"] and f"({one['status']} there: see BP-RAMP-1)" in two["verdict"]
    assert "deterministic hash of their ids" in two["verdict"] and "not exercised" in two["verdict"]
    assert two["charts"] == [] and {"title": "charts of these runs", "rule": "BP-RAMP-1"} in two["heatmaps_shown_under"]
    # the cold start's catch-up (2,455 achieved against 1,688 scheduled) and its stall are explained on the chart
    (chart,) = [name for name in (out / "charts").iterdir() if name.name.startswith("bp-ramp-1-") and
                "scheduled vs achieved" in name.read_text()]
    svg = chart.read_text()
    assert svg.count("<circle") == 2 and "2,455 ops/s against 1,688 ops/s scheduled" in svg and "catch-up" in svg
    assert "a stall at 1 s, 300 ops/s achieved of 1,688 ops/s scheduled" in svg
    assert "operations per second" in svg and "seconds since the cell started" in svg
    md = (out / "report.md").read_text()
    assert md.startswith("# keyramp scenario report\n\n2 runs, 2 cells, ")
    single = report_for_runs(runs[:1], out=tmp_path / "one")
    assert "\n1 run, 1 cell, " in (single / "report.md").read_text()
    assert "1 runs" not in (single / "report.html").read_text()


def test_a_generator_limited_cell_says_what_limited_it_and_how_much_it_still_generated(tmp_path: Path) -> None:
    def text(cell: dict) -> str:
        (row,) = collect([_run(tmp_path / uuid.uuid4().hex[:8], "r", ["BP-X-1"], cell)])["BP-X-1"]
        return row.text

    full = text(_paced([1000, 1000, 1000], 1000, limited=True))
    assert f"generator-limited: {_CPU_BOUND}; it still generated the scheduled operations (100 %)" in full
    assert "key stream the model read is complete" in full and "were generated" not in full
    short = text(_paced([600, 600, 600], 1000, limited=True))
    assert "it generated 60 % of the scheduled operations, so the model read 60 % of the planned key stream" in short
    assert "generator-limited" not in text(_paced([1000, 1000], 1000))


def test_charts_have_axes_legends_and_notes_only_where_something_happened() -> None:
    from keyramp.scenarios._charts import Bar, bar_chart_svg, pace_marks

    assert pace_marks("steady", [(0.0, 1000.0, 1050.0), (1.0, 1000.0, 960.0)]) == []  # within 10 %: nothing to say
    assert pace_marks("closed", [(0.0, None, 50.0)]) == []  # no schedule to hold it against
    bars = bar_chart_svg("p99", [Bar(label="a", value=20.0, role="anti-pattern"),
                                 Bar(label="b", value=2.0, role="best practice")], unit=" ms")
    assert ">anti-pattern</text>" in bars and ">best practice</text>" in bars  # the colours' legend
    assert ">0</text>" in bars and ">20 ms</text>" in bars  # the value axis from 0 to the largest bar


def test_the_report_shows_the_plan_of_each_planned_cell(tmp_path: Path) -> None:
    """A run whose cells hold plans (real ``plan_cell`` plans): Markdown, HTML and JSON carry one
    modelled line per planned cell — the fix for sequential ids, the ramp for random ones, the cost."""
    from _plans import add_plans
    from _synthetic import make_run

    run = make_run(tmp_path / "results", profile_name="plans", seconds=3,
                   cells=[("datastore", "sequential"), ("datastore", "random")])
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["profile"]["rules"] = ["BP-KEY-1"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    add_plans(run, {"c00-datastore-sequential": ("datastore", "sequential"),
                    "c01-datastore-random": ("datastore", "random")})
    out = report_for_runs([run], out=tmp_path / "report")
    md, page = (out / "report.md").read_text(), (out / "report.html").read_text()
    plans = json.loads((out / "report.json").read_text())["runs"][0]["plans"]
    assert [p.split()[0] for p in plans] == ["c00-datastore-sequential", "c01-datastore-random"]
    assert "not reachable — fix: shards" in plans[0] and "reachable — start 500 ops/s" in plans[1]
    assert all("/h, ramp $" in p for p in plans)
    assert "## Launch plans (modelled)" in md and all(p in md for p in plans)
    assert "Launch plans" in page and all(html.escape(p) in page for p in plans)
    assert md.index("Launch plans") < md.index("## BP-KEY-1")  # the answer before the evidence
    from keyramp.scenarios._evidence import RunInfo
    from keyramp.scenarios._report import render_html, render_markdown

    unplanned = [RunInfo(path=run, profile="plans", status="complete", reason=None)]
    assert "Launch plans" not in render_markdown([], unplanned) + render_html([], unplanned)
