"""`keyramp lint`: each rule fires on its anti-pattern and stays quiet on the fix."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from keyramp.cli._lint import register
from keyramp.core._errors import UsageError
from keyramp.profile import Profile, parse_profile
from keyramp.profile._lint import Finding, lint_profile


def profile(
    *,
    backend: str | list[str] = "datastore",
    strategy: str | list[str] = "random",
    schedule: dict[str, Any] | None = None,
    duration_s: float = 60.0,
    params: dict[str, Any] | None = None,
    launch: dict[str, Any] | None = None,
    **workload: Any,
) -> Profile:
    """A validated profile with lint's usual test defaults (1,000 records, inserts at 100/s)."""
    wl = {"ops": {"insert": 1.0}, "record_count": 1000, "value_size": 256, "batch_size": 10}
    wl.update(workload)
    return parse_profile({
        "name": "t", "backend": backend, "duration": duration_s, "seed": 1, "workload": wl,
        "keys": {"strategy": strategy, "params": params or {}},
        # max_users caps an open model's users: a closed-model `users` schedule refuses it
        "schedule": {**({} if (schedule or {}).get("kind") == "users" else {"max_users": 20}),
                     **(schedule or {"kind": "constant", "rate": 100.0})},
        **({"launch": launch} if launch else {}),
    })


def rules(findings: list[Finding], severity: str | None = None) -> set[str]:
    return {f.rule for f in findings if severity is None or f.severity == severity}


def one(findings: list[Finding], rule: str) -> Finding:
    hits = [f for f in findings if f.rule == rule]
    assert len(hits) == 1, findings
    return hits[0]


def test_anti_pattern_sequential_at_2000_gets_key1_and_ramp1_errors() -> None:
    found = lint_profile(profile(strategy="sequential", schedule={"kind": "constant", "rate": 2000.0}))
    assert {"BP-KEY-1", "BP-RAMP-1"} <= rules(found, "error")
    key1 = one(found, "BP-KEY-1")
    assert key1.cell == "c00-datastore-sequential" and "2000 inserts/s" in key1.message
    assert found[0].severity == "error"  # errors first
    assert all("\n" not in f.message for f in found)


def test_same_keys_at_10_ops_are_a_warning_and_ramp_is_fine() -> None:
    found = lint_profile(profile(strategy="sequential", schedule={"kind": "constant", "rate": 10.0}))
    assert one(found, "BP-KEY-1").severity == "warning"
    assert "BP-RAMP-1" not in rules(found)
    assert one(found, "BP-KEY-2").severity == "info"


def test_best_practice_profile_is_clean() -> None:
    ramp = {"kind": "ramp_500_50_5", "start_ops": 500.0, "growth": 0.5, "step": "5m", "time_scale": 100.0}
    found = lint_profile(profile(strategy=["server_allocated", "random"], schedule=ramp, duration_s=90.0))
    assert found == []


def test_ramp_growth_too_fast_and_too_high_start() -> None:
    fast_ramp = {"kind": "ramp_500_50_5", "start_ops": 500.0, "growth": 0.8, "step": "5m"}
    finding = one(lint_profile(profile(schedule=fast_ramp, duration_s=900.0)), "BP-RAMP-1")
    assert finding.severity == "warning" and "+50 %" in finding.message  # 900 vs 750 allowed at 5 min
    step = {"kind": "step", "start_ops": 500.0, "increment": 100.0, "step": "60s"}
    finding = one(lint_profile(profile(schedule=step, duration_s=900.0)), "BP-RAMP-1")
    assert finding.severity == "error" and "above 500 ops/s" in finding.message  # 900 ops/s at 4 min
    linear = {"kind": "linear", "start_ops": 100.0, "end_ops": 5000.0}
    assert one(lint_profile(profile(schedule=linear)), "BP-RAMP-1").severity == "error"
    spike = {"kind": "spike", "rate": 200.0, "burst_ops": 3000.0}
    assert one(lint_profile(profile(schedule=spike)), "BP-RAMP-1").severity == "error"
    # Reads only on preloaded data: no new key range, no ramp finding.
    assert "BP-RAMP-1" not in rules(
        lint_profile(profile(ops={"read": 1.0}, schedule={"kind": "constant", "rate": 2000.0}))
    )


def test_ramp_closed_model_is_info() -> None:
    found = lint_profile(profile(schedule={"kind": "users", "users": 10}))
    assert one(found, "BP-RAMP-1").severity == "info"


def test_bigtable_key_rules() -> None:
    found = lint_profile(
        profile(backend="bigtable", strategy=["timestamp_first", "hashed_prefix", "random", "sequential", "domain",
                                              "field_promotion", "reverse_timestamp", "reverse_domain"],
                read_distribution="latest", ops={"insert": 0.5, "read": 0.5})
    )
    by_cell: dict[str, set[str]] = {}
    for f in found:
        by_cell.setdefault(f.cell or "", set()).add(f.rule)
    assert {"BP-KEY-1", "BP-KEY-5", "BP-KEY-6"} <= by_cell["c00-bigtable-timestamp-first"]
    assert "BP-KEY-8" in by_cell["c01-bigtable-hashed-prefix"] and "BP-KEY-8" in by_cell["c02-bigtable-random"]
    assert "BP-KEY-7" in by_cell["c03-bigtable-sequential"] and "BP-KEY-7" in by_cell["c04-bigtable-domain"]
    assert by_cell.get("c05-bigtable-field-promotion") == {"BP-KEY-6"}  # reads newest first: hint only
    # A reverse timestamp at the start lands every new row before the others: one place takes them all
    # (monotonic, the one definition), the newest-first read it is BP-KEY-6's answer to.
    assert by_cell["c06-bigtable-reverse-timestamp"] == {"BP-KEY-1"} and "c07-bigtable-reverse-domain" not in by_cell
    assert "BP-KEY-2" not in rules(found)  # Bigtable has no server-allocated keys to prefer


def test_time_bucket_shard() -> None:
    low = one(lint_profile(profile(strategy="time_bucket_shard")), "BP-SHARD-1")
    high = one(
        lint_profile(profile(strategy="time_bucket_shard", schedule={"kind": "constant", "rate": 800.0})), "BP-SHARD-1"
    )
    assert (low.severity, high.severity) == ("warning", "error")
    assert "BP-SHARD-1" not in rules(lint_profile(profile(strategy="sharded")))


@pytest.mark.parametrize(
    ("backend", "params", "fires"),
    [
        ("datastore", {"prefix": "a/b"}, True),
        ("firestore", {"prefix": "x" * 1600}, True),
        ("datastore", {"prefix": "__x__"}, True),
        ("bigtable", {"prefix": "a/b"}, False),
        ("firestore", {"prefix": "Customer"}, False),
    ],
)
def test_key_hygiene(backend: str, params: dict[str, Any], fires: bool) -> None:
    found = lint_profile(profile(backend=backend, strategy="prefixed_sequential", params=params))
    assert ("BP-KEY-10" in rules(found, "error")) == fires


def test_entity_group_write_rate() -> None:
    found = lint_profile(profile(entity_group_size=10))  # 100 inserts/s into the current group
    assert one(found, "BP-RATE-1").severity == "error"
    slow = lint_profile(profile(entity_group_size=10, schedule={"kind": "constant", "rate": 2.0}))
    assert one(slow, "BP-RATE-1").severity == "warning"
    assert "BP-RATE-1" not in rules(lint_profile(profile()))  # root entities, uniform, distinct keys


def test_hot_entity_updates_in_datastore_mode() -> None:
    hot = profile(backend="firestore-datastore", ops={"update": 1.0}, read_distribution="zipfian",
                  distribution_params={"scrambled": False})
    assert one(lint_profile(hot), "BP-RATE-1").severity == "error"  # ≈ 100 × 0.134 writes/s on entity 0
    spread = profile(backend="firestore-datastore", ops={"update": 1.0}, record_count=100_000)
    assert "BP-RATE-1" not in rules(lint_profile(spread))


def test_writes_on_one_key_are_flagged_on_every_store_under_its_own_rule() -> None:
    """A counter (one record, incremented) at 100 ops/s: each store's per-key limit, in its own rule."""
    counter = lint_profile(profile(backend=["firestore", "bigtable", "firestore-datastore"], record_count=1,
                                   ops={"increment": 1.0}))
    by_rule = {(f.rule, f.severity) for f in counter}
    assert {("BP-RATE-3", "error"), ("BP-RATE-1", "error")} <= by_rule  # 100 writes/s: a document takes 1–10
    assert ("BP-KEY-9", "warning") not in by_rule  # a row takes 1,000–14,000 writes/s: 100 is fine
    fast = lint_profile(profile(backend="bigtable", record_count=1, ops={"increment": 1.0},
                                schedule={"kind": "constant", "rate": 20_000.0}))
    assert one(fast, "BP-KEY-9").severity == "error" and "memusage#" in one(fast, "BP-KEY-9").message
    # 100 writes/s on the emulator, 10,000 at the launch: the row the launch will hammer is flagged now
    launch = lint_profile(profile(backend="bigtable", record_count=1, ops={"increment": 1.0},
                                  launch={"kind": "ramp_500_50_5", "ceiling": 10_000, "duration": "1h"}))
    assert one(launch, "BP-KEY-9").severity == "warning" and "[launch] peak" in one(launch, "BP-KEY-9").message
    spread = lint_profile(profile(backend=["firestore", "bigtable"], ops={"insert": 0.5, "increment": 0.5},
                                  record_count=1_000_000))
    assert not {"BP-RATE-3", "BP-KEY-9"} & rules(spread)


def test_monotonic_indexed_value() -> None:
    fast = profile(
        backend=["firestore", "datastore"], indexed_value="monotonic", schedule={"kind": "constant", "rate": 1000.0}
    )
    found = lint_profile(fast)
    assert one(found, "BP-RATE-2").severity == "error" and one(found, "BP-KEY-3").severity == "warning"
    slow = lint_profile(profile(backend="firestore", indexed_value="monotonic"))
    assert one(slow, "BP-RATE-2").severity == "info"
    for fix in ("unindexed", "prefixed"):
        fixed = profile(
            backend=["firestore", "datastore"], indexed_value=fix, schedule={"kind": "constant", "rate": 1000.0}
        )
        assert not {"BP-RATE-2", "BP-KEY-3"} & rules(lint_profile(fixed))


def test_sizes() -> None:
    assert one(lint_profile(profile(backend="bigtable", value_size=20 << 20)), "BP-SIZE-1").severity == "warning"
    assert one(lint_profile(profile(backend="bigtable", value_size=200 << 20)), "BP-SIZE-1").severity == "error"
    assert "BP-SIZE-1" not in rules(lint_profile(profile(backend="datastore", value_size=20 << 20)))
    assert one(lint_profile(profile(backend="bigtable", indexed_fields=200)), "BP-SIZE-3").severity == "warning"
    assert one(lint_profile(profile(backend="firestore", indexed_fields=50)), "BP-IDX-1").severity == "info"


def test_invalid_profiles_raise_usage_error() -> None:
    with pytest.raises(UsageError):  # lint takes a validated profile: bad input stops at parsing
        lint_profile(parse_profile({"name": "x", "backend": "mysql"}))
    with pytest.raises(UsageError, match="Bigtable has no server-allocated"):
        lint_profile(profile(backend="bigtable", strategy="server_allocated"))


# -- CLI ---------------------------------------------------------------------------------------

ANTI = """
name = "anti"
backend = "datastore"
duration = "10s"
[workload]
ops = { insert = 1.0 }
[keys]
strategy = "sequential"
[schedule]
kind = "constant"
rate = 2000
"""

WARN_ONLY = """
name = "warn"
backend = "datastore"
duration = "10s"
[workload]
ops = { insert = 1.0 }
[keys]
strategy = "sequential"
[schedule]
kind = "constant"
rate = 10
"""

CLEAN = """
name = "clean"
backend = "firestore"
duration = "10s"
[workload]
ops = { insert = 0.5, read = 0.5 }
[keys]
strategy = "server_allocated"
[schedule]
kind = "constant"
rate = 100
"""


def run_lint(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="keyramp")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["lint", *argv])
    return int(args.func(args))


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in {
        "anti": ANTI,
        "warn": WARN_ONLY,
        "clean": CLEAN,
        "broken": "name = [",
        "bad": 'name = "b"\nbackend = "mysql"',
    }.items():
        out[name] = tmp_path / f"{name}.toml"
        out[name].write_text(text)
    return out


def test_cli_exit_codes_and_lines(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_lint([str(files["clean"])]) == 0
    assert capsys.readouterr().out.strip() == f"{files['clean']}: ok"
    assert run_lint([str(files["anti"])]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert f"{files['anti']}: ERROR BP-KEY-1 [c00-datastore-sequential]: sequential keys" in "\n".join(lines)
    assert any(line.startswith(f"{files['anti']}: ERROR BP-RAMP-1: ") for line in lines)
    assert run_lint([str(files["warn"])]) == 0
    assert run_lint([str(files["warn"]), "--strict"]) == 1


def test_cli_invalid_profiles_exit_2(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_lint([str(files["broken"]), str(files["clean"])]) == 2
    captured = capsys.readouterr()
    assert "invalid TOML" in captured.err and f"{files['clean']}: ok" in captured.out
    assert run_lint([str(files["bad"])]) == 2
    assert "mysql" in capsys.readouterr().err
    assert run_lint([str(files["clean"].parent / "missing.toml")]) == 2


def test_cli_json(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_lint([str(files["anti"]), str(files["clean"]), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [r["path"] for r in report] == [str(files["anti"]), str(files["clean"])]
    anti_rules = {f["rule"]: f["severity"] for f in report[0]["findings"]}
    assert anti_rules["BP-KEY-1"] == "error" and anti_rules["BP-RAMP-1"] == "error"
    assert report[1]["findings"] == []


def test_cli_out_writes_the_json_and_keeps_the_lines(files: dict[str, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # --out FILE (issue 30): the JSON --json prints goes to FILE; stdout keeps the human lines.
    assert run_lint([str(files["anti"]), str(files["clean"]), "--json"]) == 1
    printed = capsys.readouterr().out
    for flags in (["--out"], ["--json", "--out"]):
        target = tmp_path / "report" / "lint.json"
        assert run_lint([str(files["anti"]), str(files["clean"]), *flags, str(target)]) == 1
        assert target.read_text(encoding="utf-8") == printed  # the same document, byte for byte
        assert f"{files['clean']}: ok" in capsys.readouterr().out.splitlines()
    with pytest.raises(UsageError, match=r"--json prints to stdout and takes no FILE: write it with --json --out"):
        run_lint(["--json", str(tmp_path / "lint.json"), str(files["clean"])])  # the old `--json FILE` form
    with pytest.raises(UsageError, match=r"^cannot write "):
        run_lint([str(files["clean"]), "--out", str(files["clean"] / "lint.json")])


def test_repository_profiles_lint_without_crashing() -> None:
    from keyramp.profile._files import load_profile

    root = Path(__file__).resolve().parents[2] / "profiles"
    paths = sorted(root.rglob("*.toml"))
    for path in paths:
        for f in lint_profile(load_profile(path)):
            assert f.severity in ("error", "warning", "info") and f.rule.startswith("BP-")


# Each scenario pair: the anti-pattern must carry its rule's finding, the best practice must not.
SCENARIO_PAIRS = {
    "BP-KEY-1": ("bp-key-1-sequential", "bp-key-1-random"),
    "BP-KEY-3": ("bp-key-3-prefixed", "bp-key-3-hashed"),
    "BP-KEY-5": ("bp-key-5-timestamp-first", "bp-key-5-field-promotion"),
    "BP-KEY-6": ("bp-key-6-timestamp", "bp-key-6-reverse-timestamp"),
    "BP-KEY-7": ("bp-key-7-sequential", "bp-key-7-reversed"),
    "BP-RAMP-1": ("bp-ramp-1-cold-start", "bp-ramp-1-500-50-5"),
    "BP-RATE-2": ("bp-rate-2-monotonic-indexed", "bp-rate-2-exempt"),
}
# The prefixed-sequential anti-pattern of BP-KEY-3 is reported as the monotonic key it is.
_FLAGGED_AS = {"BP-KEY-3": "BP-KEY-1"}


@pytest.mark.parametrize("rule", sorted(SCENARIO_PAIRS))
def test_scenario_pairs_get_the_expected_findings(rule: str) -> None:
    from keyramp.profile._files import load_profile

    root = Path(__file__).resolve().parents[2] / "profiles" / "scenarios"
    anti, best = SCENARIO_PAIRS[rule]
    expected = _FLAGGED_AS.get(rule, rule)
    anti_rules = {f.rule for f in lint_profile(load_profile(root / f"{anti}.toml"))}
    best_rules = {f.rule for f in lint_profile(load_profile(root / f"{best}.toml"))}
    assert expected in anti_rules
    assert expected not in best_rules


def test_quickstart_flags_its_sequential_and_hashed_cells() -> None:
    from keyramp.profile._files import load_profile

    path = Path(__file__).resolve().parents[2] / "profiles" / "quickstart.toml"
    findings = lint_profile(load_profile(path))
    by_rule = {}
    for f in findings:
        by_rule.setdefault(f.rule, set()).add(f.cell)
    assert by_rule["BP-KEY-1"] == {"c00-datastore-sequential", "c03-firestore-sequential",
                                   "c06-firestore-datastore-sequential", "c09-bigtable-sequential"}
    assert by_rule["BP-KEY-8"] == {"c10-bigtable-random", "c11-bigtable-hashed-prefix"}


def test_a_launch_faster_than_500_50_5_is_information_the_forecast_quantifies() -> None:
    from keyramp.profile._lint import lint_profile
    from keyramp.profile._profile import parse_profile

    base = {"name": "l", "backend": "firestore", "workload": {"ops": {"insert": 1.0}},
            "schedule": {"kind": "constant", "rate": 100}}
    jump = lint_profile(parse_profile({**base, "launch": {"kind": "constant", "rate": 5000}}))
    (finding,) = [f for f in jump if f.message.startswith("[launch]")]
    assert finding.rule == "BP-RAMP-1" and finding.severity == "info"  # informs; never blocks the test run
    assert "5000 ops/s at t=0s on a new key range" in finding.message
    ramp = lint_profile(parse_profile({**base, "launch": {"kind": "ramp_500_50_5", "ceiling": 5000}}))
    assert not [f for f in ramp if f.message.startswith("[launch]")]


def test_identical_findings_of_several_cells_are_said_once() -> None:
    from keyramp.profile._files import load_profile
    from keyramp.profile._lint import group_findings

    path = Path(__file__).resolve().parents[2] / "profiles" / "quickstart.toml"
    findings = lint_profile(load_profile(path))
    groups = group_findings(findings)
    assert len({(g.rule, g.message) for g in groups}) == len(groups)  # each finding once
    assert sum(len(g.cells) or 1 for g in groups) == len(findings)  # ... and none lost
    key1 = [g for g in groups if g.rule == "BP-KEY-1" and len(g.cells) > 1]
    assert [g.cells for g in key1] == [("c00-datastore-sequential", "c03-firestore-sequential",
                                        "c06-firestore-datastore-sequential")]
    assert key1[0].line().startswith("BP-KEY-1 on 3 cells (c00-datastore-sequential, c03-firestore-sequential, "
                                     "c06-firestore-datastore-sequential): sequential keys are monotonic")


def test_a_python_workload_is_never_told_to_use_server_allocated_ids(tmp_path: Path) -> None:
    """Its keys come from ``self.keys.new()``: the profile refuses server_allocated there, so lint
    suggests neither BP-KEY-1's server_allocated nor BP-KEY-2 (a subprocess: the workload imports Locust)."""
    from _runs import keyramp

    (tmp_path / "w.py").write_text("import keyramp\n\n\nclass W(keyramp.DatastoreUser):\n"
                                   "    @keyramp.op\n    def put(self):\n        return self.keys.new()\n")
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\nbackend = ["datastore", "firestore-datastore"]\n[workload]\nuser = "w.py:W"\n'
                       '[keys]\nstrategy = "sequential"\n[schedule]\nkind = "constant"\nrate = 100\n')
    result = keyramp("lint", str(profile), "--json")
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)
    rules = {f["rule"] for f in report["findings"]}
    assert "BP-KEY-1" in rules and "BP-KEY-2" not in rules
    assert all("server_allocated" not in f["message"] for f in report["findings"])
    assert any("use random, hashed_prefix or sharded keys" in f["message"] for f in report["findings"])


def test_a_finding_about_one_store_names_that_stores_cells() -> None:
    """A run's lint line once read "BP-RATE-2: firestore: …" with no cell: it now names the cells of
    that store (and only those), said once."""
    from keyramp.profile._lint import group_findings

    found = lint_profile(profile(backend=["firestore", "bigtable"], strategy=["random", "hashed_prefix"],
                                 indexed_value="monotonic"))
    rate = [f for f in found if f.rule == "BP-RATE-2"]
    assert {f.cell for f in rate} == {"c00-firestore-random", "c01-firestore-hashed-prefix"}
    (line,) = [g.line() for g in group_findings(found) if g.rule == "BP-RATE-2"]
    assert line.startswith("BP-RATE-2 on 2 cells (c00-firestore-random, c01-firestore-hashed-prefix): firestore: ")


@pytest.mark.parametrize("schedule, duration_s, words", [
    ({"kind": "ramp_500_50_5"}, 20, "never steps: it runs at 500 ops/s throughout"),
    ({"kind": "step", "steps": [100, 200, 300], "step": "10s"}, 20, "runs only 2 of its 3 steps (peak 200 ops/s)"),
    ({"kind": "spike", "rate": 10, "burst_ops": 100, "burst_at": "30s", "burst_for": "5s"}, 20, "never bursts"),
    ({"kind": "spike", "rate": 10, "burst_ops": 100, "burst_at": "15s", "burst_for": "10s"}, 20,
     "cuts its burst short"),
])
def test_a_schedule_that_cannot_reach_its_shape_in_the_cell_is_a_warning(
        schedule: dict[str, Any], duration_s: float, words: str) -> None:
    finding = one(lint_profile(profile(schedule=schedule, duration_s=duration_s)), "KR-SCHED-1")
    assert finding.severity == "warning" and words in finding.message
    assert "duration ≥" in finding.message and "time_scale =" in finding.message  # and how to make it fit


def test_a_schedule_that_fits_its_cell_is_not_flagged() -> None:
    fits = [({"kind": "ramp_500_50_5", "time_scale": 45}, 20), ({"kind": "ramp_500_50_5"}, 900),
            ({"kind": "step", "steps": [100, 200], "step": "10s"}, 20), ({"kind": "constant", "rate": 100}, 5)]
    for schedule, duration_s in fits:
        assert "KR-SCHED-1" not in rules(lint_profile(profile(schedule=schedule, duration_s=duration_s))), schedule


def test_the_orders_example_in_the_workload_docs_ramps_within_its_cell() -> None:
    """docs/workloads.md's orders.toml used ramp_500_50_5 in a 30 s cell: it never ramped (issue 39)."""
    import re
    import tomllib

    from keyramp.core._durations import parse_duration
    from keyramp.profile._lint_schedule import schedule_shape
    from keyramp.profile._schedules import make_schedule

    doc = (Path(__file__).resolve().parents[2] / "docs" / "workloads.md").read_text(encoding="utf-8")
    toml = tomllib.loads(re.search(r"```toml\n# orders\.toml\n(.*?)```", doc, re.S).group(1))  # type: ignore[union-attr]
    duration = parse_duration(toml["duration"], field="duration")
    scale = float(toml["schedule"].get("time_scale", 1))
    schedule = make_schedule(toml["schedule"], horizon=duration * scale)
    assert schedule.name == "ramp_500_50_5" and schedule_shape(schedule, duration_s=duration, time_scale=scale) is None
