"""Whether a run that says "running" still runs (``keyramp.results._alive``): by its process on this
host (a reused pid is not the run), by its heartbeat elsewhere."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from _synthetic import make_run

from keyramp.results._alive import HEARTBEAT_STALE_S, process_identity, why_dead
from keyramp.results._catalog import load_run


def _running(tmp_path: Path, **manifest: object) -> Path:
    run = make_run(tmp_path, status="running", cells=(("bigtable", "random"),))
    doc = json.loads((run / "manifest.json").read_text())
    doc.update(manifest)
    (run / "manifest.json").write_text(json.dumps(doc))
    return run


def test_this_hosts_run_is_alive_while_its_process_is() -> None:
    me = process_identity()
    host = socket.gethostname()
    assert why_dead(Path("."), host=host, pid=me["pid"], pid_started=me["pid_started"]) is None
    # the same pid, started at another time: a reused pid, not the run
    assert why_dead(Path("."), host=host, pid=me["pid"], pid_started=float(me["pid_started"]) - 3600) is not None
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert why_dead(Path("."), host=host, pid=gone.pid) == f"its process (pid {gone.pid} on {host}) is gone"


def test_another_hosts_run_is_dead_after_a_long_silence(tmp_path: Path) -> None:
    run = _running(tmp_path, host="elsewhere", pid=1)
    assert why_dead(run, host="elsewhere", pid=1) is None  # just written
    (run / "live.json").write_text(json.dumps({"updated_epoch": time.time() - HEARTBEAT_STALE_S - 60}))
    why = why_dead(run, host="elsewhere", pid=1)
    assert why is not None and why.startswith("no sign of life for 11 min (host elsewhere)")


def test_a_dead_run_reads_as_died_with_what_it_recorded(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = socket.gethostname()
    dead = load_run(_running(tmp_path, host=host, pid=gone.pid))
    assert dead.status == "died" and dead.reason == f"died: its process (pid {gone.pid} on {host}) is gone"
    assert dead.warnings[0].startswith("the run died: its process") and not dead.ok  # it finished no cell
    alive = load_run(_running(tmp_path, host=socket.gethostname(), pid=os.getpid()))
    assert alive.status == "running" and alive.died is None
