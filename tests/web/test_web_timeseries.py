"""Reading a run's time series into chart columns and downsampling them (Parquet and CSV runs)."""

from __future__ import annotations

import math
from pathlib import Path

from keyramp.results._read import read_timeseries
from keyramp.results._rows import TimeseriesRow
from keyramp.results._rundir import RunDirectory
from keyramp.web._timeseries import MAX_POINTS, downsample, series_columns

HEADER = "cell,op,second,count,errors,p50_ms,p99_ms,service_p99_ms,max_ms,target_ops_per_s,late,dropped,error_classes\n"


def parse_timeseries(path: Path) -> dict:  # type: ignore[type-arg]
    """A CSV-format run's timeseries.csv (``path``) as chart columns."""
    run = path.parent
    if path.name != "timeseries.csv":
        run = path.parent / path.stem
        run.mkdir(exist_ok=True)
        if path.exists():
            (run / "timeseries.csv").write_bytes(path.read_bytes())
    return series_columns(read_timeseries(run))


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


def _as_lists(data: dict) -> dict:  # type: ignore[type-arg]
    return {key: {name: ({c: a.tolist() for c, a in v.items()} if name == "error_classes" else
                         [None if math.isnan(x) else x for x in v.tolist()]) for name, v in s.items()}
            for key, s in data.items()}


def test_parquet_and_csv_runs_give_the_same_columns(tmp_path: Path) -> None:
    # keyramp's own CSV output (CRLF from csv.writer, empty target, interleaved ops, a quoted field,
    # a torn last line) and the same rows written as Parquet by the run directory
    rows = []
    records = []
    for s in range(50):
        per_second = []
        for op in ("insert", "read", "*"):
            classes = {"DEADLINE_EXCEEDED": s % 3, "UNAVAILABLE": 1} if s % 7 == 0 else {}
            err = ";".join(f"{k}:{v}" for k, v in classes.items())
            rows.append(f"c01-bt-random,{op},{s},{s % 5},{1 if err else 0},{s / 7:.3f},{s / 3:.3f},1,2,,0,0,{err}")
            per_second.append(TimeseriesRow(cell="c01-bt-random", op=op, second=s, count=s % 5, errors=1 if err else 0,
                                            p50_ms=round(s / 7, 3), p99_ms=round(s / 3, 3), service_p99_ms=1, max_ms=2,
                                            target_ops_per_s=None, late=0, dropped=0, error_classes=classes))
        records.append(per_second)
    text = HEADER.replace("\n", "\r\n") + "\r\n".join(rows) + "\r\nc01-bt-random,insert,50,3,0,1."
    text = text.replace("c01-bt-random,insert,0,", '"c01-bt-random",insert,0,', 1)
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "timeseries.csv").write_text(text)
    from_csv = parse_timeseries(tmp_path / "csv" / "timeseries.csv")
    with RunDirectory(tmp_path / "parquet", "ts") as run:
        run.begin_cell("c01-bt-random")
        for per_second in records:
            run.timeseries(per_second)
            run.flush()
    from_parquet = series_columns(read_timeseries(run.path))
    assert set(from_csv) == {("c01-bt-random", op) for op in ("insert", "read", "*")}
    assert _as_lists(from_csv) == _as_lists(from_parquet)
    read = from_parquet[("c01-bt-random", "read")]
    assert read["second"].tolist() == list(range(50)) and math.isnan(read["target_ops_per_s"][0])
    assert read["error_classes"]["DEADLINE_EXCEEDED"][14] == 2 and read["error_classes"]["UNAVAILABLE"].sum() == 8


def test_hand_edited_values_fall_back_to_nan(tmp_path: Path) -> None:
    path = tmp_path / "ts.csv"
    path.write_text(
        HEADER + "c,op,0,5,0,1,2,2,2,10,0,0,\nc,op,1,five,0,oops,2,2,2,10,0,0,\nc,op,x,5,0,1,2,2,2,10,0,0,\n"
    )
    s = parse_timeseries(path)[("c", "op")]
    assert s["second"].tolist() == [0, 1] and math.isnan(s["count"][1]) and math.isnan(s["p50_ms"][1])


def test_downsample_keeps_the_slowest_and_fastest_second(tmp_path: Path) -> None:
    lines = [HEADER]
    for s in range(3599):  # 600 buckets of 6 s, the last one padded by a second
        if s == 2000:
            continue  # a stalled second: no row at all is 0 ops
        n = 50 if s == 3000 else 10
        lines.append(f"c,op,{s},{n},0,1.0,2.0,2.0,2.0,10,0,0,\n")
    (tmp_path / "ts.csv").write_text("".join(lines))
    d = downsample(parse_timeseries(tmp_path / "ts.csv")[("c", "op")])
    b = d["bucket_s"]
    assert b == 6 and len(d["ops_min_per_s"]) == len(d["t"]) == 600
    assert d["ops_min_per_s"][2000 // b] == 0 and d["ops_max_per_s"][3000 // b] == 50
    assert min(d["ops_min_per_s"][:2000 // b]) == 10  # no false stalls, incl. the padded tail
    assert d["ops_min_per_s"][-1] == 10 and math.isclose(d["ops_per_s"][2000 // b], 50 / 6, abs_tol=0.01)


def test_a_cells_last_second_is_charted_at_its_real_rate(tmp_path: Path) -> None:
    # a 10.3 s cell: 10 seconds, the last one 1.3 s long (it holds 1.3 s of operations)
    lines = [HEADER] + [f"c00-x-y,insert,{s},{130 if s == 9 else 100},{13 if s == 9 else 0},1,2,2,3,100,0,0,\n"
                        for s in range(10)]
    s = parse_timeseries(_write_text(tmp_path / "ts.csv", "".join(lines)))[("c00-x-y", "insert")]
    d = downsample(s, duration_s=10.3)
    assert d["ops_per_s"] == [100.0] * 10 and d["errors_per_s"][-1] == 10.0
    assert downsample(s, duration_s=10.0)["ops_per_s"][-1] == 130.0  # a whole last second: as recorded
    assert downsample(s)["ops_per_s"][-1] == 130.0  # no duration known (a running cell): as recorded
    # a running cell's rows stop before its last second: nothing is scaled
    assert downsample(s, duration_s=12.3)["ops_per_s"][-1] == 130.0


def _write_text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_second_in_which_nothing_completed_is_a_gap_never_zero_ms(tmp_path: Path) -> None:
    # second 2: the store stalled. keyramp before null latencies wrote 0 ms for it; now it writes nothing
    lines = [HEADER] + [f"c,op,{s},{0 if s == 2 else 50},0,{0 if s == 2 else 1.5},{0 if s == 2 else 4},"
                        f"{0 if s == 2 else 3},{0 if s == 2 else 9},50,0,0,\n" for s in range(4)]
    lines.append("c,op,4,0,0,,,,,50,0,0,\n")  # as the recorder writes it now
    d = downsample(parse_timeseries(_write_text(tmp_path / "ts.csv", "".join(lines)))[("c", "op")])
    assert d["p50_ms"] == [1.5, 1.5, None, 1.5, None] and d["p99_ms"] == [4.0, 4.0, None, 4.0, None]
    assert d["ops_per_s"][2] == 0 and d["error_rate"][2] is None  # no rate of errors among no operations
    # downsampled, a bucket with completions keeps its latency; a run without p95 / in-flight has none to chart
    assert downsample(parse_timeseries(tmp_path / "ts.csv")[("c", "op")], max_points=3)["p99_ms"] == [4.0, 4.0, None]
    assert d["p95_ms"] == [None] * 5 and d["in_flight"] == []
