"""A recorder's closed interval as one typed object: what a worker's ``IntervalCollector``
gathers, sent the way Locust sends it (msgpack), and absorbed by the master's recorder,
must give exactly what one recorder that saw every operation writes."""

from __future__ import annotations

import random
from typing import Any

import msgpack

from keyramp.core._types import ALL_OPS, KeySample
from keyramp.run._hdr import counts, new_histogram, record
from keyramp.run._interval import ClosedInterval, IntervalCollector
from keyramp.run._recorder import Recorder

OPS = ("insert", "read")


class _Boom(Exception):
    pass


class _Rows:
    """A sink that keeps the rows and key samples a recorder writes."""

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.samples: list[KeySample] = []

    def interval(self, **kw: Any) -> None: ...

    def timeseries(self, rows: Any) -> None:
        self.rows.extend(rows)

    def keys(self, cell: str, samples: Any) -> None:
        self.samples.extend(samples)

    def flush(self) -> None: ...


def _over_the_wire(interval: ClosedInterval) -> ClosedInterval:
    """As Locust's ``rpc.protocol.Message`` (de)serialises a message's data."""
    return ClosedInterval.from_wire(msgpack.loads(msgpack.dumps(interval.to_wire()), raw=False,
                                                  strict_map_key=False))


def _row(r: Any) -> tuple[Any, ...]:
    return (r.op, r.second, r.count, r.errors, r.p50_ms, r.p99_ms, r.service_p99_ms, r.max_ms, r.late, r.dropped,
            r.error_classes)


def test_absorbed_intervals_equal_one_recorder_that_saw_everything() -> None:
    rng = random.Random(5)
    one = _Rows()
    single = Recorder(cell="c", ops=OPS, sink=one, key_samples_per_s=100_000)
    sent: list[list[ClosedInterval]] = [[], []]
    collectors = [IntervalCollector(sent[w].append) for w in range(2)]
    workers = [Recorder(cell="c", ops=OPS, sink=c, key_samples_per_s=100_000) for c in collectors]
    for r in (single, *workers):
        r.begin(0.0)
    for second in range(3):
        for i in range(400):
            w = rng.randrange(2)
            op = rng.choice(OPS)
            intended = second + rng.random() * 0.9
            started = intended + rng.expovariate(200)
            ended = started + rng.expovariate(300)
            error = _Boom() if rng.random() < 0.05 else None
            for r in (single, workers[w]):
                r.record(op, f"k{second}-{i}", intended, started, ended, error)
        for w, r in enumerate(workers):
            collectors[w].final = second == 2
            r.tick(second + 1.0, target_ops_per_s=200.0, dropped=w + 1)
        single.tick(second + 1.0, target_ops_per_s=400.0, dropped=3)

    assert [[i.second for i in s] for s in sent] == [[0, 1, 2], [0, 1, 2]]
    assert [i.final for i in sent[0]] == [False, False, True]
    master_rows = _Rows()
    master = Recorder(cell="c", ops=OPS, sink=master_rows, key_samples_per_s=100_000)
    master.begin(0.0)
    for second in range(3):
        parts = [_over_the_wire(sent[w][second]) for w in range(2)]
        assert [p.dropped for p in parts] == [1, 2]
        master.absorb(parts)
        master.tick(max(p.end_s for p in parts), target_ops_per_s=400.0, dropped=sum(p.dropped for p in parts))
    assert [_row(r) for r in master_rows.rows] == [_row(r) for r in one.rows]
    assert master.summary(duration_s=3.0) == single.summary(duration_s=3.0)
    assert master.merged_latency(ALL_OPS).get_total_count() == 1200
    # every key sampled once, in time order within each second
    assert sorted(master_rows.samples) == sorted(one.samples) and len(one.samples) == 1200
    per_second = [[s[0] for s in master_rows.samples if second <= s[0] < second + 1] for second in range(3)]
    assert all(ts == sorted(ts) for ts in per_second)


def test_an_interval_without_operations_carries_its_span_and_drops() -> None:
    sent: list[ClosedInterval] = []
    rec = Recorder(cell="c", ops=OPS, sink=IntervalCollector(sent.append), key_samples_per_s=10)
    rec.begin(10.0)
    rec.tick(11.25, target_ops_per_s=5.0, dropped=7)
    (interval,) = sent
    back = _over_the_wire(interval)
    assert back == ClosedInterval(second=0, start_s=0.0, length_s=1.25, dropped=7, ops={}, keys=[], final=False)
    assert back.count == 0 and back.end_s == 1.25


def test_an_interval_is_a_snapshot_not_the_recorders_histograms() -> None:
    """The recorder resets its histograms after each tick; what the collector kept must not change."""
    sent: list[ClosedInterval] = []
    rec = Recorder(cell="c", ops=OPS, sink=IntervalCollector(sent.append), key_samples_per_s=0)
    rec.begin(0.0)
    for latency_s in (0.001, 0.002, 0.050):
        rec.record("insert", None, 0.0, 0.0, latency_s)
    rec.tick(1.0, target_ops_per_s=None)
    rec.record("insert", None, 1.0, 1.0, 1.9)
    rec.tick(2.0, target_ops_per_s=None)
    first = sent[0].ops["insert"]
    assert first.count == 3 and first.latency.get_total_count() == 3
    assert first.latency.get_max_value() < 60_000 <= sent[1].ops["insert"].latency.get_max_value()
    reference = new_histogram()
    for us in (1000, 2000, 50_000):
        record(reference, us)
    assert list(counts(first.latency)) == list(counts(reference))  # bucket for bucket
