"""The run directory writer as the recorder's sink, and what a killed run leaves behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _runs import emulator_env, only_run_dir, recorded_seconds, write_profile

from keyramp.results._catalog import load_run
from keyramp.results._read import data_files, read_intervals, read_keys, read_timeseries
from keyramp.results._rows import TimeseriesRow
from keyramp.results._rundir import RunDirectory


def _row(cell: str, second: int, op: str = "*") -> TimeseriesRow:
    return TimeseriesRow(cell=cell, op=op, second=second, count=10, errors=0, p50_ms=1.0, p99_ms=2.0,
                         service_p99_ms=2.0, max_ms=3.0, target_ops_per_s=10.0, late=0, dropped=0, error_classes={})


def test_each_flush_closes_a_readable_part_and_the_cell_is_compacted_when_the_next_begins(tmp_path: Path) -> None:
    with RunDirectory(tmp_path, "sink") as run:
        run.begin_cell("c00")
        for s in range(3):
            run.timeseries([_row("c00", s), _row("c00", s, "insert")])
            run.keys("c00", [(s + 0.25, "insert", f"k{s}")])
            run.flush()
            # closed after every flush: a reader (or a crash) sees every second so far
            assert read_timeseries(run.path, op="*")["second"].to_pylist() == list(range(s + 1))
        assert not data_files(run.path, "c00").complete
        run.begin_cell("c01")
        assert data_files(run.path, "c00").complete and data_files(run.path, "c00", "keys").complete
        run.timeseries([_row("c01", 0)])
        run.flush()
    assert data_files(run.path, "c01").complete  # close() ends the last cell
    assert read_keys(run.path)["key"].to_pylist() == ["k0", "k1", "k2"]
    assert read_keys(run.path)["t_us"].to_pylist() == [250_000, 1_250_000, 2_250_000]


@pytest.mark.emulator
def test_a_run_killed_mid_cell_leaves_readable_parquet_with_every_closed_part(tmp_path: Path,
                                                                             bigtable_emulator) -> None:  # type: ignore[no-untyped-def]
    duckdb = pytest.importorskip("duckdb")
    profile = write_profile(
        tmp_path / "p.toml", {"name": "killed", "backend": "bigtable", "duration": "60s"},
        workload={"ops": {"insert": 0.5, "read": 0.5}, "record_count": 100}, keys={"strategy": "random"},
        schedule={"kind": "constant", "rate": 200},
    )
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(out), "--quiet"],
                            env=emulator_env(bigtable_emulator), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while recorded_seconds(out) < 4:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()[-2000:]  # type: ignore[union-attr]
            time.sleep(0.1)
        seen = recorded_seconds(out)
        os.kill(proc.pid, signal.SIGKILL)  # no handler runs: nothing is flushed, closed or compacted
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run_dir = only_run_dir(out)
    cell = "c00-bigtable-random"
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "running"  # it never got to say more
    for kind in ("timeseries", "keys"):
        parts = sorted((run_dir / kind / f"{cell}.parts").glob("*.parquet"))
        assert parts and not (run_dir / kind / f"{cell}.parquet").exists()
        for part in parts:  # every part that was renamed in is a whole Parquet file
            assert pq.ParquetFile(part).metadata.num_rows > 0, part
    # a standard tool reads what was recorded, without keyramp
    seconds = [r[0] for r in duckdb.sql(
        f"SELECT second FROM read_parquet('{run_dir}/timeseries/**/*.parquet') WHERE op = '*' ORDER BY second"
    ).fetchall()]
    assert seconds == list(range(len(seconds))) and len(seconds) >= seen  # no second lost, none doubled
    ((keys,),) = duckdb.sql(f"SELECT count(*) FROM read_parquet('{run_dir}/keys/**/*.parquet')").fetchall()
    assert keys == read_keys(run_dir).num_rows > 0
    # the same seconds are in the HdrHistogram log, flushed alongside
    intervals = read_intervals(load_run(run_dir), cell, "insert")
    assert len(intervals) >= len(seconds) - 1
    counts = read_timeseries(run_dir, cell=cell, op="insert")["count"].to_pylist()
    n = min(len(intervals), len(counts))
    assert [h.get_total_count() for h in intervals[:n]] == counts[:n]
