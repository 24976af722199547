"""The runner drives every target through the same seam: the emulator target and the cloud
target pass the same run, against a real emulator.

The cloud target cannot reach Google here, so the test subclasses it only where the network
starts: its cells' address points at the emulator (a real service would have none). Every
other part — the opt-in, the plan, credentials (an offline ADC file), the fresh-namespace
check, the guard each second, clean-up and its verification — is the real code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _runs import load, only_run_dir

pytestmark = pytest.mark.emulator

_SCRIPT = r"""
import dataclasses, json, sys
from pathlib import Path
import locust  # monkey-patches first, as keyramp run does
from keyramp.profile import parse_profile
from keyramp.run._runner import RunOptions, run_profile
from keyramp.targets._cloud_target import CloudTarget
from keyramp.targets._emulator_target import EmulatorTarget

kind, endpoint, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
schedule, cap = json.loads(sys.argv[4]), int(sys.argv[5])

class EmulatedCloud(CloudTarget):
    def address(self, cell, base):
        real = super().address(cell, base)  # the real service's address: no endpoint
        assert real.endpoint is None
        return dataclasses.replace(real, endpoint=endpoint)

raw = {"name": "seam", "backend": "datastore", "duration": "3s", "seed": 5, "project": "acme-load-test",
       "workload": {"ops": {"insert": 0.7, "read": 0.3}, "record_count": 50},
       "schedule": {**schedule, "warmup": "0s"}, "cloud": {"max_ops_per_s": cap},
       "target": kind}
profile = parse_profile(raw, source="seam.toml")
if kind == "cloud":
    make = lambda p: EmulatedCloud(p, allow_cloud="acme-load-test", environ={})
else:
    make = lambda p: EmulatorTarget(p, endpoints={"datastore": endpoint})
outcome = run_profile(profile, RunOptions(out=out, quiet=True, make_target=make))
print(json.dumps({"status": outcome.status, "reason": outcome.reason}))
"""


def _adc(tmp_path: Path) -> Path:
    # The shape `gcloud auth application-default login` writes; loading it needs no network.
    path = tmp_path / "adc.json"
    path.write_text(json.dumps({"type": "authorized_user", "client_id": "id.apps.example", "client_secret": "s",
                                "refresh_token": "r", "quota_project_id": "acme-load-test"}))
    return path


def _run(kind: str, endpoint: str, out: Path, tmp_path: Path, schedule: dict[str, Any], *,
         cap: int = 150) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_EMULATOR_HOST")}
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(_adc(tmp_path))
    result = subprocess.run([sys.executable, "-c", _SCRIPT, kind, endpoint, str(out), json.dumps(schedule), str(cap)],
                            capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", ["emulator", "cloud"])
def test_both_targets_run_the_same_cell(tmp_path: Path, datastore_emulator: Any, kind: str) -> None:
    outcome = _run(kind, datastore_emulator.endpoint, tmp_path / "out", tmp_path, {"kind": "constant", "rate": 100})
    assert outcome == {"status": "complete", "reason": None}
    run_dir = only_run_dir(tmp_path / "out")
    manifest, summary = load(run_dir, "manifest.json"), load(run_dir, "summary.json")
    cell = next(iter(summary["cells"].values()))
    assert 200 <= cell["total"]["count"] <= 400 and cell["total"]["errors"] == 0
    entry = manifest["cells"][0]
    if kind == "cloud":
        # Clean-up deleted what the cell wrote (preload + inserts) and verified none is left.
        assert entry["cleanup"]["remaining"] == 0
        assert entry["cleanup"]["deleted"] >= 50 + cell["operations"]["insert"]["count"]
        assert manifest["cloud"]["max_ops_per_s"] == 150 and manifest["cloud"]["credentials"].startswith("Cred")
    else:
        assert "cleanup" not in entry and "cloud" not in manifest


def test_the_cloud_guard_stops_a_closed_model_above_the_cap(tmp_path: Path, datastore_emulator: Any) -> None:
    # A closed model has no planned rate: only the guard, once a second, can hold the cap. The
    # cap is low (32 users back to back pass 22 ops/s, its trip point, unless each operation
    # takes 1.4 s): a starved emulator once served 8 users at under 40 ops/s, and the guard
    # had nothing to stop.
    outcome = _run("cloud", datastore_emulator.endpoint, tmp_path / "out", tmp_path,
                   {"kind": "users", "users": 32, "spawn_rate": 32}, cap=20)
    assert outcome["status"] == "failed" and outcome["reason"].startswith("c00-datastore-random: cloud cap:")
    manifest = load(only_run_dir(tmp_path / "out"), "manifest.json")
    assert manifest["cells"][0]["cleanup"]["remaining"] == 0  # cleaned up after the failure too
