"""Locust master/workers (issue 9): ``keyramp run --workers N`` against a real emulator.

The merged run directory must be what one process would have written: counts that add
up across workers, percentiles of the merged raw histograms, the rate held, the same
summary schema, unique insert keys; a dead worker fails the run and keeps the record.
"""

from __future__ import annotations

import contextlib
import csv
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
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

from keyramp.core._errors import UsageError
from keyramp.results._catalog import load_run
from keyramp.results._read import read_intervals
from keyramp.run._hdr import latency_summary_ms, new_histogram, percentiles_us

pytestmark = pytest.mark.emulator

RATE = 300


@pytest.fixture
def bt_env(bigtable_emulator: Any) -> dict[str, str]:
    return emulator_env(bigtable_emulator)


def _profile(tmp_path: Path, name: str, duration: str, **schedule: Any) -> Path:
    return write_profile(
        tmp_path / f"{name}.toml", {"name": name, "backend": "bigtable", "duration": duration, "seed": 11},
        # Every operation's key is sampled (budget above the rate), so insert keys can be checked.
        workload={"ops": {"insert": 0.7, "read": 0.3}, "record_count": 200, "key_samples_per_s": 2000},
        keys={"strategy": "field_promotion"},
        schedule={"kind": "constant", "rate": RATE, "warmup": "0s", **schedule},
    )


def _ts(run_dir: Path) -> list[dict[str, Any]]:
    return timeseries_rows(run_dir)


def _shape(value: Any) -> Any:
    """The key structure of a JSON value (what 'same schema' means); a nullable field (e.g.
    ``append_points``: null when keys land spread) may be null on one side, a value on the other."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    if value is None:
        return _Null()
    return type(value).__name__ if not isinstance(value, (int, float)) or isinstance(value, bool) else "number"


class _Null:
    """A null leaf in ``_shape``: equal to any leaf type."""

    def __eq__(self, other: object) -> bool:
        return not isinstance(other, dict | list)

    def __repr__(self) -> str:
        return "null"


def _worker_pids(parent: int) -> list[int]:
    try:
        children = psutil.Process(parent).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [c.pid for c in children if "keyramp.run.worker" in c.cmdline()]  # python -m keyramp.run.worker


def test_two_workers_merge_exactly_and_hold_the_rate(tmp_path: Path, bt_env: dict[str, str]) -> None:
    profile = _profile(tmp_path, "dist", "6s")
    result = keyramp("run", str(profile), "--workers", "2", "--out", str(tmp_path / "out"), "--quiet", env=bt_env)
    run_dir = only_run_dir(tmp_path / "out")
    manifest, summary = load(run_dir, "manifest.json"), load(run_dir, "summary.json")
    assert result.returncode == 0, (manifest["status"], manifest.get("reason"), result.stderr[-2000:])
    assert manifest["status"] == "complete" and manifest["workers"] == 2
    cell_id, cell = next(iter(summary["cells"].items()))
    workers = manifest["cells"][0]["workers"]
    assert [w["index"] for w in workers] == [0, 1] and len({w["pid"] for w in workers}) == 2

    # Merged count == sum of the workers' counts, per operation (and each worker did its share).
    for op, stats in cell["operations"].items():
        assert stats["count"] == sum(w["ops"].get(op, 0) for w in workers) > 0
    assert cell["total"]["count"] == sum(w["count"] for w in workers)
    # Each worker paces half the rate: an even split, unless a busy machine held one back.
    if assert_rate_held(cell):
        assert all(abs(w["count"] - cell["total"]["count"] / 2) < 0.15 * cell["total"]["count"] for w in workers)
    rows = _ts(run_dir)
    for op, stats in cell["operations"].items():
        assert sum(int(r["count"]) for r in rows if r["op"] == op) == stats["count"]

    # Merged percentiles == percentiles of the merged raw histograms (whole cell and per second).
    run = load_run(run_dir)
    for op in ("insert", "read", "*"):  # "*": each interval the sum of the ops' intervals
        want = cell["total"] if op == "*" else cell["operations"][op]
        for service, field in ((False, "latency_ms"), (True, "service_ms")):
            intervals = read_intervals(run, cell_id, op, service=service)
            merged = new_histogram()
            for hist in intervals:
                merged.add(hist)
            assert merged.get_total_count() == want["count"]
            assert latency_summary_ms(merged).to_json() == want[field]
        per_second = [r for r in rows if r["op"] == op]
        for hist, row in zip(read_intervals(run, cell_id, op), per_second, strict=True):
            assert hist.get_total_count() == int(row["count"])
            if hist.get_total_count():
                p50, p99 = percentiles_us(hist, (50.0, 99.0))
                assert (round(p50 / 1000, 4), round(p99 / 1000, 4)) == (float(row["p50_ms"]), float(row["p99_ms"]))

    # One timeline point per second of the 6 s phase, the last one closed after the drain
    # (never a drain-only second at 0 % achieved), merged exactly as a single process does.
    timeline = cell["target_ops_per_s"]
    assert [p["t"] for p in timeline] == list(range(6)) and timeline[-1]["achieved"] > 0
    assert [int(r["second"]) for r in rows if r["op"] == "*"] == list(range(6))
    assert all(float(r["target_ops_per_s"]) == RATE for r in rows if r["op"] == "*")

    # Insert keys never collide across workers (every op sampled: budget > rate).
    inserted = [r["key"] for r in key_rows(run_dir) if r["op"] == "insert"]
    assert len(inserted) == cell["operations"]["insert"]["count"]
    assert len(set(inserted)) == len(inserted)

    # Locust's own CSVs come from the master's aggregate of the workers' stats.
    with open(run_dir / "locust" / f"{cell_id}_stats.csv", newline="") as fh:
        aggregated = next(r for r in csv.DictReader(fh) if r["Name"] == "Aggregated")
    assert int(aggregated["Request Count"]) == cell["total"]["count"]

    # Same summary schema as a single-process run of the same profile.
    single = keyramp("run", str(profile), "--out", str(tmp_path / "single"), "--quiet", "--duration", "2s",
                     env=bt_env)
    assert single.returncode == 0, single.stderr[-2000:]
    one = load(only_run_dir(tmp_path / "single"), "summary.json")
    assert _shape(one) == _shape(summary)
    assert set(load(only_run_dir(tmp_path / "single"), "manifest.json")) | {"master"} == set(manifest)
    assert _worker_pids(os.getpid()) == []  # no worker process of ours left behind


@contextlib.contextmanager
def _distributed_run(profile: Path, out: Path, env: dict[str, str], *, seconds: int) -> Iterator[Any]:
    """A ``--workers 2`` run in a subprocess, yielded once ``seconds`` intervals are recorded."""
    proc = subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--workers", "2", "--out",
                             str(out), "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if recorded_seconds(out) >= seconds:
                break
            time.sleep(0.2)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_killed_worker_fails_the_run_and_keeps_the_record(tmp_path: Path, bt_env: dict[str, str]) -> None:
    out = tmp_path / "out"
    with _distributed_run(_profile(tmp_path, "kill", "60s"), out, bt_env, seconds=3) as proc:
        pids = _worker_pids(proc.pid)
        assert len(pids) == 2, pids
        psutil.Process(pids[1]).kill()
        killed = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
    assert time.monotonic() - killed < 20
    assert proc.returncode == 1, stderr[-2000:]
    assert "Traceback" not in stderr
    run_dir = only_run_dir(out)
    manifest, summary = load(run_dir, "manifest.json"), load(run_dir, "summary.json")
    assert manifest["status"] == "failed" and summary["status"] == "failed"
    reason = manifest["reason"]
    assert "\n" not in reason and "worker" in reason and f"pid {pids[1]}" in reason, reason
    cell = next(iter(summary["cells"].values()))
    assert cell.get("incomplete") is True and cell["total"]["count"] > RATE
    assert all(_gone(pid) for pid in pids)  # the survivor was stopped by the master, by pid
    # Every interval either worker sent is in the summary: its counts are the workers' reports.
    workers = manifest["cells"][0]["workers"]
    dead = next(w for w in workers if w["pid"] == pids[1])
    alive = next(w for w in workers if w["pid"] == pids[0])
    assert dead.get("lost") is True and "lost" not in alive
    assert dead["count"] > 0 and dead["last_second"] is not None
    assert cell["total"]["count"] == dead["count"] + alive["count"]
    for op, stats in cell["operations"].items():
        assert stats["count"] == dead["ops"].get(op, 0) + alive["ops"].get(op, 0), op
    # Which share of the scheduled load was not generated (60 s at RATE ops/s were scheduled).
    generated = cell["load_generated"]
    assert generated["scheduled_ops"] == pytest.approx(RATE * 60, rel=0.01)
    assert generated["generated_ops"] == cell["total"]["count"]
    assert generated["not_generated_share"] == pytest.approx(1 - cell["total"]["count"] / (RATE * 60), abs=1e-3)
    assert [w["pid"] for w in generated["workers_lost"]] == [pids[1]]


def test_sigterm_to_the_master_interrupts_and_stops_its_workers(tmp_path: Path, bt_env: dict[str, str]) -> None:
    out = tmp_path / "out"
    with _distributed_run(_profile(tmp_path, "sig", "60s"), out, bt_env, seconds=2) as proc:
        pids = _worker_pids(proc.pid)
        assert len(pids) == 2
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr[-2000:]
    run_dir = only_run_dir(out)
    manifest = load(run_dir, "manifest.json")
    assert manifest["status"] == "interrupted" and "SIGTERM" in manifest["reason"]
    cell = next(iter(load(run_dir, "summary.json")["cells"].values()))
    assert cell.get("incomplete") is True and cell["total"]["count"] > 0
    assert all(_gone(pid) for pid in pids)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--worker"], "--worker needs --master-host"),
        (["p.toml", "--workers", "0"], "--workers: must be at least 1"),
        (["--worker", "--master-host", "h", "--workers", "2"], "--workers belongs on the master"),
        (["--worker", "--master-host", "h", "--master"], "--master belongs on the master"),
        (["--worker", "--master-host", "h", "p.toml"], "--worker takes no PROFILE"),
        (["p.toml", "--master", "--workers", "2"], "--master and --workers are exclusive"),
        (["p.toml", "--expect-workers", "2"], "--expect-workers needs --master"),
        (["p.toml", "--master", "--expect-workers", "0"], "--expect-workers: must be at least 1"),
        (["p.toml", "--master-host", "h"], "--master-host is for --worker"),
        (["p.toml", "--master", "--master-port", "70000"], "--master-port: must be 1..65535"),
        ([], "give at least one PROFILE"),
    ],
)
def test_contradictory_distributed_flags_are_refused(argv: list[str], needle: str) -> None:
    from keyramp.cli._main import build_parser
    from keyramp.cli._run import _check_run_args

    args = build_parser().parse_args(["run", *argv])
    with pytest.raises(UsageError) as info:
        _check_run_args(args)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_refusals_exit_2_with_one_line() -> None:
    result = keyramp("run", "--worker", "--workers", "2", "--master-host", "h", timeout=60)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("keyramp: ")
    assert "Traceback" not in result.stderr


def test_master_port_in_use_is_a_usage_error(tmp_path: Path) -> None:
    import socket

    profile = _profile(tmp_path, "busy", "1s")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = keyramp("run", str(profile), "--master", "--master-port", str(port), "--quiet", timeout=60)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "address already in use" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_insert_indexes_interleave_across_workers() -> None:
    """CellWorkload's interleaving: worker w takes w, w+N, … after the preload (no collisions)."""
    from keyramp.profile._profile import parse_profile
    from keyramp.workload._workload import CellWorkload

    profile = parse_profile({"name": "x", "backend": "bigtable", "workload": {"record_count": 10}})
    taken: Counter[int] = Counter()
    for w in range(3):
        wl = CellWorkload(backend="bigtable", strategy="random", settings=profile, worker_index=w, workers=3)
        taken.update(wl.next_insert_index() for _ in range(5))
    assert sorted(taken) == list(range(10, 25)) and set(taken.values()) == {1}
