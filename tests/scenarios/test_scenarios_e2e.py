"""Scenarios end to end: real scenario profiles through the real CLI, then one report.

A representative subset (contention pair, key-strategy pair, an effect the emulator
cannot show, the consistency probe on its own emulator), copied with short durations.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from _runs import emulator_env, write_profile

from keyramp.results._catalog import RUN_ID_RE
from keyramp.scenarios import report_for_runs
from keyramp.targets._emulators import RunningEmulator

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "profiles" / "scenarios"
#: A run-supplied string that must come out escaped in the HTML report.
HOSTILE = "fanout <script>alert(1)</script> & \"q\""


def _raw(src: str) -> dict[str, Any]:
    return tomllib.loads((SCENARIOS / f"{src}.toml").read_text(encoding="utf-8"))


def _copy(src: str, dest: Path, *, duration: str, **top: Any) -> Path:
    """A scenario profile with a shorter duration and no warm-up (the pair needs none)."""
    raw = _raw(src)
    raw.update(duration=duration, **top)
    tables = {k: raw.pop(k) for k in [k for k, v in raw.items() if isinstance(v, Mapping)]}
    tables.setdefault("schedule", {})["warmup"] = "0s"
    if "launch" in tables:  # the plan is tested on its own (tests/forecast/test_plan*.py): seconds per cell saved
        tables["launch"]["plan"] = False
    return write_profile(dest / f"{src}.toml", raw, **tables)


def _popen(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "keyramp", "run", *args], env=env, cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.fixture(scope="module")
def report(datastore_emulator: RunningEmulator, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("scenarios-e2e")
    profiles = tmp / "profiles"
    profiles.mkdir()
    attached = [
        # A contention probe runs for min(max_s, duration - op timeout): 3 s here.
        _copy("bp-shard-1-hot-counter", profiles, duration="8s"),
        _copy("bp-shard-1-sharded-counter", profiles, duration="8s"),
        _copy("bp-key-3-prefixed", profiles, duration="3s"),
        _copy("bp-key-3-hashed", profiles, duration="3s"),
        _copy("bp-idx-1-fanout", profiles, duration="5s", backend="datastore", name=HOSTILE),
    ]
    own = profiles / "own"
    own.mkdir()
    # 30 attempts (enough to judge the stale rate), with a duration cap that a loaded box
    # cannot hit: the probe ends when its attempts are done.
    consistency = _copy("bp-cons-1-eventual", own, duration="40s", workload={
        **_raw("bp-cons-1-eventual")["workload"], "probe_params": {"attempts": 30}})
    # The consistency profile needs a legacy emulator at --consistency=0.5: `keyramp run`
    # starts (and stops) its own, in a private state dir, while the rest runs attached
    # to the session emulator.
    own_env = emulator_env()
    own_env["KEYRAMP_STATE_DIR"] = str(tmp / "state")
    procs = [
        _popen([str(consistency), "--out", str(tmp / "results"), "--quiet", "--timeout", "5"], own_env, tmp),
        _popen([*map(str, attached), "--out", str(tmp / "results"), "--quiet", "--timeout", "5"],
               emulator_env(datastore_emulator), tmp),
    ]
    try:
        outs = [p.communicate(timeout=180) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (stdout, stderr) in zip(procs, outs, strict=True):
        assert p.returncode == 0, (stdout[-3000:], stderr[-3000:])
    # `keyramp run` itself wrote one scenario report per invocation, under results/reports/ (so
    # "the newest entry of results/" stays a run), and printed its run ids last, one per line.
    run_ids = []
    for _, (stdout, _) in zip(procs, outs, strict=True):
        assert "scenario report: " in stdout, stdout[-2000:]
        written = Path(stdout.split("scenario report: ")[1].split()[0])
        assert written.name == "report.html" and written.parent.name.startswith("scenarios-")
        assert written.parent.parent == tmp / "results" / "reports"
        assert (written.parent / "report.json").exists() and "<svg" in written.read_text()
        tail = stdout.splitlines()[-len(list(filter(RUN_ID_RE.match, stdout.splitlines()))):]
        assert tail and all(RUN_ID_RE.match(line) for line in tail)
        run_ids += tail
    runs = sorted(p for p in (tmp / "results").iterdir() if RUN_ID_RE.match(p.name))
    assert len(runs) == 6, runs
    assert sorted(run_ids) == [p.name for p in runs]
    assert sorted(p.name for p in (tmp / "results").iterdir()) == sorted([*run_ids, "reports"])
    return report_for_runs(runs, out=tmp / "report")


def _section(md: str, rule: str) -> str:
    return md.split(f"## {rule}\n")[1].split("\n## ")[0]


@pytest.mark.emulator
def test_every_rule_of_the_subset_has_a_verdict(report: Path) -> None:
    data = json.loads((report / "report.json").read_text())
    assert set(data["rules"]) == {"BP-SHARD-1", "BP-KEY-3", "BP-IDX-1", "BP-IDX-2", "BP-CONS-1"}
    assert all(r["status"] == "complete" for r in data["runs"]), data["runs"]
    md = (report / "report.md").read_text()
    for rule, entry in data["rules"].items():
        assert entry["verdict"] and entry["evidence"], rule
        assert f"**Verdict ({entry['status']}):**" in _section(md, rule)


@pytest.mark.emulator
def test_measured_and_modelled_verdicts_are_labelled(report: Path) -> None:
    rules = json.loads((report / "report.json").read_text())["rules"]
    shard = rules["BP-SHARD-1"]
    assert shard["status"] == "confirmed (measured)", shard["verdict"]
    hot = next(e for e in shard["evidence"] if e["role"] == "anti-pattern")
    spread = next(e for e in shard["evidence"] if e["role"] == "best practice")
    assert hot["values"]["aborted"] > spread["values"]["aborted"]
    cons = rules["BP-CONS-1"]
    assert cons["status"] == "confirmed (measured)", cons["verdict"]
    assert 0.2 <= cons["evidence"][0]["values"]["stale_rate"] <= 0.8
    keys = rules["BP-KEY-3"]
    assert keys["status"] == "confirmed (modelled)", keys["verdict"]
    assert "not observable on the emulator" in keys["verdict"]
    assert {e["kind"] for e in keys["evidence"]} == {"modelled"}


@pytest.mark.emulator
def test_an_effect_the_emulator_cannot_show_says_so(report: Path) -> None:
    rules = json.loads((report / "report.json").read_text())["rules"]
    fanout = rules["BP-IDX-1"]
    assert fanout["status"] == "not observable on the emulator", fanout["verdict"]
    assert "no difference" not in fanout["verdict"]
    assert "no difference" not in _section((report / "report.md").read_text(), "BP-IDX-1")


@pytest.mark.emulator
def test_html_is_self_contained_with_charts_and_escapes_run_strings(report: Path) -> None:
    page = (report / "report.html").read_text()
    assert page.count("<svg") >= 6
    assert page.count("data:image/png;base64,") == 2  # one heatmap per key-strategy cell
    assert not re.search(r"<(script|link)\b|src=['\"]https?:", page)
    assert "<script>alert(1)</script>" not in page
    assert "fanout &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;" in page
    md = (report / "report.md").read_text()
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert (report / link).is_file(), link
