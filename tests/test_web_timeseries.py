"""Parsing and downsampling timeseries.csv for charts."""

from __future__ import annotations

import math
from pathlib import Path

from keyramp.web._timeseries import MAX_POINTS, downsample, parse_timeseries

HEADER = "cell,op,second,count,errors,p50_ms,p99_ms,service_p99_ms,max_ms,target_ops_per_s,late,dropped,error_classes\n"


def _write(path: Path, seconds: int) -> Path:
    lines = [HEADER]
    for s in range(seconds):
        p99 = 100.0 if s == 1234 else 5.0  # one spike that must survive downsampling
        err = "ABORTED:2;UNAVAILABLE:1" if s % 100 == 0 else ""
        lines.append(f"c00-x-y,insert,{s},{10 + s % 2},{3 if err else 0},1.0,{p99},{p99},{p99},10,0,0,{err}\n")
    path.write_text("".join(lines))
    return path


def test_parse_groups_by_cell_and_op(tmp_path: Path) -> None:
    data = parse_timeseries(_write(tmp_path / "ts.csv", 10))
    assert list(data) == [("c00-x-y", "insert")]
    s = data[("c00-x-y", "insert")]
    assert s["second"].tolist() == list(range(10))
    assert s["error_classes"]["ABORTED"][0] == 2 and s["error_classes"]["UNAVAILABLE"][0] == 1


def test_downsample_one_hour_keeps_spikes_and_rates(tmp_path: Path) -> None:
    s = parse_timeseries(_write(tmp_path / "ts.csv", 3600))[("c00-x-y", "insert")]
    d = downsample(s)
    assert len(d["t"]) <= MAX_POINTS and d["bucket_s"] == 6
    assert max(d["p99_ms"]) == 100.0  # worst second, not averaged away
    assert all(math.isclose(v, 10.5) for v in d["ops_per_s"])  # per-second average
    assert math.isclose(sum(d["error_classes"]["ABORTED"]) * d["bucket_s"], 2 * 36, rel_tol=0.01)  # values rounded
    assert d["target_ops_per_s"][0] == 10.0


def test_short_series_is_not_resampled(tmp_path: Path) -> None:
    d = downsample(parse_timeseries(_write(tmp_path / "ts.csv", 30))[("c00-x-y", "insert")])
    assert d["bucket_s"] == 1 and d["t"] == list(range(30)) and d["ops_per_s"][:2] == [10.0, 11.0]


def test_gaps_become_null_and_bad_files_give_nothing(tmp_path: Path) -> None:
    path = tmp_path / "ts.csv"
    path.write_text(HEADER + "c,op,0,5,0,1,2,2,2,,0,0,\nc,op,3,5,0,1,2,2,2,,0,0,\nc,op,4,5,0,1,2\n")
    d = downsample(parse_timeseries(path)[("c", "op")])
    assert d["p99_ms"] == [2.0, None, None, 2.0] and d["target_ops_per_s"] == []  # truncated last line dropped
    assert parse_timeseries(tmp_path / "missing.csv") == {}
    (tmp_path / "bin.csv").write_bytes(b"\x00\xff garbage")
    assert parse_timeseries(tmp_path / "bin.csv") == {}
