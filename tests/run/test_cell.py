"""A cell's summary as ``CellRun`` builds it (typed): the keys and their order summary.json has always had.

``keyramp.run._cell`` imports Locust, which monkey-patches the standard library on import, so
the checks run in a fresh interpreter (as tests/run/test_runner.py's do), one per test.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import json, sys
from types import SimpleNamespace
from typing import Any
import locust  # monkey-patches first, as keyramp run does
from keyramp.results._exceptions import ExceptionExample
from keyramp.run._cell import CellRun
from keyramp.run._exceptions import WarmupFailure, WorkloadFailed
from keyramp.run._recorder import Recorder


class _Sink:
    def interval(self, **kw: Any) -> None: ...
    def timeseries(self, rows: Any) -> None: ...
    def keys(self, *args: Any) -> None: ...
    def flush(self) -> None: ...


def _cell_run() -> Any:
    schedule = SimpleNamespace(name="constant", describe=lambda: "constant 10 ops/s")
    cell = SimpleNamespace(backend="firestore", strategy="random", schedule=schedule, time_scale=1.0)
    stub = SimpleNamespace(cell=cell,
                           workload=SimpleNamespace(distribution="uniform"), warmup_used_s=1.5, warmup_inserts=None,
                           address=SimpleNamespace(namespace="ns1"))
    stub._identify = lambda summary: CellRun._identify(stub, summary)
    return stub


def check_a_failed_cell_writes_what_the_dict_did_in_its_order() -> None:
    example = ExceptionExample(error_class="CLIENT_KeyError", op="place", message="KeyError: 'x'",
                               traceback=("/app/o.py:3 in place: x",))
    failed = CellRun.failed_summary(_cell_run(), WorkloadFailed("c00", WarmupFailure(ops=40, example=example)))
    expected = {"backend": "firestore", "strategy": "random", "schedule": "constant",
                "schedule_description": "constant 10 ops/s", "distribution": "uniform", "status": "failed",
                "reason": "workload error", "warmup_s": 1.5, "namespace": "ns1", "operations": {},
                "warmup_failure": {"ops": 40, "error_class": "CLIENT_KeyError", "op": "place",
                                   "message": "KeyError: 'x'", "traceback": ["/app/o.py:3 in place: x"],
                                   "where": "/app/o.py:3"}}
    assert json.dumps(failed.to_json()) == json.dumps(expected)


def check_a_measured_cell_keeps_the_runners_key_order_whatever_the_assignment_order() -> None:
    recorder = Recorder(cell="c00", ops=["insert", "read"], sink=_Sink())
    recorder.begin(0.0)
    recorder.record("insert", None, 0.0, 0.0, 0.002)
    recorder.tick(1.0, target_ops_per_s=None)  # a closed model: an empty target timeline, still written
    summary = CellRun._summary(_cell_run(), recorder, users=2, duration=1.0)
    summary.thresholds = []  # set by the analysis, first, here: written last, where the runner always put it
    summary.probe = {"name": "consistency"}
    doc = summary.to_json()
    assert list(doc) == ["backend", "strategy", "schedule", "schedule_description", "distribution", "duration_s",
                         "time_scale", "users", "warmup_s", "namespace", "operations", "total", "target_ops_per_s",
                         "late", "dropped", "probe", "thresholds"]
    assert doc["target_ops_per_s"] == [] and list(doc["operations"]) == ["insert"]  # only what ran
    assert list(doc["total"]) == ["count", "errors", "error_rate", "errors_by_class", "workload_errors", "attempts",
                                  "ops_per_s", "latency_ms", "service_ms", "late", "dropped"]
    assert doc["total"]["errors_by_class"] == {} and list(doc["total"]["latency_ms"]) == [
        "p50", "p90", "p95", "p99", "p999", "max", "mean"]


globals()[sys.argv[1]]()
print("ok")
"""


@pytest.mark.parametrize("check", ["check_a_failed_cell_writes_what_the_dict_did_in_its_order",
                                   "check_a_measured_cell_keeps_the_runners_key_order_whatever_the_assignment_order"])
def test_the_cell_summary_keeps_the_runners_keys(check: str) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, check], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
