"""Scenario profiles, [workload.query] validation and the per-rule report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from keyramp._errors import UsageError
from keyramp._profile import collect_profiles, parse_profile
from keyramp._workload import query_spec
from keyramp.scenarios._report import collect, write_report

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "profiles" / "scenarios"


def test_every_rule_is_covered_by_a_scenario_or_the_readme() -> None:
    rules = set(re.findall(r"\| (BP-[A-Z]+-\d+) \|", (ROOT.parent / "shared/design/best-practices.md").read_text()))
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


def test_query_table_maps_to_query_spec() -> None:
    raw = {"name": "q", "workload": {"ops": {"query": 1.0}, "query": {
        "field": "n", "op": ">=", "value": 3, "order_by": "n", "paginate": "offset", "page": 150,
        "keys_only": True}}}
    q = parse_profile(raw).data["workload"]["query"]
    spec = query_spec(q, limit=20, page=q["page"])
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


def _run(tmp: Path, name: str, rules: list[str], cell: dict) -> Path:
    run = tmp / name
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"profile_name": name, "profile": {"rules": rules}}))
    (run / "summary.json").write_text(json.dumps({"cells": {"c00-datastore-random": cell}}))
    return run


def _contention(keys: int, aborted: int) -> dict:
    return {"probe": {"name": "contention", "backend": "datastore", "result": {
        "threads": 8, "keys": keys, "assign": "per-thread", "same_group": False, "op": "transaction",
        "committed": 10, "committed_per_s": 5.0, "aborted": aborted, "abort_rate": 0.5,
        "latency_ms": {"p50": 1.0, "p99": 2.0}, "error_samples": {}}}}


def test_report_gives_measured_and_not_observable_verdicts(tmp_path: Path) -> None:
    runs = [
        _run(tmp_path, "bp-shard-1-hot-counter", ["BP-SHARD-1"], _contention(1, 40)),
        _run(tmp_path, "bp-shard-1-sharded-counter", ["BP-SHARD-1"], _contention(16, 0)),
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


def test_report_rejects_a_non_run_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a run directory"):
        collect([tmp_path])
