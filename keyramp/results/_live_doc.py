"""``live.json`` as a typed document: what a run is doing right now (written by ``_live.LiveFile``;
format: docs/run-format.md). Every field is optional: the file is rewritten every second and read
by pollers, so a reader takes what is there."""

from __future__ import annotations

from dataclasses import dataclass, field

from keyramp.results._doc import JsonDoc

__all__ = ["LiveCell", "LiveStatus", "LiveStep"]


@dataclass(kw_only=True)
class LiveStep(JsonDoc):
    """The schedule step a stepped schedule is on (1-based) and its rate."""

    index: int | None = None
    of: int | None = None
    ops_per_s: float | None = None


@dataclass(kw_only=True)
class LiveCell(JsonDoc):
    """The cell running now: its phase, and while it measures, its second and rates."""

    id: str | None = None
    index: int | None = None
    backend: str | None = None
    strategy: str | None = None
    duration_s: float | None = None
    schedule: str | None = None
    elapsed_s: float | None = None
    target_ops_per_s: float | None = None
    achieved_ops_per_s: float | None = None
    users: int | None = None
    step: LiveStep | None = None
    #: When the cell entered its phase (epoch seconds), and for a warm-up its planned seconds and, on a
    #: fresh emulator, how long it may go on until latency settles: the UI counts down from them.
    phase_since_epoch: float | None = None
    warmup_s: float | None = None
    warmup_up_to_s: float | None = None
    #: Last: the writer (``LiveFile``) writes in declaration order, and always wrote the phase last.
    phase: str | None = None


@dataclass(kw_only=True)
class LiveStatus(JsonDoc):
    """``live.json``: the run's status, its cells finished so far, the current cell, when written."""

    schema: int | None = None
    run_id: str | None = None
    status: str | None = None
    cells: int | None = None
    finished: list[str] = field(default_factory=list)
    cell: LiveCell | None = None
    updated_at: str | None = None
    updated_epoch: float | None = None
