"""CPU cost of keyramp's own per-operation work, in µs, against the client's CPU per op.

Issue 11, items 3 and 5 (recording on vs off) measured where they are not drowned in
noise: each piece of the request path is timed in a tight loop (best of 5, A/B pieces
interleaved), then expressed as a share of the CPU one operation costs the official
client (``bench/results/overhead.json`` if present, otherwise ``--client-us``):

- ``recorder.record``: two HdrHistogram records, late check, key sampling (recording),
- recording once vs twice: before issue 22 every operation was also fired as a Locust
  ``events.request`` into ``RequestStats``; now Locust's stats are fed from the recorder's
  closed interval once a second (``LocustStatsSink``, amortised per op at 1,000 ops/s),
- ``pacer.next_slot`` and the greenlet sleep bookkeeping it implies,
- workload dispatch: op choice, key and record generation (``UserOps.run`` on a no-op backend),
  and ``UserOps.run`` alone for ``read`` and ``increment`` (no record built: the dispatch itself),
- ``recorder.tick`` once a second, amortised per operation at 1,000 ops/s;
- a distributed run's per-second forwarding, amortised the same way: a worker's tick into
  its ``IntervalCollector`` with the ``IntervalReport`` encoded as Locust sends it, and the
  master's decode and ``Recorder.absorb`` of it;
- a Python workload's pieces (issue 28): ``record`` of its own exception with capturing on
  (the first occurrence per op and class keeps a traceback; every later one is a dict
  lookup), and ``self.keys.new()`` in the store's form (a sequential id as a Firestore id).

Run: ``.venv/bin/python bench/bench_hotpath.py`` -> ``bench/results/hotpath.json``.
``--smoke``: 2,000 calls, one round, ticks over 3 seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import locust  # noqa: F401  (gevent monkey-patching must precede ssl/urllib imports, as in `keyramp run`)
import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, parse_args, save, table

from keyramp.backends import spec_for
from keyramp.backends._base import Backend
from keyramp.profile import parse_profile
from keyramp.pyworkload._keys import KeyHandle
from keyramp.run._interval import ClosedInterval, IntervalCollector
from keyramp.run._locust_stats import LocustStatsSink
from keyramp.run._messages import IntervalReport
from keyramp.run._pacer import Pacer
from keyramp.run._recorder import Recorder
from keyramp.workload import CellWorkload, UserOps


class _NullSink:
    def interval(self, **kw: Any) -> None: ...
    def timeseries(self, rows: Any) -> None: ...
    def keys(self, cell: str, samples: Any) -> None: ...
    def flush(self) -> None: ...


class _NoopBackend(Backend):
    """Does nothing: isolates keyramp's dispatch cost from the client library's."""

    name: ClassVar[str] = "noop"

    def __init__(self) -> None:  # no Target needed
        pass

    def insert(self, key: Any, record: Any) -> Any:
        return key

    def read(self, key: Any) -> bool:
        return True

    def _noop(self, *a: Any, **kw: Any) -> None:
        return None

    update = delete = scan = query = batch_write = batch_read = transaction = increment = _noop  # type: ignore[assignment]


def _locust_request_event() -> Callable[..., None]:
    from locust.event import Events
    from locust.stats import RequestStats

    events, stats = Events(), RequestStats()

    def on_request(request_type: str, name: str, response_time: float, response_length: int,
                   exception: BaseException | None = None, **_: Any) -> None:
        stats.log_request(request_type, name, response_time, response_length)  # as Locust's runner does

    events.request.add_listener(on_request)
    return events.request.fire


def per_call_us(fn: Callable[[int], object], n: int) -> float:
    t0 = time.process_time()
    for i in range(n):
        fn(i)
    return (time.process_time() - t0) / n * 1e6


def best_tick(sink: Any, seconds: int = 30) -> float:
    """µs of the best ``tick`` of a second with 1,000 operations (``tick`` runs once a second per cell)."""
    rec = Recorder(cell="c", ops=["insert", "read"], sink=sink)
    rec.begin(0.0)
    best_us = float("inf")
    for r in range(seconds):
        for i in range(1000):
            rec.record("insert" if i % 2 else "read", i, 0.0, 0.0001, 0.0005 + (i % 97) * 1e-5)
        t0 = time.process_time()
        rec.tick(float(r + 1), target_ops_per_s=1000.0)
        best_us = min(best_us, (time.process_time() - t0) * 1e6)
    return best_us


def forwarding_us(null_tick_us: float, seconds: int = 30) -> tuple[float, float]:
    """Per second, µs a worker adds to its tick to forward the interval (collect + encode, as
    Locust's msgpack does), and µs the master spends to decode and absorb one worker's interval."""
    sent: list[bytes] = []

    def emit(interval: ClosedInterval) -> None:
        sent.append(msgpack.dumps(IntervalReport(token="t", interval=interval).to_wire()))

    worker_us = best_tick(IntervalCollector(emit), seconds) - null_tick_us
    master = Recorder(cell="c", ops=["insert", "read"], sink=_NullSink())
    best_us = float("inf")
    for raw in sent:
        t0 = time.process_time()
        master.absorb([IntervalReport.from_wire(msgpack.loads(raw, raw=False, strict_map_key=False)).interval])
        best_us = min(best_us, (time.process_time() - t0) * 1e6)
    return worker_us, best_us


def _pieces(clock: list[float]) -> dict[str, Callable[[int], object]]:
    """Each piece of the request path as a call of the operation's index (``clock``: the pacer's)."""
    fire = _locust_request_event()
    rec_plain = Recorder(cell="c", ops=["insert", "read"], sink=_NullSink())
    rec_plain.begin(0.0)

    def record_twice(i: int) -> None:  # before issue 22: the recorder, then Locust's own request event
        rec_plain.record("insert", i, 0.0, 0.0001, 0.0012)
        fire(request_type="bigtable", name="insert", response_time=1.1, response_length=0, exception=None,
             context={})

    pacer = Pacer(rate=lambda t: 1000.0, start=0.0, duration_s=1e9, clock=lambda: clock[0])
    profile = parse_profile({"name": "hotpath", "backend": "bigtable", "seed": 1,
                             "workload": {"ops": {"insert": 0.5, "read": 0.5}, "record_count": 100_000,
                                          "value_size": 256, "scan_length": 10}})
    wl = CellWorkload(backend="bigtable", strategy="random", settings=profile)
    # A cell whose mix holds the last op of the old if-chain, for the dispatch-only piece.
    counters = CellWorkload(backend="bigtable", strategy="random", settings=parse_profile(
        {"name": "hotpath", "backend": "bigtable", "seed": 1,
         "workload": {"ops": {"increment": 1.0}, "record_count": 100_000}}))
    user = UserOps(wl, _NoopBackend(), user_index=0)
    counter_user = UserOps(counters, _NoopBackend(), user_index=0)
    err = RuntimeError("boom")
    rec_capture = Recorder(cell="c", ops=["insert", "read"], sink=_NullSink(), capture_exceptions=True)
    rec_capture.begin(0.0)
    sequential = CellWorkload(backend="firestore", strategy="sequential", settings=parse_profile(
        {"name": "hotpath", "backend": "firestore", "seed": 1, "workload": {"ops": {"insert": 1.0}}}))
    keys = KeyHandle(UserOps(sequential, _NoopBackend(), user_index=0), convert=spec_for("firestore").workload_key,
                     namespace="c")

    pieces: dict[str, Callable[[int], object]] = {
        "recorder.record (recording only)": lambda i: rec_plain.record("insert", i, 0.0, 0.0001, 0.0012),
        "recorder.record + Locust events.request (before: recorded twice)": record_twice,
        "recorder.record, error": lambda i: rec_plain.record("read", i, 0.0, 0.0001, 0.0012, err),
        "recorder.record, workload exception (capturing)": lambda i: rec_capture.record("read", i, 0.0, 0.0001,
                                                                                          0.0012, err),
        "self.keys.new() (sequential -> Firestore id)": lambda i: keys.new(),
        "Locust events.request.fire alone": lambda i: fire(request_type="x", name="insert", response_time=1.2,
                                                           response_length=0, exception=None, context={}),
        "pacer.next_slot": lambda i: pacer.next_slot(),
        "workload dispatch (op, key, record)": lambda i: user.run(wl.choose_op(user.rng)),
        # Dispatch alone: ops that build no record (read: first branch after the key; increment: the last).
        "UserOps.run('read')": lambda i: user.run("read"),
        "UserOps.run('increment')": lambda i: counter_user.run("increment"),
    }
    return pieces


def _client_us(given: float | None) -> tuple[float, str]:
    """The client's CPU µs per op to compare with, and where it comes from."""
    overhead = RESULTS / "overhead.json"
    if given is None and overhead.exists():
        runs = json.loads(overhead.read_text())["summary"]
        # the cheapest op: the worst case for our share
        return min(e["locust_cpu_us_per_op"] for e in runs), "overhead.json (cheapest op, plain Locust)"
    return given or 500.0, "--client-us"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--client-us", type=float, default=None, help="client CPU µs per op (default: overhead.json)")
    parser.add_argument("--tick-seconds", type=int, default=30, help="seconds of 1,000 ops per tick measurement")
    args = parse_args(parser, argv, smoke={"n": 2000, "rounds": 1, "tick_seconds": 3})
    n = args.n

    clock = [0.0]
    pieces = _pieces(clock)
    best = {name: float("inf") for name in pieces}
    for _ in range(args.rounds):  # interleaved rounds, best-of: the box is shared
        for name, fn in pieces.items():
            clock[0] += 1e6  # the pacer never blocks: measure handing out a slot, not waiting
            best[name] = min(best[name], per_call_us(fn, n))

    from locust.stats import RequestStats

    # tick(): once a second per cell; amortised over the ops of that second.
    tick_best = best_tick(_NullSink(), args.tick_seconds)
    # After issue 22: Locust's stats fed from the closed interval, once a second.
    feed_best = best_tick(LocustStatsSink(RequestStats(), request_type="bigtable"), args.tick_seconds) - tick_best
    worker_us, master_us = forwarding_us(tick_best, args.tick_seconds)

    client_us, source = _client_us(args.client_us)

    keyramp_pieces = ["recorder.record (recording only)", "pacer.next_slot", "workload dispatch (op, key, record)"]
    rows = [[name, round(us, 2), round(us / client_us * 100, 2)] for name, us in best.items()]
    rows.append(
        ["recorder.tick per op @1,000 ops/s", round(tick_best / 1000, 2), round(tick_best / 1000 / client_us * 100, 2)]
    )
    rows.append(["Locust stats fed per second, per op @1,000 ops/s (after: recorded once)",
                 round(feed_best / 1000, 2), round(feed_best / 1000 / client_us * 100, 2)])
    rows.append(["worker: interval forwarded (collect + encode), per op @1,000 ops/s",
                 round(worker_us / 1000, 2), round(worker_us / 1000 / client_us * 100, 2)])
    rows.append(["master: a worker's interval decoded + absorbed, per op @1,000 ops/s",
                 round(master_us / 1000, 2), round(master_us / 1000 / client_us * 100, 2)])
    before = best["recorder.record + Locust events.request (before: recorded twice)"]
    after = best["recorder.record (recording only)"] + feed_best / 1000
    rows.append(["recording incl. Locust stats: before (twice) -> after (once)", f"{before:.2f} -> {after:.2f}",
                 f"{before / client_us * 100:.2f} -> {after / client_us * 100:.2f}"])
    own = sum(best[p] for p in keyramp_pieces) + tick_best / 1000
    rows.append(["keyramp's own share (record+pacer+dispatch+tick)", round(own, 2), round(own / client_us * 100, 2)])
    recording = best["recorder.record (recording only)"] + tick_best / 1000
    rows.append(["recording (record + tick)", round(recording, 2), round(recording / client_us * 100, 2)])
    print(f"client CPU per op: {client_us:.0f} µs ({source})")
    print(table(["piece", "µs/op", "% of client CPU/op"], rows))
    path = save("hotpath", {"bench": "hotpath", "machine": machine(), "client_us_per_op": client_us,
                            "client_us_source": source, "us_per_op": {r[0]: r[1] for r in rows},
                            "tick_us_per_second": round(tick_best, 1),
                            "forward_us_per_second": {"worker": round(worker_us, 1), "master": round(master_us, 1)},
                            "own_share_pct": round(own / client_us * 100, 2),
                            "recording_share_pct": round(recording / client_us * 100, 2)})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
