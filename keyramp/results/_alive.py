"""Is a run whose manifest says "running" still running? A run killed with SIGKILL (or a machine
that lost power) never writes its end: its manifest says ``running`` forever. Every reader asks here.

Two signals, the first that applies decides:

* **its process** — the manifest records the run's ``pid``, when that process started
  (``pid_started``, so a reused pid is not mistaken for it) and the ``host``. On the same host the
  answer is certain: the process is there or it is gone.
* **its heartbeat** — on another host (a results directory on shared storage) only ``live.json``'s
  ``updated_epoch`` (rewritten at every phase and every measured second) or, before the first one,
  the manifest's mtime says when the run last showed life. ``HEARTBEAT_STALE_S`` without one is
  taken as dead: longer than any quiet stretch of a live run (a preload or a fresh emulator's warm-up).

A dead run is ``died`` in every view (``keyramp list``, the UI, ``compare``), with its reason; what
it recorded — the cells it finished (``summary.json``), the killed cell's time series parts — stays
readable.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Final

import psutil

from keyramp.core import fmt

__all__ = ["DIED", "HEARTBEAT_STALE_S", "process_identity", "why_dead"]

#: The status of a run whose process is gone without recording its end.
DIED: Final = "died"
#: Another host's run with no sign of life for this long is taken as dead (a live run's longest quiet
#: stretch is a preload or a fresh emulator's warm-up: minutes at most).
HEARTBEAT_STALE_S: Final = 600.0
#: A process started within this of the recorded start time is the run's (create times are rounded).
_SAME_START_S: Final = 2.0


def process_identity() -> dict[str, object]:
    """What the manifest records so a reader can tell whether this process still runs."""
    try:
        started: float | None = round(psutil.Process().create_time(), 2)
    except psutil.Error:  # pragma: no cover - a process can always read its own start time
        started = None
    return {"pid": os.getpid(), "pid_started": started}


def _process_alive(pid: int, started: float | None) -> bool:
    try:
        process = psutil.Process(pid)
        return started is None or abs(process.create_time() - started) <= _SAME_START_S
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # AccessDenied and the like: it exists
        return True


def _last_sign_of_life(run_dir: Path) -> float | None:
    """Epoch seconds of the run's last heartbeat: live.json's ``updated_epoch``, else the manifest's mtime."""
    try:
        updated = json.loads((run_dir / "live.json").read_text(encoding="utf-8")).get("updated_epoch")
        if isinstance(updated, int | float) and not isinstance(updated, bool):
            return float(updated)
    except (OSError, ValueError, AttributeError):
        pass
    try:
        return (run_dir / "manifest.json").stat().st_mtime
    except OSError:
        return None


def why_dead(run_dir: Path, *, host: object, pid: object, pid_started: object = None,
             now: float | None = None) -> str | None:
    """Why a run that says "running" is not (one line), or None while it may still run."""
    if isinstance(pid, int) and not isinstance(pid, bool) and host == socket.gethostname():
        started = float(pid_started) if isinstance(pid_started, int | float) else None
        return None if _process_alive(pid, started) else f"its process (pid {pid} on {host}) is gone"
    last = _last_sign_of_life(run_dir)
    age = None if last is None else (now if now is not None else time.time()) - last
    if age is not None and age > HEARTBEAT_STALE_S:
        where = f" (host {host})" if isinstance(host, str) else ""
        return f"no sign of life for {fmt.duration(age)}{where}: its process is taken as gone"
    return None
