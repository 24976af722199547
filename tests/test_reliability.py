"""Faults, interrupts and bad input never lose what was recorded (issue 10).

Each fault test runs the real CLI in a subprocess against a *private* emulator (its own
state dir), so killing that emulator cannot disturb the session fixtures.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from keyramp._emulators import EmulatorManager, RunningEmulator
from tests._runs import ENV_FOR_KIND, emulator_env, keyramp, load, only_run_dir, write_profile

pytestmark = pytest.mark.emulator

_EMULATOR_MARKERS = ("CloudDatastore", "cloud-firestore-emulator", "cbtemulator")
#: Inherited by every process this module starts (emulators, keyramp runs and the emulators
#: *they* start), so the orphan check finds ours and not other sessions' emulators.
_MARK = "KEYRAMP_RELIABILITY_TEST"


def _our_emulators(mark: str) -> set[int]:
    pids = set()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if not any(m in cmd for m in _EMULATOR_MARKERS):
            continue
        try:
            if proc.environ().get(_MARK) == mark:
                pids.add(proc.info["pid"])
        except psutil.Error:
            continue
    return pids


@pytest.fixture(scope="module", autouse=True)
def _no_orphaned_emulators() -> Iterator[None]:
    """No emulator process started by this module outlives it (checked with psutil)."""
    mark = uuid.uuid4().hex
    os.environ[_MARK] = mark
    try:
        yield
    finally:
        del os.environ[_MARK]
    deadline = time.monotonic() + 15
    while (left := _our_emulators(mark)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"orphaned emulator processes: {left}"


@pytest.fixture
def private_emulator(tmp_path: Path) -> Iterator[Any]:
    """``private_emulator(kind)`` -> a RunningEmulator owned by this test only; stopped after it."""
    managers: list[EmulatorManager] = []

    def start(kind: str) -> RunningEmulator:
        manager = EmulatorManager(state_dir=tmp_path / f"state-{kind}")
        managers.append(manager)
        return manager.up([kind])[kind]

    yield start
    for manager in managers:
        manager.down()


def _popen_run(profile: Path, out: Path, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(out), "--quiet",
                             *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_seconds(out: Path, seconds: int, proc: subprocess.Popen[str], timeout: float = 90) -> None:
    """Until the run's timeseries holds ``seconds`` closed intervals."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        runs = list(out.glob("*/timeseries.csv")) if out.exists() else []
        if runs:
            with open(runs[0], newline="") as fh:
                secs = {r["second"] for r in csv.DictReader(fh) if r["op"] == "*"}
            if len(secs) >= seconds:
                return
        time.sleep(0.1)
    raise AssertionError(f"no {seconds} s recorded within {timeout} s")


def _locust_total(run_dir: Path, cell_id: str) -> int:
    with open(run_dir / "locust" / f"{cell_id}_stats.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Name"] == "Aggregated"]
    return int(rows[0]["Request Count"])


def _assert_recorded_and_consistent(run_dir: Path, *, status: set[str], needle: str) -> dict[str, Any]:
    manifest = load(run_dir, "manifest.json")
    assert manifest["status"] in status, manifest["status"]
    reason = manifest["reason"]
    assert reason and "\n" not in reason and needle in reason, reason
    summary = load(run_dir, "summary.json")
    assert summary["status"] == manifest["status"] and summary["reason"] == reason
    cell_id, cell = next(iter(summary["cells"].items()))
    assert cell["incomplete"] is True
    assert cell["total"]["count"] > 0
    assert _locust_total(run_dir, cell_id) == cell["total"]["count"]
    with open(run_dir / "timeseries.csv", newline="") as fh:
        per_second = sum(int(r["count"]) for r in csv.DictReader(fh) if r["cell"] == cell_id and r["op"] == "*")
    assert per_second == cell["total"]["count"]
    return cell


_BACKEND_OF = {"datastore": "datastore", "firestore": "firestore", "firestore-datastore": "firestore-datastore",
               "bigtable": "bigtable"}


def _load_profile(tmp_path: Path, backend: str, *, duration: str = "120s", **workload: Any) -> Path:
    return write_profile(
        tmp_path / "p.toml", {"name": f"fault-{backend}", "backend": backend, "duration": duration},
        workload={"ops": {"insert": 0.5, "read": 0.5}, "record_count": 20, **workload},
        keys={"strategy": "random"}, schedule={"kind": "constant", "rate": 100},
    )


@pytest.mark.parametrize("kind", ["datastore", "firestore", "firestore-datastore", "bigtable"])
def test_emulator_killed_mid_run_fails_fast_and_keeps_the_record(tmp_path: Path, private_emulator: Any,
                                                                 kind: str) -> None:
    emu = private_emulator(kind)
    profile = _load_profile(tmp_path, _BACKEND_OF[kind])
    out = tmp_path / "out"
    proc = _popen_run(profile, out, emulator_env(emu), "--timeout", "2")
    try:
        _wait_for_seconds(out, 3, proc)
        killed = time.monotonic()
        os.killpg(emu.pid, signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - killed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print(f"{kind}: run ended {took:.1f} s after the emulator was killed: {load(only_run_dir(out), 'manifest.json')['reason']}")
    assert took < 15, took
    assert proc.returncode == 1, stderr[-2000:]
    assert "Traceback" not in stderr
    cell = _assert_recorded_and_consistent(only_run_dir(out), status={"failed"}, needle="unreachable")
    assert cell["total"]["errors"] > 0


def test_owned_emulator_that_dies_fails_the_run_with_its_log_tail(tmp_path: Path) -> None:
    env = emulator_env()  # no endpoints: keyramp starts (and owns) the bigtable emulator
    env["KEYRAMP_STATE_DIR"] = str(tmp_path / "state")
    profile = _load_profile(tmp_path, "bigtable")
    out = tmp_path / "out"
    proc = _popen_run(profile, out, env)
    try:
        _wait_for_seconds(out, 2, proc)
        state = json.loads((tmp_path / "state" / "emulators.json").read_text())
        pid = state["emulators"]["bigtable"]["pid"]
        killed = time.monotonic()
        os.killpg(pid, signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - killed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, stderr[-2000:]
    assert took < 6, took  # noticed by the ticker's poll, not by the 5 s unreachable window
    _assert_recorded_and_consistent(only_run_dir(out), status={"failed"}, needle="emulator bigtable exited (log tail: ")


def _bt_profile(tmp_path: Path, *, name: str = "sig", strategies: list[str] | None = None, duration: str = "60s",
                record_count: int = 0) -> Path:
    return write_profile(
        tmp_path / f"{name}.toml", {"name": name, "backend": "bigtable", "duration": duration},
        workload={"ops": {"insert": 0.5, "read": 0.5} if record_count else {"insert": 1.0},
                  "record_count": record_count, "batch_size": 100},
        keys={"strategy": strategies or ["random"]}, schedule={"kind": "constant", "rate": 200},
    )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_during_preload_ends_promptly(tmp_path: Path, private_emulator: Any, signum: int) -> None:
    emu = private_emulator("bigtable")
    profile = _bt_profile(tmp_path, record_count=2_000_000)  # minutes of preload
    out = tmp_path / "out"
    proc = _popen_run(profile, out, emulator_env(emu))
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob("*/manifest.json")) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(3)  # inside the preload
        assert proc.poll() is None
        sent = time.monotonic()
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr[-2000:]
    assert took < 10, took
    run_dir = only_run_dir(out)
    manifest, summary = load(run_dir, "manifest.json"), load(run_dir, "summary.json")
    assert manifest["status"] == summary["status"] == "interrupted"
    assert signal.Signals(signum).name in manifest["reason"]
    assert summary["cells"] == {}  # nothing was measured yet, and nothing is made up


def test_signal_between_cells_keeps_finished_cells_and_starts_no_more(tmp_path: Path, private_emulator: Any) -> None:
    emu = private_emulator("bigtable")
    profile = _bt_profile(tmp_path, strategies=["random", "sequential", "hashed_prefix"], duration="2s",
                          record_count=20_000)
    out = tmp_path / "out"
    proc = _popen_run(profile, out, emulator_env(emu))
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            summaries = list(out.glob("*/summary.json"))
            if summaries and json.loads(summaries[0].read_text())["cells"]:
                break  # the first cell is done; the second is resetting/preloading
            assert proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr[-2000:]
    run_dir = only_run_dir(out)
    summary = load(run_dir, "summary.json")
    assert summary["status"] == "interrupted"
    first = summary["cells"]["c00-bigtable-random"]
    assert "incomplete" not in first and first["total"]["count"] > 100
    assert "c02-bigtable-hashed-prefix" not in summary["cells"]
    assert _locust_total(run_dir, "c00-bigtable-random") == first["total"]["count"]
