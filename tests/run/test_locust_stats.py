"""Locust's statistics fed once a second from the recorder equal what per-request logging
(Locust's own ``events.request`` listener) would have produced from the same operations.

Importing Locust monkey-patches the standard library, so the comparison runs in a fresh
interpreter (as ``keyramp run`` does) and reports JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

_SCRIPT = r"""
import json, random, sys
import locust  # monkey-patches first, as keyramp run does
from locust.stats import RequestStats
from keyramp.run._locust_stats import LocustStatsSink
from keyramp.run._recorder import Recorder

class Unavailable(Exception):
    pass

n_ops, per_second = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(3)
fed, direct = RequestStats(), RequestStats()
recorder = Recorder(cell="c", ops=["insert", "read"], sink=LocustStatsSink(fed, request_type="bigtable"),
                    key_samples_per_s=0)
recorder.begin(0.0)
for i in range(n_ops):
    op = rng.choice(("insert", "read"))
    service = rng.lognormvariate(-6.0, 1.0)  # ~2.5 ms median, a long tail
    error = Unavailable() if rng.random() < 0.03 else None
    t = i / per_second
    recorder.record(op, None, t, t, t + service, error)
    direct.log_request("bigtable", op, service * 1000.0, 0)
    if error is not None:
        direct.log_error("bigtable", op, "CLIENT_Unavailable")  # keyramp's class of a non-gRPC exception
    if (i + 1) % per_second == 0:
        recorder.tick((i + 1) / per_second, target_ops_per_s=None)

def view(stats):
    out = {}
    for name in ("insert", "read", None):
        e = stats.total if name is None else stats.get(name, "bigtable")
        out[str(name)] = {"requests": e.num_requests, "failures": e.num_failures, "avg": e.avg_response_time,
                          "max": e.max_response_time,
                          "pct": [e.get_response_time_percentile(p) for p in (0.5, 0.9, 0.99)]}
    out["errors"] = sorted([e.name, str(e.error), e.occurrences] for e in stats.errors.values())
    return out

print(json.dumps({"fed": view(fed), "direct": view(direct)}))
"""


def _compare(n_ops: int, per_second: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(n_ops), str(per_second)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_fed_stats_match_per_request_logging() -> None:
    result = _compare(6000, 2000)
    fed, direct = result["fed"], result["direct"]
    for name in ("insert", "read", "None"):
        a, b = fed[name], direct[name]
        assert a["requests"] == b["requests"] > 2000
        assert a["failures"] == b["failures"] > 0
        # HdrHistogram buckets (3 significant digits) inside Locust's coarser rounding.
        assert a["pct"] == pytest.approx(b["pct"], rel=0.1)
        assert a["avg"] == pytest.approx(b["avg"], rel=0.01)
        assert a["max"] == pytest.approx(b["max"], rel=0.01)
    assert fed["errors"] == direct["errors"] and fed["errors"]


def test_an_idle_second_adds_nothing() -> None:
    result = _compare(0, 2000)
    assert result["fed"]["None"]["requests"] == 0 and result["fed"]["errors"] == []
