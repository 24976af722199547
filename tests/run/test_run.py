"""End to end: the real CLI, Locust and the official emulators, checked against the contract."""

from __future__ import annotations

import csv
import itertools
import json
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _runs import (
    assert_rate_held,
    emulator_env,
    key_rows,
    keyramp,
    load,
    only_run_dir,
    recorded_seconds,
    timeseries_rows,
    write_profile,
)
from hdrh.log import HistogramLogReader

from keyramp.backends import EMULATOR_FOR
from keyramp.results._generator import LATE_LIMIT
from keyramp.results._summary import SUMMARY_VERSION, RunManifest, RunSummary
from keyramp.run._hdr import latency_summary_ms, new_histogram

pytestmark = pytest.mark.emulator

SUMMARY_OP_FIELDS = {"count", "errors", "error_rate", "errors_by_class", "ops_per_s", "latency_ms"}
PCT_FIELDS = {"p50", "p90", "p95", "p99", "p999", "max", "mean"}


def _rows(run_dir: Path, cell: str, op: str = "*") -> list[dict[str, Any]]:
    return [r for r in timeseries_rows(run_dir) if r["cell"] == cell and r["op"] == op]


@pytest.fixture
def bt_env(bigtable_emulator):
    return emulator_env(bigtable_emulator)


# One `keyramp run --json` over three profiles answers most questions of this module: each
# `keyramp run` costs seconds of CPU to import Locust, gRPC and numpy, and a suite on a busy
# 2-core machine pays for every one.
_CONTRACT_RATE, _CONTRACT_WARMUP_S = 100, 2
_RAMP_STEPS = (60, 90, 135, 202.5)  # start_ops 60, growth 0.5
_RAMP_STEP_S = 2  # "2m" at time_scale 60


@dataclass(frozen=True)
class _Runs:
    result: subprocess.CompletedProcess[str]
    doc: dict[str, Any]
    dirs: dict[str, Path]  # by profile name
    endpoint: str


@pytest.fixture(scope="module")
def bt_runs(tmp_path_factory: pytest.TempPathFactory, bigtable_emulator: Any) -> _Runs:
    tmp = tmp_path_factory.mktemp("bt-runs")
    contract = write_profile(
        tmp / "contract.toml",
        {"name": "contract", "backend": "bigtable", "duration": "3s", "seed": 7},
        workload={"ops": {"insert": 0.6, "read": 0.2, "scan": 0.1, "update": 0.1}, "record_count": 200},
        keys={"strategy": ["sequential", "random"]},
        schedule={"kind": "constant", "rate": _CONTRACT_RATE, "warmup": f"{_CONTRACT_WARMUP_S}s"},
        thresholds={"error_rate": 0.01},
    )
    # Far more intended than 2 users can start: the queue shows in corrected latency only.
    overload = write_profile(
        tmp / "overload.toml", {"name": "overload", "backend": "bigtable", "duration": "2s"},
        workload={"ops": {"insert": 1.0}, "record_count": 0},
        keys={"strategy": "random"},
        schedule={"kind": "constant", "rate": 50000, "max_users": 2, "drop_after": "1s", "warmup": "0s"},
    )
    # 2 min steps at time_scale 60 are 2 wall seconds: 60 -> 90 -> 135 -> 202.5 ops/s.
    ramp = write_profile(
        tmp / "ramp.toml", {"name": "ramp", "backend": "bigtable", "duration": f"{_RAMP_STEP_S * len(_RAMP_STEPS)}s"},
        workload={"ops": {"insert": 0.5, "read": 0.5}, "record_count": 100},
        keys={"strategy": "random"},
        schedule={"kind": "ramp_500_50_5", "start_ops": _RAMP_STEPS[0], "growth": 0.5, "step": f"{_RAMP_STEP_S}m",
                  "time_scale": 60, "warmup": "0s"},
    )
    out = tmp / "out"
    # The contract last: each cell resets the store, and the warm-up test counts its last cell's rows.
    result = keyramp("run", str(ramp), str(overload), str(contract), "--out", str(out), "--quiet", "--json",
                     env=emulator_env(bigtable_emulator))
    assert result.returncode == 0, result.stderr[-2000:]
    dirs = {load(p, "manifest.json")["profile"]["name"]: p for p in out.iterdir()}
    assert sorted(dirs) == ["contract", "overload", "ramp"]
    return _Runs(result=result, doc=json.loads(result.stdout), dirs=dirs, endpoint=bigtable_emulator.endpoint)


def test_run_writes_the_contract_run_directory(bt_runs: _Runs) -> None:
    run_dir = bt_runs.dirs["contract"]
    assert re.fullmatch(r"\d{8}T\d{9}Z-contract-[0-9a-f]{4}", run_dir.name)

    manifest = load(run_dir, "manifest.json")
    for key in (
        "run_id",
        "profile",
        "cells",
        "versions",
        "git_sha",
        "host",
        "seed",
        "started_at",
        "ended_at",
        "status",
    ):
        assert key in manifest
    assert manifest["status"] == "complete" and manifest["seed"] == 7
    assert manifest["versions"]["locust"] and manifest["versions"]["google-cloud-bigtable"]
    assert manifest["profile"]["workload"]["value_size"] == 256  # resolved with defaults

    summary = load(run_dir, "summary.json")
    assert summary["status"] == "complete" and summary["thresholds_passed"] is True
    # written through the results model, current version: reading it back loses nothing
    assert summary["schema_version"] == SUMMARY_VERSION
    assert json.dumps(RunSummary.from_json(summary).to_json()) == json.dumps(summary)
    assert RunManifest.from_json(manifest).to_json() == manifest
    assert sorted(summary["cells"]) == ["c00-bigtable-sequential", "c01-bigtable-random"]
    for cell_id, cell in summary["cells"].items():
        for op, stats in cell["operations"].items():
            assert set(stats) >= SUMMARY_OP_FIELDS, op
            assert set(stats["latency_ms"]) == PCT_FIELDS
            assert stats["count"] > 0
        assert cell["total"]["count"] == sum(s["count"] for s in cell["operations"].values())
        assert cell["target_ops_per_s"] and cell["target_ops_per_s"][0]["target"] == _CONTRACT_RATE
        # one point per second of the 3 s phase; the last one holds its in-flight operations
        # (closed after the drain) instead of a drain-only second at 0 % achieved
        timeline = cell["target_ops_per_s"]
        assert [p["t"] for p in timeline] == [0, 1, 2] and timeline[-1]["achieved"] > 0
        assert_rate_held(cell)
        assert [int(r["second"]) for r in _rows(run_dir, cell_id)] == [0, 1, 2]
        assert cell["thresholds"][0]["name"] == "error_rate" and cell["thresholds"][0]["passed"]
        # Locust's own counters agree with ours (events.request is fired once per operation).
        with open(run_dir / "locust" / f"{cell_id}_stats.csv", newline="") as fh:
            locust_rows = {r["Name"]: r for r in csv.DictReader(fh)}
        assert int(locust_rows["Aggregated"]["Request Count"]) == cell["total"]["count"]
        assert (run_dir / "histograms" / f"{cell_id}.insert.hlog").exists()
        assert (run_dir / "histograms" / f"{cell_id}.insert.service.hlog").exists()
        assert sum(int(r["count"]) for r in _rows(run_dir, cell_id)) == cell["total"]["count"]
    keys = key_rows(run_dir)
    assert {k["cell"] for k in keys} == set(summary["cells"])
    seq_keys = [k["key"] for k in keys if k["cell"] == "c00-bigtable-sequential" and k["op"] == "insert"]
    # Sequential keys climb in byte order (samples are taken at completion, so concurrent
    # inserts may swap neighbours; the trend must still be overwhelmingly upward).
    ordered = sum(a < b for a, b in itertools.pairwise(seq_keys)) / (len(seq_keys) - 1)
    assert ordered > 0.8 and seq_keys[-1] > seq_keys[0]


def test_hlog_files_decode_and_agree_with_summary(bt_runs: _Runs) -> None:
    # --json: stdout is one document, a run per profile in order (the tables went to stderr)
    doc, dirs = bt_runs.doc, bt_runs.dirs
    assert [(r["run_id"], r["path"], r["status"], r["exit_code"]) for r in doc["runs"]] == [
        (dirs[name].name, str(dirs[name]), "complete", 0) for name in ("ramp", "overload", "contract")]
    assert doc["scenario_report"] is None
    for run in doc["runs"]:
        assert run["summary"] == load(Path(run["path"]), "summary.json")
    assert "c00-bigtable-sequential" in bt_runs.result.stderr and "c00-bigtable-random" in bt_runs.result.stderr
    run_dir = dirs["contract"]
    for cell_id, cell in load(run_dir, "summary.json")["cells"].items():
        for op in ("insert", "read", "scan", "update"):
            for suffix, field in ((".hlog", "latency_ms"), (".service.hlog", "service_ms")):
                reader = HistogramLogReader(str(run_dir / "histograms" / f"{cell_id}.{op}{suffix}"), new_histogram())
                merged = new_histogram()
                intervals = 0
                while (hist := reader.get_next_interval_histogram()) is not None:
                    merged.add(hist)
                    intervals += 1
                assert intervals >= 3, (cell_id, op)
                assert merged.get_total_count() == cell["operations"][op]["count"]
                assert latency_summary_ms(merged).to_json() == cell["operations"][op][field]
                assert merged.get_value_at_percentile(99) / 1000 == cell["operations"][op][field]["p99"]


def test_ramp_500_50_5_steps_show_in_the_timeseries(bt_runs: _Runs) -> None:
    run_dir = bt_runs.dirs["ramp"]
    manifest = load(run_dir, "manifest.json")
    assert manifest["cells"][0]["time_scale"] == 60.0
    cell_id = manifest["cells"][0]["id"]
    rows = _rows(run_dir, cell_id)
    assert_rate_held(load(run_dir, "summary.json")["cells"][cell_id])
    n = _RAMP_STEP_S
    for step, expected in enumerate(_RAMP_STEPS):
        # Skip each step's first second (the boundary) and judge the rest of the step.
        seconds = [r for r in rows if step * n + 1 <= int(r["second"]) < step * n + n]
        assert len(seconds) == n - 1
        assert all(float(r["target_ops_per_s"]) == pytest.approx(expected) for r in seconds)
        achieved = sum(int(r["count"]) for r in seconds) / len(seconds)
        # The step's rate held, unless the generator fell behind in it (a busy machine): its
        # late and dropped operations, recorded up to the next step's first second, say so.
        behind = sum(int(r["late"]) + int(r["dropped"]) for r in rows
                     if step * n + 1 <= int(r["second"]) <= step * n + n)
        if behind <= LATE_LIMIT * expected * len(seconds):
            assert achieved == pytest.approx(expected, rel=0.2), (step, achieved, behind)


def test_overload_shows_in_corrected_latency_not_service_time(bt_runs: _Runs) -> None:
    total = next(iter(load(bt_runs.dirs["overload"], "summary.json")["cells"].values()))["total"]
    # Medians: nearly every operation waited in the queue, while a busy machine's stalls can
    # push even the service time's tail to hundreds of milliseconds.
    assert total["latency_ms"]["p50"] > 10 * total["service_ms"]["p50"]
    assert total["late"] > 0.9 * total["count"]
    assert total["dropped"] > total["count"]  # far more was intended than 2 users could start


def test_warm_up_really_writes_before_the_measured_phase(bt_runs: _Runs) -> None:
    # Users that reached their task before the warm-up began used to wait for the phase, so
    # the "warm-up" ran no operation at all. Count what is in the store afterwards.
    from keyramp.backends import BACKENDS, Target

    run_dir = bt_runs.dirs["contract"]
    meta = load(run_dir, "manifest.json")
    spec = meta["cells"][-1]  # each cell resets the store: the run's last cell's rows are still there
    cell = load(run_dir, "summary.json")["cells"][spec["id"]]
    assert cell["warmup_s"] >= _CONTRACT_WARMUP_S
    target = Target(backend="bigtable", project=meta["profile"]["project"], endpoint=bt_runs.endpoint,
                    namespace=spec["namespace"])
    measured = cell["operations"]["insert"]["count"]
    warm_up_rows = BACKENDS["bigtable"].remaining(target) - 200 - measured
    # Inserted at about the rate of the measured phase (both ran on the same busy machine):
    # not nothing (the bug), nor a small fraction. (Half failed at 0.46 on a machine at load 13:
    # the warm-up's first second is the users' cold start.)
    warm_up_rate, measured_rate = warm_up_rows / cell["warmup_s"], measured / cell["duration_s"]
    assert warm_up_rate >= 0.25 * measured_rate > 0, (warm_up_rows, cell["warmup_s"], measured, cell["duration_s"])


_BACKENDS = ("datastore", "firestore", "firestore-datastore", "bigtable")


@pytest.fixture(scope="module")
def every_backend_run(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> tuple[
        subprocess.CompletedProcess[str], Path]:
    """One profile over the four backends (a cell each) in one text-mode `keyramp run`."""
    kinds = [EMULATOR_FOR[b] for b in _BACKENDS]
    request.getfixturevalue("emulator_manager").up(kinds)  # the session's, started side by side
    emulators = [request.getfixturevalue(f"{kind.replace('-', '_')}_emulator") for kind in kinds]
    tmp = tmp_path_factory.mktemp("all-backends")
    # No warm-up (it would settle each JVM for seconds): a cold emulator's slow start is the
    # generator's late operations, which assert_rate_held accepts.
    profile = write_profile(
        tmp / "p.toml", {"name": "all", "backend": list(_BACKENDS), "duration": "3s"},
        workload={"ops": {"insert": 0.4, "read": 0.2, "update": 0.1, "batch_write": 0.1, "batch_read": 0.1,
                          "scan": 0.1}, "record_count": 50, "batch_size": 5},
        keys={"strategy": ["hashed_prefix"]}, schedule={"kind": "constant", "rate": 100, "warmup": "0s"},
    )
    result = keyramp("run", str(profile), "--out", str(tmp / "out"), env=emulator_env(*emulators))
    assert result.returncode == 0, result.stderr[-2000:]
    return result, only_run_dir(tmp / "out")


@pytest.mark.parametrize("backend", _BACKENDS)
def test_every_backend_runs_through_the_cli(every_backend_run: tuple[Any, Path], backend: str) -> None:
    _result, run_dir = every_backend_run
    (cell_id,) = [c["id"] for c in load(run_dir, "manifest.json")["cells"] if c["backend"] == backend]
    cell = load(run_dir, "summary.json")["cells"][cell_id]
    assert_rate_held(cell)
    assert cell["total"]["errors"] == 0, cell["total"]["errors_by_class"]
    assert set(cell["operations"]) == {"insert", "read", "update", "batch_write", "batch_read", "scan"}
    assert all(op["count"] > 0 for op in cell["operations"].values())


def test_run_prints_each_cell_and_the_run_id_last(every_backend_run: tuple[Any, Path]) -> None:
    result, run_dir = every_backend_run
    for cell in load(run_dir, "manifest.json")["cells"]:
        assert cell["id"] in result.stdout
    assert result.stdout.splitlines()[-1] == run_dir.name  # machine-readable: the run id on its own last line


# Each message (sum to 1, duration, unknown field, …) is tested in-process by
# tests/profile/test_profile.py; here, one profile the validator refuses and one the TOML
# parser refuses take the whole CLI path (each `keyramp run` imports Locust first).
@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('name = "x"\nbackend = "spanner"\n', "unknown backend"),
        ("name = ", "invalid TOML"),
    ],
    ids=["unknown-backend", "invalid-toml"],
)
def test_bad_profiles_exit_2_with_one_line(tmp_path: Path, content: str, needle: str) -> None:
    profile = tmp_path / "bad.toml"
    profile.write_text(content)
    result = keyramp("run", str(profile), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_missing_profile_file_exits_2(tmp_path: Path) -> None:
    result = keyramp("run", str(tmp_path / "nope.toml"))
    assert result.returncode == 2 and "no such profile file" in result.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_run_keeps_what_was_recorded(tmp_path: Path, bt_env: dict[str, str], signum: int) -> None:
    profile = write_profile(
        tmp_path / "p.toml", {"name": "sig", "backend": "bigtable", "duration": "60s"},
        workload={"ops": {"insert": 1.0}, "record_count": 0}, keys={"strategy": "random"},
        schedule={"kind": "constant", "rate": 200, "warmup": "0s"},
    )
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(out), "--quiet"],
                            env=bt_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and recorded_seconds(out) < 2:  # the measured phase is under way
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            time.sleep(0.1)
        recorded = sum(int(r["count"]) for r in timeseries_rows(only_run_dir(out)) if r["op"] == "*")
        sent = time.monotonic()
        proc.send_signal(signum)
        _stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert time.monotonic() - sent < 30  # far from the broken case: the 60 s cell going on (17 s at load 13)
    assert proc.returncode == 130, stderr[-2000:]
    run_dir = only_run_dir(out)
    manifest = load(run_dir, "manifest.json")
    assert manifest["status"] == "interrupted" and signal.Signals(signum).name in manifest["reason"]
    summary = load(run_dir, "summary.json")
    cell = next(iter(summary["cells"].values()))
    # Everything recorded before the signal is kept (and what was in flight after it).
    assert cell["total"]["count"] >= recorded > 0 and cell.get("incomplete") is True
    with open(run_dir / "locust" / f"{next(iter(summary['cells']))}_stats.csv", newline="") as fh:
        aggregated = next(r for r in csv.DictReader(fh) if r["Name"] == "Aggregated")
    assert int(aggregated["Request Count"]) == cell["total"]["count"]


@pytest.mark.slow
@pytest.mark.extended
def test_later_profiles_start_their_own_emulators_after_channels_exist(tmp_path: Path) -> None:
    # One `keyramp run` over several profiles starts each profile's emulators when it gets
    # there, i.e. from a process whose earlier profile opened gRPC channels. With gRPC's
    # fork support on, the forked emulator child aborted before exec ("Epoll1Poller …
    # epoll_wait error", exit -6) in 2 of 3 starts; keyramp turns it off (keyramp/__init__).
    # The child dies between fork and exec, so which emulator it would have become does not
    # matter: three Bigtable profiles (each run starts and stops its own emulator) make two
    # starts after channels exist, each a Go binary instead of a JVM.
    profiles = []
    for i in range(3):
        profiles.append(str(write_profile(
            tmp_path / f"chain-{i}.toml",
            {"name": f"chain-{i}", "backend": "bigtable", "duration": "1s", "seed": 3},
            workload={"ops": {"insert": 1.0}, "record_count": 20},
            keys={"strategy": ["random"]},
            schedule={"kind": "constant", "rate": 50, "warmup": "0s"},
        )))
    env = emulator_env()  # no *_EMULATOR_HOST: keyramp starts (and stops) its own
    env.pop("GRPC_ENABLE_FORK_SUPPORT", None)
    env["KEYRAMP_STATE_DIR"] = str(tmp_path / "state")
    result = keyramp("run", *profiles, "--out", str(tmp_path / "out"), "--quiet", env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    statuses = sorted(load(p, "summary.json")["status"] for p in (tmp_path / "out").iterdir())
    assert statuses == ["complete"] * 3
    log_files = list((tmp_path / "state" / "logs").glob("bigtable-*.log"))  # one per start (and port)
    assert len(log_files) == 3, log_files
    logs = "".join(p.read_text(errors="replace") for p in log_files)
    assert "epoll_wait error" not in logs

