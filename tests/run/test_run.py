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

from keyramp.results._generator import LATE_LIMIT
from keyramp.run._hdr import latency_summary_ms, new_histogram

pytestmark = pytest.mark.emulator

SUMMARY_OP_FIELDS = {"count", "errors", "error_rate", "errors_by_class", "ops_per_s", "latency_ms"}
PCT_FIELDS = {"p50", "p90", "p95", "p99", "p999", "max", "mean"}


def _rows(run_dir: Path, cell: str, op: str = "*") -> list[dict[str, Any]]:
    return [r for r in timeseries_rows(run_dir) if r["cell"] == cell and r["op"] == op]


@pytest.fixture
def bt_env(bigtable_emulator):
    return emulator_env(bigtable_emulator)


def test_run_writes_the_contract_run_directory(tmp_path: Path, bt_env: dict[str, str]) -> None:
    profile = write_profile(
        tmp_path / "p.toml",
        {"name": "contract", "backend": "bigtable", "duration": "3s", "seed": 7},
        workload={"ops": {"insert": 0.6, "read": 0.2, "scan": 0.1, "update": 0.1}, "record_count": 200},
        keys={"strategy": ["sequential", "random"]},
        schedule={"kind": "constant", "rate": 200},
        thresholds={"error_rate": 0.01},
    )
    result = keyramp("run", str(profile), "--out", str(tmp_path / "out"), env=bt_env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "c00-bigtable-sequential" in result.stdout and "c01-bigtable-random" in result.stdout
    run_dir = only_run_dir(tmp_path / "out")
    assert re.fullmatch(r"\d{8}T\d{9}Z-contract-[0-9a-f]{4}", run_dir.name)
    assert result.stdout.splitlines()[-1] == run_dir.name  # machine-readable: the run id on its own last line

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
    for cell_id, cell in summary["cells"].items():
        for op, stats in cell["operations"].items():
            assert set(stats) >= SUMMARY_OP_FIELDS, op
            assert set(stats["latency_ms"]) == PCT_FIELDS
            assert stats["count"] > 0
        assert cell["total"]["count"] == sum(s["count"] for s in cell["operations"].values())
        assert cell["target_ops_per_s"] and cell["target_ops_per_s"][0]["target"] == 200
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


def test_hlog_files_decode_and_agree_with_summary(tmp_path: Path, bt_env: dict[str, str]) -> None:
    profile = write_profile(
        tmp_path / "p.toml", {"name": "hlog", "backend": "bigtable", "duration": "3s"},
        workload={"ops": {"insert": 0.5, "read": 0.5}, "record_count": 100},
        keys={"strategy": "random"}, schedule={"kind": "constant", "rate": 300},
    )
    result = keyramp("run", str(profile), "--out", str(tmp_path / "out"), "--quiet", "--json", env=bt_env)
    assert result.returncode == 0, result.stderr[-2000:]
    run_dir = only_run_dir(tmp_path / "out")
    # --json: stdout is one document (the table went to stderr)
    doc = json.loads(result.stdout)
    assert [(r["run_id"], r["path"], r["status"], r["exit_code"]) for r in doc["runs"]] == [
        (run_dir.name, str(run_dir), "complete", 0)]
    assert doc["runs"][0]["summary"] == load(run_dir, "summary.json") and doc["scenario_report"] is None
    assert "c00-bigtable-random" in result.stderr
    cell_id, cell = next(iter(load(run_dir, "summary.json")["cells"].items()))
    for op in ("insert", "read"):
        for suffix, field in ((".hlog", "latency_ms"), (".service.hlog", "service_ms")):
            reader = HistogramLogReader(str(run_dir / "histograms" / f"{cell_id}.{op}{suffix}"), new_histogram())
            merged = new_histogram()
            intervals = 0
            while (hist := reader.get_next_interval_histogram()) is not None:
                merged.add(hist)
                intervals += 1
            assert intervals >= 3
            assert merged.get_total_count() == cell["operations"][op]["count"]
            assert latency_summary_ms(merged) == cell["operations"][op][field]
            assert merged.get_value_at_percentile(99) / 1000 == cell["operations"][op][field]["p99"]


@pytest.mark.slow
def test_ramp_500_50_5_steps_show_in_the_timeseries(tmp_path: Path, bt_env: dict[str, str]) -> None:
    # 5 min steps at time_scale 60 are 5 wall seconds: 100 -> 150 -> 225 -> 337.5 ops/s.
    profile = write_profile(
        tmp_path / "p.toml", {"name": "ramp", "backend": "bigtable", "duration": "20s"},
        workload={"ops": {"insert": 0.5, "read": 0.5}, "record_count": 100},
        keys={"strategy": "random"},
        schedule={"kind": "ramp_500_50_5", "start_ops": 100, "growth": 0.5, "step": "5m", "time_scale": 60},
    )
    result = keyramp("run", str(profile), "--out", str(tmp_path / "out"), "--quiet", env=bt_env)
    assert result.returncode == 0, result.stderr[-2000:]
    run_dir = only_run_dir(tmp_path / "out")
    manifest = load(run_dir, "manifest.json")
    assert manifest["cells"][0]["time_scale"] == 60.0
    cell_id = manifest["cells"][0]["id"]
    rows = _rows(run_dir, cell_id)
    assert_rate_held(load(run_dir, "summary.json")["cells"][cell_id])
    for step, expected in enumerate((100, 150, 225, 337.5)):
        # Skip each step's first second (the boundary) and judge the rest of the step.
        seconds = [r for r in rows if step * 5 + 1 <= int(r["second"]) < step * 5 + 5]
        assert all(float(r["target_ops_per_s"]) == pytest.approx(expected) for r in seconds)
        achieved = sum(int(r["count"]) for r in seconds) / len(seconds)
        # The step's rate held, unless the generator fell behind in it (a busy machine): its
        # late and dropped operations, recorded up to the next step's first second, say so.
        behind = sum(int(r["late"]) + int(r["dropped"]) for r in rows
                     if step * 5 + 1 <= int(r["second"]) <= step * 5 + 5)
        if behind <= LATE_LIMIT * expected * len(seconds):
            assert achieved == pytest.approx(expected, rel=0.2), (step, achieved, behind)


def test_overload_shows_in_corrected_latency_not_service_time(tmp_path: Path, bt_env: dict[str, str]) -> None:
    profile = write_profile(
        tmp_path / "p.toml", {"name": "overload", "backend": "bigtable", "duration": "4s"},
        workload={"ops": {"insert": 1.0}, "record_count": 0},
        keys={"strategy": "random"},
        schedule={"kind": "constant", "rate": 50000, "max_users": 4, "drop_after": "2s"},
    )
    result = keyramp("run", str(profile), "--out", str(tmp_path / "out"), "--quiet", env=bt_env)
    assert result.returncode == 0, result.stderr[-2000:]
    total = next(iter(load(only_run_dir(tmp_path / "out"), "summary.json")["cells"].values()))["total"]
    assert total["latency_ms"]["p99"] > 10 * total["service_ms"]["p99"]
    assert total["late"] > 0.9 * total["count"]
    assert total["dropped"] > total["count"]  # far more was intended than 4 users could start


@pytest.mark.parametrize("backend", ["datastore", "firestore", "firestore-datastore", "bigtable"])
def test_every_backend_runs_through_the_cli(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    kind_fixture = f"{backend.replace('-', '_')}_emulator"
    env = emulator_env(request.getfixturevalue(kind_fixture))
    profile = write_profile(
        tmp_path / "p.toml", {"name": f"all-{backend}", "backend": backend, "duration": "2s"},
        workload={"ops": {"insert": 0.4, "read": 0.2, "update": 0.1, "batch_write": 0.1, "batch_read": 0.1,
                          "scan": 0.1}, "record_count": 50, "batch_size": 5},
        keys={"strategy": ["hashed_prefix"]}, schedule={"kind": "constant", "rate": 100},
    )
    result = keyramp("run", str(profile), "--out", str(tmp_path / "out"), "--quiet", env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    cell = next(iter(load(only_run_dir(tmp_path / "out"), "summary.json")["cells"].values()))
    assert cell["total"]["count"] > 50
    assert cell["total"]["errors"] == 0, cell["total"]["errors_by_class"]
    assert set(cell["operations"]) == {"insert", "read", "update", "batch_write", "batch_read", "scan"}


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('name = "x"\nbackend = "spanner"\n', "unknown backend"),
        ('name = "x"\n[workload]\nops = { insert = 0.5 }\n', "sum to 1"),
        ('name = "x"\nduration = "-1s"\n', "duration"),
        ('name = "x"\ncolour = 1\n', "unknown field"),
        ("name = ", "invalid TOML"),
    ],
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
        schedule={"kind": "constant", "rate": 200},
    )
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(out), "--quiet"],
                            env=bt_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if recorded_seconds(out) > 2:  # a few seconds recorded
            break
        time.sleep(0.2)
    sent = time.monotonic()
    proc.send_signal(signum)
    _stdout, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 10
    assert proc.returncode == 130, stderr[-2000:]
    run_dir = only_run_dir(out)
    manifest = load(run_dir, "manifest.json")
    assert manifest["status"] == "interrupted" and signal.Signals(signum).name in manifest["reason"]
    summary = load(run_dir, "summary.json")
    cell = next(iter(summary["cells"].values()))
    assert cell["total"]["count"] > 200 and cell.get("incomplete") is True
    with open(run_dir / "locust" / f"{next(iter(summary['cells']))}_stats.csv", newline="") as fh:
        aggregated = next(r for r in csv.DictReader(fh) if r["Name"] == "Aggregated")
    assert int(aggregated["Request Count"]) == cell["total"]["count"]


@pytest.mark.slow
def test_later_profiles_start_their_own_emulators_after_channels_exist(tmp_path: Path) -> None:
    # One `keyramp run` over several profiles starts each profile's emulators when it gets
    # there, i.e. from a process whose earlier profile opened gRPC channels. With gRPC's
    # fork support on, the forked emulator child aborted before exec ("Epoll1Poller …
    # epoll_wait error", exit -6) in 2 of 3 starts; keyramp turns it off (keyramp/__init__).
    profiles = []
    for backend in ("bigtable", "datastore", "firestore"):
        profiles.append(str(write_profile(
            tmp_path / f"{backend}.toml",
            {"name": f"chain-{backend}", "backend": backend, "duration": "1s", "seed": 3},
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
    logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "state" / "logs").glob("*.log"))
    assert "epoll_wait error" not in logs


def test_warm_up_really_writes_before_the_measured_phase(tmp_path: Path, bt_env: dict[str, str]) -> None:
    # Users that reached their task before the warm-up began used to wait for the phase, so
    # the "warm-up" ran no operation at all. Count what is in the store afterwards.
    from keyramp.backends import BACKENDS, Target

    profile = write_profile(
        tmp_path / "w.toml",
        {"name": "warmup", "backend": "bigtable", "duration": "2s", "seed": 5},
        workload={"ops": {"insert": 1.0}, "record_count": 50},
        keys={"strategy": ["random"]},
        schedule={"kind": "constant", "rate": 100, "warmup": "3s"},
    )
    result = keyramp("run", str(profile), "--out", str(tmp_path / "out"), "--quiet", env=bt_env)
    assert result.returncode == 0, result.stderr[-2000:]
    run_dir = only_run_dir(tmp_path / "out")
    cell = load(run_dir, "summary.json")["cells"]["c00-bigtable-random"]
    assert cell["warmup_s"] >= 3.0
    meta = load(run_dir, "manifest.json")
    target = Target(backend="bigtable", project=meta["profile"]["project"], endpoint=bt_env["BIGTABLE_EMULATOR_HOST"],
                    namespace=meta["cells"][0]["namespace"])
    warm_up_rows = BACKENDS["bigtable"].remaining(target) - 50 - cell["operations"]["insert"]["count"]
    assert warm_up_rows >= 0.5 * 100 * cell["warmup_s"], (warm_up_rows, cell["warmup_s"])
