"""A run in progress, as the UI shows it: ``live.json`` (written by the run, see
``keyramp.results._live``) turned into a view model with one line of text.

A run whose process died leaves ``status: "running"`` in its manifest forever; the age of
``live.json`` tells it apart (``stale`` after ``STALE_AFTER_S`` without an update).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from keyramp.results import LIVE_FILE, LiveCell, LiveStatus, LiveStep, num, text

__all__ = ["STALE_AFTER_S", "live_view", "read_live", "warmup_text"]

#: A running run's live.json is rewritten every second while it measures and at each phase;
#: preloads and warm-ups are the longest quiet stretches (up to ~30 s on a fresh emulator).
STALE_AFTER_S = 90.0


def read_live(run_dir: Path) -> LiveStatus | None:
    """The run's live.json, or None if missing, unreadable or misshapen (a torn write is retried
    next poll)."""
    try:
        return LiveStatus.from_json(json.loads((run_dir / LIVE_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError):  # DocError is a ValueError
        return None


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value < 120 else f"{value / 60:.1f} min"


def live_view(doc: LiveStatus | None, *, status: str, cells: int, now: float | None = None,
              since: float | None = None) -> dict[str, Any]:
    """``{"running", "stale", "age_s", "cell", "finished", "text"}`` for a run whose manifest says
    ``status``; ``doc`` is its live.json (None for runs written before it existed, or in the
    moment before the run writes it: ``since``, the manifest's mtime, dates the run then)."""
    running = status == "running"
    written = doc is not None and bool(doc.to_json())  # an empty file says nothing either
    live = doc if doc is not None else LiveStatus()
    updated = num(live.updated_epoch) if written else since
    age = None if updated is None else max(0.0, (now if now is not None else time.time()) - updated)
    stale = running and (age is None or age > STALE_AFTER_S)
    cell = live.cell if live.cell is not None and live.cell.to_json() else None
    finished = [str(c) for c in live.finished]
    total = int(num(live.cells) or cells or 0)
    parts: list[str] = []
    if not running:
        parts.append(f"{status}: {len(finished)} of {total} cells finished" if written else status)
    elif cell is not None:
        parts += _cell_parts(cell, total, now if now is not None else time.time())
    else:
        parts.append(f"{len(finished)} of {total} cells finished" if written else "starting")
    if running and stale:
        parts.append("no update for " + (_seconds(age) if age is not None else "a while")
                     + ": the run's process may have stopped")
    counting = running and cell is not None and warmup_text(cell, now if now is not None else time.time()) is not None
    return {"running": running and not stale, "stale": stale, "status": status, "counting_down": counting,
            "age_s": None if age is None else round(age, 1), "cell": cell.to_json() if cell is not None else None,
            "finished": finished, "cells": total, "text": " · ".join(parts)}


def warmup_text(cell: LiveCell, now: float) -> str | None:
    """A countdown while the cell warms up: ``warming up: 7 s left of 10 s``, then, on a fresh
    emulator, how long it has been settling; None in any other phase (or a live.json without it)."""
    planned, since = num(cell.warmup_s), num(cell.phase_since_epoch)
    if planned is None or since is None:
        return None
    spent = max(0.0, now - since)
    up_to = num(cell.warmup_up_to_s)
    if spent < planned:
        then = f", then until latency settles (≤ {_seconds(up_to)} in all)" if up_to else ""
        return f"warming up (not measured): {_seconds(math.ceil(planned - spent))} left of {_seconds(planned)}{then}"
    if up_to:
        return (f"warming up (not measured): settling, {_seconds(round(spent))} so far "
                f"(until latency stops improving, ≤ {_seconds(up_to)})")
    return "warming up (not measured): ending"


def _cell_parts(cell: LiveCell, total: int, now: float) -> list[str]:
    """The status line's parts for the cell running now: which, its phase, step and rates."""
    parts = [f"cell {int(num(cell.index) or 0) + 1} of {total}: {text(cell.id)}"]
    phase = warmup_text(cell, now) or text(cell.phase) or "starting"
    elapsed, duration = num(cell.elapsed_s), num(cell.duration_s)
    if phase == "measuring" and elapsed is not None and duration:
        phase += f" {_seconds(elapsed)} of {_seconds(duration)}"
    parts.append(phase)
    step = cell.step or LiveStep()
    steps = num(step.of)
    if steps is not None and steps > 1:
        parts.append(f"step {int(num(step.index) or 1)} of {int(steps)} ({num(step.ops_per_s) or 0:,.0f} ops/s)")
    target, achieved = num(cell.target_ops_per_s), num(cell.achieved_ops_per_s)
    if phase.startswith("measuring") and achieved is not None:
        parts.append(f"{achieved:,.0f}" + (f" / {target:,.0f}" if target is not None else "") + " ops/s")
    return parts
