"""Master/worker messages: one typed class per kind, each surviving Locust's wire (msgpack)
unchanged, and ``send``/``receive`` the only code that names Locust's message types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
import pytest

from keyramp.backends import Target
from keyramp.profile import parse_profile
from keyramp.run._cpu import CpuSample
from keyramp.run._exceptions import WarmupTally, example_of
from keyramp.run._hdr import new_histogram, record
from keyramp.run._interval import ClosedInterval, OpInterval
from keyramp.run._messages import (
    Abort,
    Hello,
    IntervalReport,
    Message,
    Start,
    Status,
    WarmupReport,
    receive,
    send,
)
from keyramp.run._share import CellShare

RUN = Path(__file__).resolve().parents[2] / "keyramp" / "run"


def _wire(data: dict[str, Any]) -> Any:
    """As Locust's ``rpc.protocol.Message`` (de)serialises a message's data."""
    return msgpack.loads(msgpack.dumps(data), raw=False, strict_map_key=False)


def _raised() -> KeyError:
    try:
        {}["missing"]  # a workload's bug
    except KeyError as exc:
        return exc
    raise AssertionError("unreachable")


def _tally() -> WarmupTally:
    tally = WarmupTally()
    tally.failed("place", _raised(), python_workload=True)
    tally.failed("place", _raised(), python_workload=True)
    return tally


def _interval() -> ClosedInterval:
    latency, service = new_histogram(), new_histogram()
    for v in (800, 1200, 45_000):
        record(latency, v)
        record(service, v // 2)
    example = example_of("insert", "CLIENT_KeyError", _raised())
    assert example is not None and example.traceback  # the workload's own, with its frames
    op = OpInterval(count=3, errors=2, late=1, classes={"UNAVAILABLE": 1, "CLIENT_KeyError": 1},
                    latency_encoded=latency.encode(), service_encoded=service.encode(), exceptions=(example,))
    return ClosedInterval(second=4, start_s=4.0, length_s=1.0, dropped=2, ops={"insert": op},
                          keys=[(4.25, "insert", "k1", "insert", ("at\x1f0009\x1fk1",), 0)], final=True)


def _plan() -> CellShare:
    profile = parse_profile({"name": "m", "backend": "datastore", "duration": "3s",
                             "keys": {"strategy": "server_allocated"},
                             "schedule": {"kind": "step", "steps": [10, 20], "step": "1s", "time_scale": 2}})
    cell = profile.cells[0]
    return CellShare(token="run/c00", cell_id=cell.id, backend=cell.backend, strategy=cell.strategy,
                     duration_s=cell.duration_s, time_scale=cell.time_scale, resolved=profile.data,
                     address=Target(backend="datastore", project="p", endpoint="127.0.0.1:1", namespace="n",
                                    unindexed=frozenset({"b", "a"})),
                      target_kind="emulator", worker_index=1, workers=2, key_samples_per_s=50,
                      warmup_interval=0.05, allocated=(("parent", 1), "k2"))


MESSAGES: list[Message] = [
    Hello(host="load-1", pid=4242),
    Status(token="run/c00", ready=3),
    Status(token="run/c00", ready=0, error="ValueError: bad plan"),
    Status(token="run/c00", ready=8, warmup_inserts=120),
    WarmupReport(token="run/c00", latencies=[0.001, 0.0025], tally=WarmupTally(ops=2)),
    WarmupReport(token="run/c00", latencies=[], tally=_tally()),  # every warm-up op raised: no latencies
    Start(token="run/c00", start_epoch=1_790_000_000.25),
    IntervalReport(token="run/c00", interval=_interval(), cpu=CpuSample(1.5, 3.0, 0.75)),
    IntervalReport(token="run/c00", interval=_interval()),
    Abort(token="run/c00"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_survives_the_wire(message: Message) -> None:
    back = type(message).from_wire(_wire(message.to_wire()))
    assert back == message
    if isinstance(message, IntervalReport):  # the histograms too, not only their encoding
        assert isinstance(back, IntervalReport)
        mine, theirs = message.interval.ops["insert"], back.interval.ops["insert"]
        for q in (50, 99, 100):
            assert mine.latency.get_value_at_percentile(q) == theirs.latency.get_value_at_percentile(q)
            assert mine.service.get_value_at_percentile(q) == theirs.service.get_value_at_percentile(q)
        assert theirs.latency.get_total_count() == 3
        assert theirs.exceptions[0].where.endswith(f"test_messages.py:{_raised.__code__.co_firstlineno + 2}")
    if isinstance(message, WarmupReport) and message.tally.workload_errors:
        assert isinstance(back, WarmupReport)
        failure = back.tally.failure()  # the master's fail-fast check, from what arrived
        assert failure is not None and failure.ops == 2 and failure.example.message == "KeyError: 'missing'"


def test_the_plan_survives_the_wire_with_its_typed_parts() -> None:
    plan = _plan()
    back = CellShare.from_wire(_wire(plan.to_wire()))
    assert back == plan
    assert back.allocated == (("parent", 1), "k2")  # an ancestor-path key stays a pair
    assert back.address.unindexed == frozenset({"a", "b"})
    # the worker paces half of the master's schedule, at the same schedule time
    pacing = back.pacing()
    assert (pacing.share, pacing.duration_s, pacing.time_scale) == (0.5, 3.0, 2.0)
    assert [pacing.schedule.rate(t) for t in (0.0, 1.5)] == [10.0, 20.0]


def test_message_kinds_are_distinct_and_named_once() -> None:
    kinds = [cls.kind for cls in (Hello, Status, WarmupReport, Start, IntervalReport, Abort, CellShare)]
    assert len(set(kinds)) == len(kinds) and all(k.startswith("keyramp_") for k in kinds)
    sources = [p.read_text() for p in RUN.glob("*.py")]
    for kind in kinds:  # the class that owns it names it; everything else sends and receives classes
        assert sum(text.count(f'"{kind}"') for text in sources) == 1, kind


class _Runner:
    """Locust's runner message API, looped back (as a ``LocalRunner`` delivers to itself)."""

    def __init__(self) -> None:
        self.listeners: dict[str, Any] = {}
        self.sent: list[tuple[str, Any, str | None]] = []

    def register_message(self, msg_type: str, listener: Any, concurrent: bool = False) -> None:
        self.listeners[msg_type] = listener

    def send_message(self, msg_type: str, data: dict[str, Any] | None = None, client_id: str | None = None) -> None:
        self.sent.append((msg_type, data, client_id))

        class Msg:
            node_id = "worker-7"

        msg = Msg()
        msg.data = _wire(data or {})  # type: ignore[attr-defined]
        self.listeners[msg_type](None, msg)


def test_send_and_receive_pass_typed_messages_and_the_sender() -> None:
    runner = _Runner()
    got: list[tuple[str, Start]] = []
    receive(runner, Start, lambda sender, m: got.append((sender, m)))
    send(runner, Start(token="t", start_epoch=5.5), to="worker-7")
    assert got == [("worker-7", Start(token="t", start_epoch=5.5))]
    assert runner.sent[0][0] == "keyramp_start" and runner.sent[0][2] == "worker-7"
