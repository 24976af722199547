"""The reader API over both formats: time series, key samples, histogram logs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from _synthetic import make_run

from keyramp.results._catalog import load_run
from keyramp.results._parquet import TIMESERIES_SCHEMA
from keyramp.results._read import (
    add_hlog,
    cell_hlogs,
    data_cells,
    data_files,
    data_stamp,
    is_csv_run,
    read_intervals,
    read_keys,
    read_timeseries,
)


@pytest.fixture(params=["parquet", "csv"])
def fmt(request: pytest.FixtureRequest) -> str:
    return request.param


def test_summary_agrees_with_hlog(tmp_path: Path) -> None:
    run = load_run(make_run(tmp_path, seed=4, seconds=5))
    intervals = read_intervals(run, "c00-datastore-sequential", "insert")
    assert len(intervals) == 5
    assert [h.get_start_time_stamp() for h in intervals] == [0, 1000, 2000, 3000, 4000]
    stats = run.cells["c00-datastore-sequential"].operations["insert"].to_json()
    assert sum(h.get_total_count() for h in intervals) == stats["count"]
    merged = intervals[0]
    for h in intervals[1:]:
        merged.add(h)
    assert merged.get_value_at_percentile(99) / 1000 == stats["latency_ms"]["p99"]


def test_timeseries_filtered_and_typed_in_both_formats(tmp_path: Path, fmt: str) -> None:
    run = load_run(make_run(tmp_path, seed=5, seconds=4, fmt=fmt, error_rate={"read": 0.2}))
    assert is_csv_run(run) == (fmt == "csv")
    table = read_timeseries(run, cell="c01-datastore-random", op="read")
    assert table.schema == TIMESERIES_SCHEMA
    assert table["second"].to_pylist() == [0, 1, 2, 3]
    errors = table["errors"].to_pylist()
    assert [dict(m) for m in table["error_classes"].to_pylist()] == [{"UNAVAILABLE": e} if e else {} for e in errors]
    star = read_timeseries(run, cell="c01-datastore-random", op="*")
    assert sum(star["count"].to_pylist()) == run.cells["c01-datastore-random"].total.count
    assert read_timeseries(run, op="*", after_second=2)["second"].to_pylist() == [3, 3]
    assert read_timeseries(run, columns=["cell", "p99_ms"]).column_names == ["cell", "p99_ms"]
    assert data_cells(run) == ["c00-datastore-sequential", "c01-datastore-random"]
    assert read_timeseries(run, cell="../x").num_rows == 0


def test_the_two_formats_hold_the_same_rows(tmp_path: Path) -> None:
    parquet = make_run(tmp_path / "a", seed=7, seconds=3, error_rate=0.1)
    csv = make_run(tmp_path / "b", seed=7, seconds=3, error_rate=0.1, fmt="csv")
    order = [("cell", "ascending"), ("op", "ascending"), ("second", "ascending")]
    newer = ["p95_ms", "in_flight"]  # columns added after the CSV format: read as null from a CSV run
    from_csv = read_timeseries(csv).sort_by(order)
    assert all(from_csv[c].null_count == from_csv.num_rows for c in newer)
    assert read_timeseries(parquet).sort_by(order).drop(newer).to_pylist() == from_csv.drop(newer).to_pylist()
    by = [(c, "ascending") for c in ("cell", "t_us", "op", "key")]
    assert read_keys(parquet).sort_by(by).to_pylist() == read_keys(csv).sort_by(by).to_pylist()
    assert read_keys(parquet, cell="c00-datastore-sequential")["cell"].unique().to_pylist() == \
        ["c00-datastore-sequential"]


def test_truncated_csv_timeseries_and_hlog_are_tolerated(tmp_path: Path) -> None:
    path = make_run(tmp_path, seed=6, seconds=3, fmt="csv")
    ts = path / "timeseries.csv"
    ts.write_text(ts.read_text()[:-30])
    hlog = path / "histograms" / "c00-datastore-sequential.insert.hlog"
    hlog.write_text(hlog.read_text()[:-40])
    run = load_run(path)
    assert read_timeseries(run).num_rows == 2 * 3 * 3 - 1
    assert len(read_intervals(run, "c00-datastore-sequential", "insert")) == 2


def test_a_damaged_parquet_file_leaves_the_other_cells_readable(tmp_path: Path) -> None:
    path = make_run(tmp_path, seed=8, seconds=3)
    (path / "timeseries" / "c00-datastore-sequential.parquet").write_bytes(b"PAR1 torn")
    assert set(read_timeseries(path)["cell"].to_pylist()) == {"c01-datastore-random"}
    (path / "keys" / "c01-datastore-random.parquet").write_bytes(b"PAR1 torn")
    with pytest.raises(Exception, match="unreadable key samples"):
        read_keys(path)


def test_a_running_cell_reads_its_parts_and_the_stamp_moves_when_one_lands(tmp_path: Path) -> None:
    path = make_run(tmp_path, seed=9, seconds=4, status="running")
    files = data_files(path, "c01-datastore-random")
    assert not files.complete and len(files.paths) == 4  # a part per second so far
    assert data_files(path, "c00-datastore-sequential").complete
    before = data_stamp(path, cell="c01-datastore-random")
    assert read_timeseries(path, cell="c01-datastore-random", op="*")["second"].to_pylist() == [0, 1, 2, 3]
    row = read_timeseries(path, cell="c01-datastore-random", op="*", after_second=2)
    assert row["second"].to_pylist() == [3]
    new = pa.Table.from_pylist([{**row.to_pylist()[0], "second": 4}], schema=TIMESERIES_SCHEMA)
    import pyarrow.parquet as pq

    pq.write_table(new, files.paths[0].parent / "00000004-00000004.parquet")
    assert data_stamp(path, cell="c01-datastore-random") != before
    assert read_timeseries(path, cell="c01-datastore-random", op="*", after_second=2)["second"].to_pylist() == [3, 4]


def test_no_data_is_empty_not_an_error(tmp_path: Path) -> None:
    path = make_run(tmp_path, seed=10, seconds=2)
    shutil.rmtree(path / "timeseries")
    shutil.rmtree(path / "keys")
    assert read_timeseries(path).num_rows == 0 and data_cells(path) == [] and data_stamp(path) == ()
    assert read_keys(path).num_rows == 0


def test_all_ops_intervals_are_the_sum_of_the_ops_and_an_old_all_log_is_read_as_it_is(tmp_path: Path) -> None:
    run = load_run(make_run(tmp_path, seed=11, seconds=4, latency_ms={"insert": 2.0, "read": 8.0}))
    cell = "c00-datastore-sequential"
    total = read_intervals(run, cell, "*")
    ops = [read_intervals(run, cell, op) for op in ("insert", "read")]
    assert [h.get_total_count() for h in total] == [
        a.get_total_count() + b.get_total_count() for a, b in zip(*ops, strict=True)
    ]
    assert sum(h.get_total_count() for h in total) == run.cells[cell].total.count
    assert total[2].get_start_time_stamp() == 2000
    slow = max(h.get_max_value() for h in ops[1])
    assert max(h.get_max_value() for h in total) == slow
    assert len(read_intervals(run, cell, "*", service=True)) == 4
    # a run written before: its own <cell>.all.hlog wins (here: just the insert log under that name)
    shutil.copy(run.path / "histograms" / f"{cell}.insert.hlog", run.path / "histograms" / f"{cell}.all.hlog")
    assert [h.get_total_count() for h in read_intervals(run, cell, "*")] == [h.get_total_count() for h in ops[0]]


@pytest.mark.parametrize("fast", [True, False])
def test_add_hlog_sums_what_hdrhistograms_own_reader_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           fast: bool) -> None:
    if not fast:  # the library's public decode, where its varint decoder cannot be imported
        monkeypatch.setitem(sys.modules, "pyhdrh", None)
    run = make_run(tmp_path, seed=5, seconds=4, cells=(("bigtable", "random"),))
    cell = "c00-bigtable-random"
    latency, _ = cell_hlogs(run, cell)["insert"]
    counts = np.zeros(23552, dtype=np.int64)
    end = add_hlog(latency, counts)
    assert end == latency.stat().st_size and add_hlog(latency, counts, offset=end) == end  # nothing new
    reference = np.zeros_like(counts)
    for hist in read_intervals(load_run(run), cell, "insert"):
        reference[: hist.counts_len] += np.ctypeslib.as_array(hist.counts)[: hist.counts_len].astype(np.int64)
    assert counts.sum() > 0 and np.array_equal(counts, reference)
