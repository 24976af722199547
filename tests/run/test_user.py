"""The Locust user on the request path, against a fake store (no emulator): warm-up is not
measured, every measured operation is recorded once with its intended start, a failing
operation is an error of its class and the user goes on, nothing runs after the phase.

Locust monkey-patches the standard library on import, so the user runs in a fresh
interpreter (as in ``keyramp run``) and reports JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from _runs import assert_rate_held

_SCRIPT = r"""
import json, sys
import locust  # monkey-patches first, as keyramp run does
import gevent
from gevent.event import Event
from keyramp.backends import Backend, Target
from keyramp.profile import parse_profile
from locust.env import Environment
from locust.event import Events
from keyramp.run._pacer import Pacing
from keyramp.run._local import LocalLoad
from keyramp.run._recorder import Recorder
from keyramp.workload._workload import CellWorkload

delay_s, rate = float(sys.argv[1]), float(sys.argv[2])
calls = {"insert": 0, "read": 0}

class Slow(Exception):
    pass

class FakeBackend(Backend):
    name = "fake"
    def insert(self, key, record):
        calls["insert"] += 1
        fails = calls["insert"] % 10 == 0  # decided before the sleep: other users count on meanwhile
        gevent.sleep(delay_s)
        if fails:
            raise Slow("every tenth insert fails")
        return key
    def read(self, key):
        calls["read"] += 1
        gevent.sleep(delay_s)
        return True
    update = delete = scan = query = batch_write = batch_read = transaction = increment = None

class Rows:
    def __init__(self): self.rows, self.samples = [], []
    def interval(self, **kw): pass
    def timeseries(self, rows): self.rows.extend(r for r in rows if r.op == "*")
    def keys(self, cell, samples): self.samples.extend(samples)
    def flush(self): pass

profile = parse_profile({"name": "u", "backend": "bigtable", "seed": 2, "duration": "2s",
                         "workload": {"ops": {"insert": 0.5, "read": 0.5}, "record_count": 10},
                         "schedule": {"kind": "constant", "rate": rate, "drop_after": "1s"}})
workload = CellWorkload(backend="bigtable", strategy="sequential", settings=profile)
sink = Rows()
recorder = Recorder(cell="c", ops=workload.ops, sink=sink, key_samples_per_s=10_000)
target = Target(backend="bigtable", project="p", endpoint="fake:1", namespace="n")
load = LocalLoad(Environment(events=Events()), workload=workload, backend_class=FakeBackend, target=target,
                 recorder=recorder, pacing=Pacing.of(profile.cells[0]))
ctx = load.ctx
load.spawn(8, warmup_interval=0.02)
while load.ready() < 8:
    gevent.sleep(0.01)
gevent.sleep(0.5)
warm_calls = calls["insert"] + calls["read"]
warm = load.take_warmup_latencies()
load.start()
for _ in load.seconds(Event()):
    pass
load.finish(measured=True, aborted=False)
after = calls["insert"] + calls["read"]
gevent.sleep(0.3)
summary = recorder.summary(duration_s=2.0).to_json()
print(json.dumps({
    "warm_calls": warm_calls, "warm_latencies": len(warm), "recorded": summary["total"]["count"],
    "calls_measured": after - warm_calls, "calls_after_stop": calls["insert"] + calls["read"] - after,
    "errors": summary["total"]["errors"], "errors_by_class": summary["total"]["errors_by_class"],
    "inserts": summary["operations"]["insert"]["count"], "late": summary["total"]["late"],
    "total": summary["total"], "target_ops_per_s": summary["target_ops_per_s"],
    "p50_ms": summary["total"]["latency_ms"]["p50"], "service_p50_ms": summary["total"]["service_ms"]["p50"],
    "in_flight": ctx.in_flight, "samples": len(sink.samples),
    "inserted_keys_unique": len({s[2] for s in sink.samples if s[1] == "insert"}) ==
                            len([s[2] for s in sink.samples if s[1] == "insert"]),
}))
"""


def _run(delay_s: float, rate: float) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(delay_s), str(rate)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_measured_operations_are_recorded_once_and_warm_up_is_not() -> None:
    r = _run(0.001, 200.0)
    assert r["warm_calls"] > 0 and r["warm_latencies"] > 0  # warm-up ran, its latencies went to the settle check
    assert r["recorded"] == r["calls_measured"]  # each measured call recorded exactly once, warm-up none
    assert_rate_held(r)  # 200 ops/s for 2 s, or the lateness that held it back is recorded
    assert r["calls_after_stop"] == 0 and r["in_flight"] == 0  # users park after the phase
    # Every tenth insert raised: recorded as an error of its class, the users went on.
    assert r["errors"] == r["errors_by_class"]["CLIENT_Slow"]["count"] > 0
    assert abs(r["errors"] - r["inserts"] / 10) <= 1
    # Every operation with a key is sampled (the budget is above the rate); a failed insert has none.
    assert r["samples"] == r["recorded"] - r["errors"] and r["inserted_keys_unique"]


def test_latency_counts_from_the_intended_start_when_the_store_is_slow() -> None:
    # 8 users, 50 ms per call: at most 160 ops/s against 400 asked — operations start late,
    # and their latency from the intended start grows far beyond the service time.
    r = _run(0.05, 400.0)
    assert r["late"] > r["recorded"] / 2
    # Service time is the call's own 50 ms (a busy machine only stretches a sleep), the
    # queue in front of it is latency only.
    assert r["service_p50_ms"] >= 45  # (the loop's cached clock may wake a sleep a little early)
    assert r["p50_ms"] > 2 * r["service_p50_ms"]
