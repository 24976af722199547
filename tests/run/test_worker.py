"""A worker's cell set-up (no emulator, no master): its users go through the same
``ProcessLoad`` a single process drives, at a 1/N share, and the store's client library is
loaded off the gevent hub's thread — seconds of imports on a busy box would otherwise stall
the worker's heartbeats, and Locust drops a worker silent for 3 s (seen as "worker 0 stopped
sending heartbeats" before the first cell's measured phase).

Locust monkey-patches the standard library on import, so the worker runs in a fresh
interpreter (as ``keyramp run --worker`` does) and reports JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys

_SCRIPT = r"""
import json, sys, threading
import locust  # monkey-patches first, as keyramp run --worker does
from locust.env import Environment
from locust.event import Events

imported_on = {}

class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "google.cloud.bigtable":
            imported_on[name] = "main" if threading.current_thread() is threading.main_thread() else "other"
        return None

sys.meta_path.insert(0, Spy())
from keyramp.backends import Target
from keyramp.profile import parse_profile
from keyramp.run._driver import ProcessLoad
from keyramp.run._share import CellShare
from keyramp.run._worker import _WorkerCell

assert "google.cloud.bigtable" not in sys.modules  # the worker has not loaded a store's client yet
profile = parse_profile({"name": "w", "backend": "bigtable", "duration": "3s",
                         "schedule": {"kind": "constant", "rate": 90}})
cell = profile.cells[0]
plan = CellShare(token="run/c00", cell_id=cell.id, backend="bigtable", strategy=cell.strategy,
                 duration_s=3.0, time_scale=1.0, resolved=profile.data,
                 address=Target(backend="bigtable", project="p", endpoint="127.0.0.1:1", namespace="n"),
                 target_kind="emulator", worker_index=2, workers=3, key_samples_per_s=10, warmup_interval=0.5)
sent = []

class Runner:
    def send_message(self, kind, data=None, client_id=None):
        sent.append(kind)

env = Environment(events=Events())
worker = _WorkerCell(env, Runner(), plan)
load = worker.load
pacer = load.pacing.pacer(0.0)
print(json.dumps({
    "imported_on": imported_on, "driver": load.ctx.backend_class.__module__,
    "process_load": isinstance(load, ProcessLoad), "user_class": env.user_classes[0].__name__,
    "share_rate": pacer.target_rate(0.0), "warmup_interval": load.ctx.warmup_interval,
    "first_insert": load.ctx.workload.next_insert_index() - load.ctx.workload.record_count,
}))
worker.abort()
"""


def test_a_worker_cell_is_a_process_load_whose_client_loads_off_the_hub() -> None:
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["imported_on"] == {"google.cloud.bigtable": "other"}
    assert got["driver"].startswith("keyramp.backends.bigtable")
    assert got["process_load"] and got["user_class"] == "KeyrampUser"
    assert got["share_rate"] == 30.0  # 90 ops/s over 3 workers
    assert got["warmup_interval"] == 0.5 and got["first_insert"] == 2  # worker 2 of 3 takes 2, 5, 8, …
