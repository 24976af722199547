"""A run in progress, as the UI shows it: ``live.json`` (written by the run, see
``keyramp.results._live``) turned into a view model with one line of text.

A run whose process died leaves ``status: "running"`` in its manifest forever; the age of
``live.json`` tells it apart (``stale`` after ``STALE_AFTER_S`` without an update).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from keyramp.results._live import LIVE_FILE
from keyramp.results._values import as_dict, as_list, num, text

__all__ = ["STALE_AFTER_S", "live_view", "read_live"]

#: A running run's live.json is rewritten every second while it measures and at each phase;
#: preloads and warm-ups are the longest quiet stretches (up to ~30 s on a fresh emulator).
STALE_AFTER_S = 90.0


def read_live(run_dir: Path) -> dict[str, Any] | None:
    """The run's live.json, or None if missing or unreadable (a torn write is retried next poll)."""
    try:
        data = json.loads((run_dir / LIVE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value < 120 else f"{value / 60:.1f} min"


def live_view(doc: dict[str, Any] | None, *, status: str, cells: int, now: float | None = None,
              since: float | None = None) -> dict[str, Any]:
    """``{"running", "stale", "age_s", "cell", "finished", "text"}`` for a run whose manifest says
    ``status``; ``doc`` is its live.json (None for runs written before it existed, or in the
    moment before the run writes it: ``since``, the manifest's mtime, dates the run then)."""
    running = status == "running"
    doc = as_dict(doc)
    updated = num(doc.get("updated_epoch")) if doc else since
    age = None if updated is None else max(0.0, (now if now is not None else time.time()) - updated)
    stale = running and (age is None or age > STALE_AFTER_S)
    cell = as_dict(doc.get("cell")) or None
    finished = [str(c) for c in as_list(doc.get("finished"))]
    total = int(num(doc.get("cells")) or cells or 0)
    parts: list[str] = []
    if not running:
        parts.append(f"{status}: {len(finished)} of {total} cells finished" if doc else status)
    elif cell is not None:
        index = int(num(cell.get("index")) or 0)
        parts.append(f"cell {index + 1} of {total}: {text(cell.get('id'))}")
        phase = text(cell.get("phase")) or "starting"
        elapsed, duration = num(cell.get("elapsed_s")), num(cell.get("duration_s"))
        if phase == "measuring" and elapsed is not None and duration:
            phase += f" {_seconds(elapsed)} of {_seconds(duration)}"
        parts.append(phase)
        step = as_dict(cell.get("step"))
        steps = num(step.get("of"))
        if steps is not None and steps > 1:
            parts.append(f"step {int(num(step.get('index')) or 1)} of {int(steps)} "
                         f"({num(step.get('ops_per_s')) or 0:,.0f} ops/s)")
        target, achieved = num(cell.get("target_ops_per_s")), num(cell.get("achieved_ops_per_s"))
        if phase.startswith("measuring") and achieved is not None:
            parts.append(f"{achieved:,.0f}" + (f" / {target:,.0f}" if target is not None else "") + " ops/s")
    else:
        parts.append(f"{len(finished)} of {total} cells finished" if doc else "starting")
    if running and stale:
        parts.append("no update for " + (_seconds(age) if age is not None else "a while")
                     + ": the run's process may have stopped")
    return {"running": running and not stale, "stale": stale, "status": status,
            "age_s": None if age is None else round(age, 1), "cell": cell, "finished": finished, "cells": total,
            "text": " · ".join(parts)}
