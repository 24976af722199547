"""A fifth store, declared in the tests only (``tests/_memory.py``), through the whole tool:
profile validation, lint, a short ``keyramp run`` against its in-process target (in a child
process: the runner monkey-patches the standard library) with the launch forecast and plan
priced from its own price sheet, its Python-workload user class, the summary table /
report.txt, the key-space model with the store's own tablet defaults, ``keyramp scenarios
report`` and the web UI. No module under ``keyramp/`` knows the store; no emulator process is
involved.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _memory import MemoryStore, memory_spec
from _runs import assert_rate_held, load, write_profile

from keyramp.backends import registered
from keyramp.core._errors import UsageError
from keyramp.keyspace import analyze_cell, load_keys
from keyramp.profile._lint import lint_profile
from keyramp.profile._profile import parse_profile
from keyramp.scenarios import report_for_runs
from keyramp.web import create_app

_TESTS = Path(__file__).resolve().parents[1]
#: The child registers the same test-declared store, then runs the real CLI entry point.
_CHILD = """
import json, sys
import locust  # noqa: F401  (gevent's monkey-patching first, as `keyramp run` does)
import keyramp
from keyramp.backends import registered
from keyramp.cli._main import main
from _memory import MemoryStore, memory_spec

store = MemoryStore()
with registered(memory_spec(store)):
    code = main(sys.argv[1:])
    user = {"public": "MemoryUser" in keyramp.__all__, "backends": sorted(keyramp.MemoryUser.backends),
            "store": keyramp.MemoryUser.store, "takes": list(keyramp.MemoryUser.driver_attributes)}
print(json.dumps({"exit": code, "resets": store.resets, "calls": store.calls, "user": user,
                  "after": "MemoryUser" in keyramp.__all__}))
"""


@pytest.fixture
def memory() -> Iterator[MemoryStore]:
    store = MemoryStore()
    with registered(memory_spec(store)):
        yield store


def _raw(**over: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {"name": "fourth", "backend": "memory", "duration": "3s",
                           "workload": {"ops": {"insert": 0.5, "read": 0.5}, "record_count": 50},
                           "keys": {"strategy": "sequential"}}
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(raw.get(key), dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    return raw


def test_unregistered_the_store_is_unknown() -> None:
    with pytest.raises(UsageError, match="unknown backend 'memory'"):
        parse_profile(_raw())


def test_profile_validation_asks_the_stores_spec(memory: MemoryStore) -> None:
    assert [c.id for c in parse_profile(_raw()).cells] == ["c00-memory-sequential"]
    with pytest.raises(UsageError, match=r"memory: workload\.ops\.transaction: memory does not support transaction"):
        parse_profile(_raw(workload={"ops": {"transaction": 1.0}}))
    with pytest.raises(UsageError, match=r"workload\.batch_size: 60 is above memory's 50 per batch_write"):
        parse_profile(_raw(workload={"ops": {"batch_write": 1.0}, "batch_size": 60}))
    with pytest.raises(UsageError, match="memory × server_allocated: server_allocated: the memory store has no id"):
        parse_profile(_raw(keys={"strategy": "server_allocated"}))
    with pytest.raises(UsageError, match="target = 'cloud': memory has no cloud service"):
        parse_profile(_raw(target="cloud", project="acme-prod"))


def test_lint_applies_the_stores_rules_only(memory: MemoryStore) -> None:
    def rules(**over: Any) -> dict[str, str]:
        return {f.rule: f.message for f in lint_profile(parse_profile(_raw(**over)))}

    sequential = rules(workload={"indexed_fields": 30})
    assert "use hashed_prefix or sharded keys" in sequential["BP-KEY-1"]  # the spec's own hotspot advice (BP-KEY-3's)
    assert "on In-memory test store concentrate traffic" in sequential["BP-KEY-7"]  # a rule the spec lists
    # Rules of features it lacks, or rules it does not list, do not fire.
    assert not {"BP-KEY-2", "BP-IDX-1", "BP-KEY-5", "BP-RATE-1", "BP-SIZE-3"} & set(sequential)
    # Its key rules: uuids are 36 bytes, the store takes 32.
    assert "random makes invalid memory keys (key is 36 bytes, memory allows 32)" in rules(
        keys={"strategy": "random"})["BP-KEY-10"]


@pytest.mark.slow
def test_a_short_run_and_its_reports(tmp_path: Path) -> None:
    profile = write_profile(
        tmp_path / "fourth.toml",
        {"name": "fourth-store", "description": "Anti-pattern: sequential ids on a store keyramp never heard of",
         "rules": ["BP-KEY-1"], "backend": "memory", "duration": "3s", "seed": 3},
        workload={"ops": {"insert": 0.6, "read": 0.3, "increment": 0.1}, "record_count": 100,
                  "key_samples_per_s": 1000},
        keys={"strategy": ["sequential", "hashed_prefix"]},
        schedule={"kind": "constant", "rate": 150, "max_users": 8, "warmup": "1s"},
        launch={"kind": "constant", "rate": 400, "duration": "10m"},
    )
    out = tmp_path / "results"
    child = subprocess.run([sys.executable, "-c", _CHILD, "run", str(profile), "--out", str(out), "--quiet"],
                           capture_output=True, text=True, timeout=180, cwd=_TESTS, check=False)
    assert child.returncode == 0, child.stderr[-2000:]
    state = json.loads(child.stdout.strip().splitlines()[-1])
    assert state["exit"] == 0, child.stderr[-2000:]
    assert state["resets"] == 2  # the spec's reset, once before each cell
    # Its Python-workload user class comes from its spec, for as long as it is registered.
    assert state["user"] == {"public": True, "backends": ["memory"], "store": "memory", "takes": ["rows"]}
    assert state["after"] is False

    (run_dir,) = [p for p in out.iterdir() if "fourth-store" in p.name]
    summary, manifest = load(run_dir, "summary.json"), load(run_dir, "manifest.json")
    assert summary["status"] == "complete"
    assert [c["endpoint"] for c in manifest["cells"]] == ["memory://memory"] * 2
    measured = 0
    for cell in summary["cells"].values():
        assert set(cell["operations"]) == {"insert", "read", "increment"}
        assert cell["total"]["errors"] == 0
        assert_rate_held(cell)  # 150 ops/s for 3 s, or the lateness that held it back is recorded
        measured += cell["total"]["count"]
        # Modelled with the store's own tablet defaults (40 ops/s per tablet): overloaded at 150 ops/s.
        assert cell["keyspace"]["model"]["max_throttled_fraction"] > 0.3
    # Every recorded operation reached the store (the warm-up reached it too, unrecorded).
    assert measured <= sum(state["calls"].get(op, 0) for op in ("insert", "read", "increment"))
    for cid, cell in summary["cells"].items():
        # The launch forecast ran on the store's own tablet model; the plan is priced from its own sheet.
        assert cell["forecast"]["modelled"] is True, cid
        cost = cell["plan"]["cost"]
        assert cost["prices"]["location"] == "test-region" and cost["launch_usd_per_hour"] > 0, cost
    report = (run_dir / "report.txt").read_text()
    assert "c00-memory-sequential" in report and "c01-memory-hashed-prefix" in report

    # The same key stream under Datastore's defaults (500 ops/s per tablet) is not throttled:
    # the figure above came from the fourth store's spec, not from a shared default.
    keys = load_keys(run_dir, cell="c00-memory-sequential")["c00-memory-sequential"]

    def throttled(backend: str) -> float:
        timeline = analyze_cell(keys.key, keys.t, keys.op, backend=backend, rate_fn=lambda t: 150.0)[3]
        assert timeline is not None
        return float(timeline.throttled.max())

    with registered(memory_spec(MemoryStore())):
        assert throttled("memory") > 0.3
    assert throttled("datastore") == 0.0

    # `keyramp run` wrote the scenario report for the cited rule; rebuild it in this process.
    assert [p.parent.name.startswith("scenarios-") for p in out.glob("reports/*/report.json")] == [True]
    with registered(memory_spec(MemoryStore())):
        rebuilt = report_for_runs([run_dir], out=tmp_path / "report")
    rules = json.loads((rebuilt / "report.json").read_text())["rules"]
    rows = rules["BP-KEY-1"]["evidence"]
    assert {r["backend"] for r in rows} == {"memory"} and all(r["kind"] == "modelled" for r in rows)
    assert all(r["values"]["throttled"] > 0.3 for r in rows)

    # The web UI: the run page (answer first, each cell's plan) and its JSON twins.
    with registered(memory_spec(MemoryStore())):
        client = create_app(out).test_client()
        page = client.get(f"/runs/{run_dir.name}")
        plans = client.get(f"/runs/{run_dir.name}/plans.json").get_json()
        twin = client.get(f"/runs/{run_dir.name}.json").get_json()
    assert page.status_code == 200 and b'id="answer"' in page.data and b"c00-memory-sequential" in page.data
    assert plans["status"] == "planned" and plans["source"] == "summary"  # the run's own plan step
    assert set(plans["planned"]) == set(summary["cells"])
    assert twin["run"]["backends"] == ["memory"]
    assert {c["id"]: c["backend"] for c in twin["run"]["cells"]} == dict.fromkeys(summary["cells"], "memory")
    assert all(c["plan"] for c in twin["run"]["cells"])  # each cell's plan section
