"""``keyramp.run_profiles``: everything ``keyramp run`` does, as a library call with a typed outcome.

A child process (the runner monkey-patches the standard library) registers the test-declared
store of ``tests/_memory.py`` (no emulator) and calls the public API with a metrics exporter
and a scenario report, as ``keyramp run --metrics … `` does for a profile that cites rules.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _runs import load, write_profile

_TESTS = Path(__file__).resolve().parents[1]
_CHILD = r"""
import json, sys
from pathlib import Path
import keyramp
run_profiles, RunsOutcome = keyramp.run_profiles, keyramp.RunsOutcome  # loads Locust first
from keyramp.core._errors import UsageError
from keyramp.backends import registered
from keyramp.metrics import MetricsExporter
from keyramp.profile import load_profile
from keyramp.scenarios import default_report_dir, report_for_runs
from _memory import MemoryStore, memory_spec

path, out = sys.argv[1], Path(sys.argv[2])
seen = []
with registered(memory_spec(MemoryStore())):
    try:
        run_profiles([load_profile(path)], out=out, duration_s=1.0)
    except UsageError as exc:
        refused = str(exc)
    result = run_profiles([path], out=out, duration_s=1.0, quiet=True, metrics=MetricsExporter("127.0.0.1:0"),
                          scenario_report=lambda runs: report_for_runs(runs, out=default_report_dir(out)),
                          on_run=lambda outcome: seen.append(outcome.run_id))
doc = json.loads(json.dumps(result.to_json(), default=str))
print(json.dumps({"type": type(result).__name__, "exit": result.exit_code, "seen": seen, "doc": doc,
                  "refused": refused, "round_trip": RunsOutcome.from_json(doc).to_json() == doc,
                  "files": sorted(p.name for p in result.scenario_report.iterdir())}))
"""


def test_run_profiles_runs_reports_and_returns_typed_outcomes(tmp_path: Path) -> None:
    profile = write_profile(
        tmp_path / "api.toml",
        {"name": "api", "rules": ["BP-KEY-1"], "backend": "memory", "duration": "30s", "seed": 4},
        workload={"ops": {"insert": 0.7, "read": 0.3}, "record_count": 50, "key_samples_per_s": 1000},
        keys={"strategy": "sequential"},
        schedule={"kind": "constant", "rate": 50, "max_users": 4, "warmup": "0s"},
    )
    out = tmp_path / "results"
    child = subprocess.run([sys.executable, "-c", _CHILD, str(profile), str(out)], capture_output=True, text=True,
                           timeout=180, cwd=_TESTS, check=False)
    assert child.returncode == 0, child.stderr[-3000:]
    state = json.loads(child.stdout.strip().splitlines()[-1])
    # A field that does not apply is an error: the duration override is for profile files.
    assert state["refused"] == "duration_s: applies to profile files; api is already a Profile"
    assert state["type"] == "RunsOutcome" and state["exit"] == 0 and state["round_trip"]
    (run,) = state["doc"]["runs"]
    assert state["seen"] == [run["run_id"]]  # on_run saw each outcome as it finished
    assert (run["status"], run["exit_code"], run["summary"]["status"]) == ("complete", 0, "complete")
    run_dir = Path(run["path"])
    assert run_dir.parent == out and load(run_dir, "summary.json")["run_id"] == run["run_id"]
    assert load(run_dir, "manifest.json")["cells"][0]["duration_s"] == 1.0  # duration_s overrode the file's 30s
    # The scenario report of the profile citing rules, in the results directory as `keyramp run` puts it.
    report = Path(state["doc"]["scenario_report"])
    assert report.name == "report.html" and report.parent.parent == out / "reports"
    assert {"report.html", "report.md", "report.json"} <= set(state["files"])
    assert "BP-KEY-1" in json.loads((report.parent / "report.json").read_text())["rules"]
    # The metrics exporter was started after the checks and closed after the run.
    assert "metrics: http://127.0.0.1:" in child.stderr
