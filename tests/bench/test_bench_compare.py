"""The compare benches (issue 32) in their smoke mode, against the suite's emulator, so they cannot
rot: one command each, a competing CPU process started and stopped by the bench, the machine state
recorded with every result."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from keyramp.targets._emulators import RunningEmulator

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench(name: str, tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), "--smoke", "--out", str(out), *args],
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode in (0, 1) and out.exists(), proc.stderr[-3000:]  # 1: a smoke series missed its target
    return json.loads(out.read_text())


def test_busy_cores_starts_and_stops_its_own_processes() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from _series import MachineState, busy_cores
    finally:
        sys.path.remove(str(BENCH))
    state = MachineState().start()
    with busy_cores(1.5) as pids:
        assert len(pids) == 2 and all(psutil.pid_exists(p) for p in pids)
        procs = [psutil.Process(p) for p in pids]
        deadline = time.monotonic() + 30
        while min(sum(p.cpu_times()[:2]) for p in procs) < 0.05:  # both spin (the half one too)
            assert time.monotonic() < deadline, "the spinning processes used no CPU"
            time.sleep(0.01)
    _gone, alive = psutil.wait_procs(procs, timeout=10)
    assert not alive
    state.sample()
    facts = state.to_dict()
    assert facts["cpu_busy_share"]["samples"] == 1 and 0 <= facts["cpu_busy_share"]["max"] <= 1
    with busy_cores(0.0) as none:
        assert none == []


@pytest.mark.emulator
def test_aa_smoke_closed_model_with_a_busy_core(tmp_path: Path, bigtable_emulator: RunningEmulator) -> None:
    result = _bench("bench_compare_aa", tmp_path, "--models", "closed", "--busy",
                    "--emulator", bigtable_emulator.endpoint)
    closed = result["models"]["closed"]
    assert closed["vs_first"]["comparisons"] == 2 and closed["all_pairs"]["comparisons"] == 6
    assert closed["vs_set_of_2"]["comparisons"] == 3
    state = result["machine_state"]
    assert state["state"].endswith("kept busy by the bench") and state["cpu_busy_share"]["samples"] == 3
    assert state["loadavg_1m"]["samples"] == 3
    assert len(closed["per_run"]) == 3 and all(r["machine_busy"] is not None for r in closed["per_run"])


@pytest.mark.emulator
def test_ab_smoke_open_model(tmp_path: Path, bigtable_emulator: RunningEmulator) -> None:
    result = _bench("bench_compare_ab", tmp_path, "--models", "open", "--emulator", bigtable_emulator.endpoint)
    open_model = result["models"]["open"]
    assert open_model["pairs"] == 2 and open_model["cross"]["comparisons"] == 4  # every B against every A
    assert open_model["vs_set_of_all_a"]["comparisons"] == 2
    assert {d["op"] for d in open_model["pairs_detail"]} == {"insert", "read"}
    assert result["conditions"]["injected_round_trip_ms"] == 4.0
    assert result["machine_state"]["state"] == "no load added by the bench"


@pytest.mark.emulator
def test_machine_limit_smoke(tmp_path: Path, bigtable_emulator: RunningEmulator) -> None:
    result = _bench("bench_machine_limit", tmp_path, "--emulator", bigtable_emulator.endpoint)
    runs = result["runs"]
    assert [r["busy_cores"] for r in sorted(runs, key=lambda r: r["busy_cores"])] == [0.0, 0.5]
    assert all(r["machine_busy"] is not None and r["service_p50_ms"] for r in runs)
