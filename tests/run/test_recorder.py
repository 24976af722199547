from __future__ import annotations

from typing import Any

import msgpack
import pytest
from google.api_core import exceptions as gexc

from keyramp.core._types import ALL_OPS
from keyramp.run._hdr import percentiles_us
from keyramp.run._interval import ClosedInterval, IntervalCollector
from keyramp.run._recorder import Recorder


class ListSink:
    def __init__(self) -> None:
        self.intervals: list[dict[str, Any]] = []
        self.rows: list[Any] = []
        self.samples: list[tuple[str, float, str, str]] = []
        self.flushes = 0

    def interval(self, *, cell, op, start_s, length_s, latency, service) -> None:
        self.intervals.append(
            {"cell": cell, "op": op, "start": start_s, "count": latency.get_total_count(),
             "p99": percentiles_us(latency, [99])[0]}
        )

    def timeseries(self, rows) -> None:
        self.rows.extend(rows)

    def keys(self, cell, samples) -> None:
        self.samples.extend((cell, *s) for s in samples)

    def flush(self) -> None:
        self.flushes += 1


def test_a_second_without_completions_has_no_latency_and_in_flight_follows_littles_law() -> None:
    sink = ListSink()
    rec = Recorder(cell="c0", ops=["insert"], sink=sink)
    rec.begin(0.0)
    # four operations of 500 ms service each complete in a 2-second interval: 1 in flight on average
    for i in range(4):
        rec.record("insert", f"k{i}", intended=0.1 * i, started=0.1 * i, ended=0.1 * i + 0.5)
    busy = {r.op: r for r in rec.tick(2.0, target_ops_per_s=None)}
    assert busy[ALL_OPS].in_flight == pytest.approx(1.0, rel=0.01)
    assert busy["insert"].p50_ms == pytest.approx(500, rel=0.01)
    assert busy["insert"].p95_ms == pytest.approx(500, rel=0.01)
    # a second in which nothing completed (a stalled store): no latency to report, not 0 ms
    idle = {r.op: r for r in rec.tick(3.0, target_ops_per_s=None)}
    for row in idle.values():
        assert row.count == 0
        assert (row.p50_ms, row.p95_ms, row.p99_ms, row.service_p99_ms, row.max_ms, row.in_flight) == (None,) * 6


def test_records_corrected_and_service_latency_separately() -> None:
    sink = ListSink()
    rec = Recorder(cell="c0", ops=["insert", "read"], sink=sink)
    rec.begin(0.0)
    # Intended at 0.0 but started 0.2 s late, took 1 ms: latency 201 ms, service 1 ms.
    rec.record("insert", "k1", intended=0.0, started=0.2, ended=0.201)
    rec.record("read", "k1", intended=0.3, started=0.3, ended=0.302)
    rows = rec.tick(1.0, target_ops_per_s=100.0, dropped=3)
    by_op = {r.op: r for r in rows}
    assert by_op["insert"].p99_ms == pytest.approx(201, rel=0.01)
    assert by_op["insert"].service_p99_ms == pytest.approx(1, rel=0.01)
    assert by_op["insert"].late == 1 and by_op["read"].late == 0
    assert by_op[ALL_OPS].count == 2 and by_op[ALL_OPS].dropped == 3
    assert by_op[ALL_OPS].target_ops_per_s == 100.0
    summary = rec.summary(duration_s=1.0).to_json()
    assert summary["operations"]["insert"]["latency_ms"]["p50"] == pytest.approx(201, rel=0.01)
    assert summary["operations"]["insert"]["service_ms"]["max"] == pytest.approx(1, rel=0.01)
    assert summary["total"]["count"] == 2
    assert summary["total"]["dropped"] == 3
    assert summary["operations"]["insert"]["dropped"] is None  # never started: no op was chosen for them
    assert summary["target_ops_per_s"] == [{"t": 0, "target": 100.0, "achieved": 2.0, "errors": 0}]
    assert sink.flushes == 1


def test_errors_are_classified_by_grpc_status() -> None:
    sink = ListSink()
    rec = Recorder(cell="c0", ops=["update"], sink=sink)
    rec.begin(0.0)
    rec.record("update", 1, 0.0, 0.0, 0.001, gexc.Aborted("too much contention"))
    rec.record("update", 1, 0.0, 0.0, 0.001, gexc.ServiceUnavailable("down"))
    rec.record("update", 1, 0.0, 0.0, 0.001, None)
    rec.tick(1.0, target_ops_per_s=None)
    op = rec.summary(duration_s=1.0).to_json()["operations"]["update"]
    assert op["count"] == 3 and op["errors"] == 2
    assert op["error_rate"] == pytest.approx(2 / 3, rel=1e-4)
    assert op["errors_by_class"] == {"ABORTED": {"count": 1}, "UNAVAILABLE": {"count": 1}}
    assert op["workload_errors"] == 0


def _raise_in_user_code() -> BaseException:
    """An exception raised two frames deep in this (non-library) file, as a workload's op raises."""

    def helper() -> None:
        {}["missing"]  # the bug under test

    try:
        helper()
    except KeyError as exc:
        return exc
    raise AssertionError("unreachable")


def test_the_workloads_own_exceptions_keep_their_first_occurrence() -> None:
    sink = ListSink()
    rec = Recorder(cell="c0", ops=["place", "look"], sink=sink, capture_exceptions=True)
    rec.begin(0.0)
    first = _raise_in_user_code()
    rec.record("place", None, 0.0, 0.0, 0.001, first)
    rec.record("place", None, 0.0, 0.0, 0.001, ValueError("second class"))
    rec.record("place", None, 0.0, 0.0, 0.001, gexc.Aborted("a store status: measured, not a bug"))
    rows = rec.tick(1.0, target_ops_per_s=None)
    for _ in range(3):  # later occurrences are counted, not captured again
        rec.record("place", None, 1.0, 1.0, 1.001, _raise_in_user_code())
    rec.record("look", None, 1.0, 1.0, 1.001, KeyError("other op"))
    later = rec.tick(2.0, target_ops_per_s=None)
    by_op = {r.op: r for r in rows}
    assert [e.error_class for e in by_op["place"].exceptions] == ["CLIENT_KeyError", "CLIENT_ValueError"]
    assert [e.error_class for e in by_op[ALL_OPS].exceptions] == ["CLIENT_KeyError", "CLIENT_ValueError"]
    assert {r.op: [e.op for e in r.exceptions] for r in later} == {"place": [], "look": ["look"], ALL_OPS: []}
    place = rec.summary(duration_s=2.0).to_json()["operations"]["place"]
    key_error = place["errors_by_class"]["CLIENT_KeyError"]
    assert key_error["count"] == 4 and key_error["op"] == "place" and key_error["message"] == "KeyError: 'missing'"
    assert key_error["traceback"][-1].endswith('in helper: {}["missing"]  # the bug under test')
    assert all(f.startswith(__file__) for f in key_error["traceback"])  # the user's frames, not keyramp's
    assert key_error["where"] == key_error["traceback"][-1].split(" in ")[0]  # the innermost user line
    assert place["errors_by_class"]["ABORTED"] == {"count": 1}  # no example: a store status
    assert place["workload_errors"] == 5
    assert rec.summary(duration_s=2.0).to_json()["total"]["workload_errors"] == 6


def test_without_capture_nothing_is_kept_and_examples_merge_from_other_processes() -> None:
    rec = Recorder(cell="c0", ops=["insert"], sink=ListSink())  # built-in operations: no capture
    rec.begin(0.0)
    rec.record("insert", None, 0.0, 0.0, 0.001, KeyError("x"))
    # A worker's example of another class arrives with its interval, over Locust's wire (msgpack),
    # and the master absorbs it; the worker sends each example once, with the interval it first raised in.
    sent: list[ClosedInterval] = []
    worker = Recorder(cell="c0", ops=["insert"], sink=IntervalCollector(sent.append), capture_exceptions=True)
    worker.begin(0.0)
    for t in (0.0, 0.5, 1.0):
        worker.record("insert", None, t, t, t + 0.001, _value_error())
        if t:
            worker.tick(t + 0.01, target_ops_per_s=None)
    first, second = (ClosedInterval.from_wire(msgpack.loads(msgpack.dumps(i.to_wire()), raw=False,
                                                            strict_map_key=False)) for i in sent)
    assert [e.error_class for e in first.ops["insert"].exceptions] == ["CLIENT_ValueError"]
    assert second.ops["insert"].exceptions == () and second.ops["insert"].classes == {"CLIENT_ValueError": 1}
    rec.absorb([first])
    rows = rec.tick(1.0, target_ops_per_s=None)
    assert [e.error_class for e in rows[0].exceptions] == ["CLIENT_ValueError"]
    classes = rec.summary(duration_s=1.0).to_json()["operations"]["insert"]["errors_by_class"]
    assert classes["CLIENT_KeyError"] == {"count": 1}
    assert classes["CLIENT_ValueError"]["message"] == "ValueError: from a worker" and classes["CLIENT_ValueError"][
        "count"] == 2


def _value_error() -> BaseException:
    try:
        raise ValueError("from a worker")
    except ValueError as exc:
        return exc


def test_totals_accumulate_over_intervals_and_intervals_reset() -> None:
    sink = ListSink()
    rec = Recorder(cell="c0", ops=["read"], sink=sink)
    rec.begin(0.0)
    for i in range(10):
        rec.record("read", i, i * 0.01, i * 0.01, i * 0.01 + 0.002)
    rec.tick(1.0, target_ops_per_s=10)
    for i in range(5):
        rec.record("read", i, 1 + i * 0.01, 1 + i * 0.01, 1 + i * 0.01 + 0.004)
    rec.tick(2.0, target_ops_per_s=10)
    counts = [iv["count"] for iv in sink.intervals if iv["op"] == "read"]
    assert counts == [10, 5]
    assert rec.summary(duration_s=2.0).to_json()["operations"]["read"]["count"] == 15
    assert rec.merged_latency("read").get_total_count() == 15


def test_key_samples_respect_the_per_second_budget() -> None:
    sink = ListSink()
    rec = Recorder(cell="c0", ops=["insert"], sink=sink, key_samples_per_s=100)
    rec.begin(0.0)
    for second in range(3):
        for i in range(1000):
            t = second + i / 1000
            rec.record("insert", second * 1000 + i, t, t, t + 0.0001)
        rec.tick(second + 1.0, target_ops_per_s=1000)
    per_second = [sum(1 for s in sink.samples if int(s[1]) == sec) for sec in range(3)]
    assert per_second[0] == 1000  # first second: no rate known yet, everything sampled
    assert 90 <= per_second[1] <= 110 and 90 <= per_second[2] <= 110
    assert sink.samples[0][3] == "00000000000000000000"  # sort text: ints zero-padded


def test_the_last_second_closes_after_the_drain_at_its_in_phase_rate() -> None:
    # 3-second phase at 100 ops/s; the last interval is closed 1.8 s after its start (0.8 s
    # of drain): it is one timeline second at 100 %, not a drain-only second at 0 %.
    rec = Recorder(cell="c0", ops=["insert"], sink=ListSink())
    rec.begin(10.0, duration_s=3.0)
    for second in range(3):
        for i in range(100):
            t = 10.0 + second + i / 100
            rec.record("insert", None, intended=t, started=t, ended=t + 0.004)
        if second < 2:
            rec.tick(11.0 + second, target_ops_per_s=100.0)
    assert rec.interval_start_s == pytest.approx(2.0)
    rec.tick(13.8, target_ops_per_s=100.0)
    timeline = rec.summary(duration_s=3.0).to_json()["target_ops_per_s"]
    assert [p["t"] for p in timeline] == [0, 1, 2]
    assert [p["achieved"] for p in timeline] == [100.0, 100.0, 100.0]


def test_a_partial_last_second_is_scaled_to_its_length() -> None:
    rec = Recorder(cell="c0", ops=["insert"], sink=ListSink())
    rec.begin(0.0, duration_s=1.6)  # one whole second, then 0.6 s closed after a drain
    rec.tick(1.0, target_ops_per_s=50.0)
    for i in range(30):
        rec.record("insert", None, intended=1.0 + i / 50, started=1.0 + i / 50, ended=1.0 + i / 50 + 0.001)
    rec.tick(3.0, target_ops_per_s=50.0)
    assert rec.summary(duration_s=1.6).to_json()["target_ops_per_s"][-1]["achieved"] == pytest.approx(50.0)


class HistogramSink(ListSink):
    """Keeps a copy of each interval's histograms as the sink sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.histograms: dict[str, tuple[Any, Any]] = {}

    def interval(self, *, cell, op, start_s, length_s, latency, service) -> None:
        from keyramp.run._hdr import new_histogram

        copies = new_histogram(), new_histogram()
        copies[0].add(latency)
        copies[1].add(service)
        self.histograms[op] = copies


def test_an_intervals_histograms_are_the_librarys_for_the_same_values() -> None:
    """``record`` counts straight into the counters and ``tick`` settles the totals: the sink
    sees, bucket for bucket and in total, min and max, what ``record_value`` would have built,
    for on-time starts (latency = service time) and late ones alike."""
    import random

    import numpy as np

    from keyramp.run._hdr import HIGHEST_US, counts, new_histogram

    sink = HistogramSink()
    rec = Recorder(cell="c0", ops=["insert"], sink=sink)
    rec.begin(0.0)
    lib_latency, lib_service = new_histogram(), new_histogram()
    rng = random.Random(7)
    for i in range(20_000):
        started = rng.random()
        intended = started if i % 3 else started - rng.choice([0.0002, 0.05, 3.0])  # every third starts late
        ended = started + rng.lognormvariate(-7, 2) + (HIGHEST_US / 1e6 if i == 5 else 0.0)  # one beyond the range
        rec.record("insert", None, intended, started, ended)
        for hist, since in ((lib_latency, intended), (lib_service, started)):
            hist.record_value(min(max(int((ended - since) * 1e6), 1), HIGHEST_US))
    rec.tick(1.0, target_ops_per_s=None)
    for mine, lib in zip(sink.histograms["insert"], (lib_latency, lib_service), strict=True):
        assert np.array_equal(counts(mine), counts(lib))
        assert (mine.get_total_count(), mine.get_min_value(), mine.get_max_value()) == (
            lib.get_total_count(), lib.get_min_value(), lib.get_max_value())
    # the next interval starts empty, and an empty one settles to the library's empty values
    rec.tick(2.0, target_ops_per_s=None)
    empty = sink.histograms["insert"][0]
    assert (empty.get_total_count(), empty.get_min_value(), empty.get_max_value()) == (0, 0, 0)
