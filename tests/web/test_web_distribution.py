"""The latency distribution (web/_distribution.py) against HdrHistogram's own percentiles, and a
running cell's log read on from where the last request stopped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from _synthetic import make_run
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter
from hypothesis import example, given, settings
from hypothesis import strategies as st

from keyramp.results._catalog import load_run
from keyramp.results._read import read_intervals
from keyramp.web._distribution import HlogTotals, cell_distribution, percentile_points


def _log(path: Path, seconds: list[list[int]]) -> HdrHistogram:
    """An .hlog as HdrHistogram's writer writes it (one interval per list of µs values); their sum."""
    total = HdrHistogram(1, 60_000_000, 3)
    with path.open("a", encoding="utf-8") as f:
        writer = HistogramLogWriter(f)
        for i, values in enumerate(seconds):
            h = HdrHistogram(1, 60_000_000, 3)
            for v in values:
                h.record_value(v)
            total.add(h)
            writer.output_interval_histogram(h, start_time_stamp_sec=float(i), end_time_stamp_sec=float(i + 1))
    return total


@settings(max_examples=40, deadline=None)
@example(seconds=[[1, 1, 1], [1] * 12 + [2] * 27])  # q x count = 15.4998 at x = 10^0.2, 15.5016 at 1.585
@given(st.lists(st.lists(st.integers(1, 50_000_000), min_size=1, max_size=40), min_size=1, max_size=6))
def test_every_point_is_hdrhistograms_own_percentile_of_the_whole_log(tmp_path_factory, seconds) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("hlog") / "c00-x-y.insert.hlog"
    total = _log(path, seconds)
    counts = HlogTotals().total(path)
    points = percentile_points(counts)
    assert points is not None and points["count"] == total.get_total_count()
    xs, us = points["x"], [round(v * 1000) for v in points["ms"]]
    assert xs[0] == 1 and xs[-1] == total.get_total_count() and xs == sorted(xs)
    assert us[0] == total.get_value_at_percentile(0)  # the minimum's bucket
    for k, (x, value) in enumerate(zip(xs[1:-1], us[1:-1], strict=True), start=1):
        exact = 10 ** (k / 10)  # x is printed to 3 decimals: at a count's edge the rounded x lands apart
        assert round(exact, 3) == x
        assert value == total.get_value_at_percentile(100 * (1 - 1 / exact)), x
    if len(xs) > 1:
        assert us[-1] == total.get_value_at_percentile(100)  # the maximum, last
    assert us == sorted(us)


def test_a_growing_log_is_read_on_from_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "c00-x-y.insert.hlog"
    _log(path, [[1000, 2000], [3000]])
    totals = HlogTotals()
    first = totals.total(path).copy()
    with path.open("a", encoding="utf-8") as f:
        f.write("0.000,1.000,0.0,HISTFAAAA")  # a line still being written: left for the next read
    assert np.array_equal(totals.total(path), first)
    path.write_text(path.read_text()[: -len("0.000,1.000,0.0,HISTFAAAA")])
    _log(path, [[4000, 5000, 6000]])
    grown = totals.total(path)
    assert grown.sum() == 6 and np.array_equal(grown, HlogTotals().total(path))  # the same as reading it whole
    path.write_text("")  # rewritten: read from the start again
    assert totals.total(path).sum() == 0 and HlogTotals().total(tmp_path / "missing.hlog").sum() == 0


def test_a_cells_distribution_per_operation_and_for_all_of_them(tmp_path: Path) -> None:
    run = make_run(tmp_path, seconds=6, seed=3, latency_ms={"insert": 2.0, "read": 8.0})
    dist = cell_distribution(HlogTotals(), run, "c00-datastore-sequential")
    assert set(dist) == {"insert", "read", "*"}
    whole = HdrHistogram(1, 60_000_000, 3)
    for h in read_intervals(load_run(run), "c00-datastore-sequential", "*"):
        whole.add(h)
    assert dist["*"]["count"] == whole.get_total_count() == dist["insert"]["count"] + dist["read"]["count"]
    assert dist["*"]["latency_ms"][-1] * 1000 == whole.get_value_at_percentile(100)
    # service time (from the actual start) is never above the latency from the intended start
    assert len(dist["read"]["service_ms"]) == len(dist["read"]["x"])
    assert all(s <= lat for s, lat in zip(dist["read"]["service_ms"], dist["read"]["latency_ms"], strict=True))
    assert dist["insert"]["latency_ms"][len(dist["insert"]["x"]) // 2] < dist["read"]["latency_ms"][0] * 4
