"""What happens to a cell's summary after its measured phase: analysis steps, then thresholds.

Each step adds its part to the summary (key-space metrics, …) and is best effort: the
measurements are already on disk, so a step that fails becomes a warning, never a failed
run. Thresholds are evaluated last (they may gate on what the steps added).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import keyramp.forecast
from keyramp.keyspace import load_keys, summarize_run_cell
from keyramp.profile import Cell, Profile
from keyramp.results import CellSummary, check_generator, evaluate

if TYPE_CHECKING:
    from keyramp.forecast import Forecaster
    from keyramp.keyspace import CellKeys

__all__ = ["ANALYSIS_STEPS", "CellAnalysis", "analyse_cell"]


@dataclass(kw_only=True)
class CellAnalysis:
    """A finished cell, as the analysis steps see it."""

    run_dir: Path
    profile: Profile
    cell: Cell
    #: The cell's summary; steps set their parts of it (``a.summary.keyspace = …``).
    summary: CellSummary
    #: The cell had a measured phase (a probe cell has none, and no key samples).
    measured: bool
    #: The cell's forecaster, built by the forecast step and reused by the plan step: the same
    #: design and recorded keys, so its keys and projections are not made twice.
    forecaster: Forecaster | None = None
    _keys: tuple[CellKeys | None] | None = field(default=None, init=False, repr=False)

    def keys(self) -> CellKeys | None:
        """The cell's sampled keys, read once for all the steps (the key space and the forecast read
        the same file; an hour-long cell's holds about 1.8 million rows)."""
        if self._keys is None:
            self._keys = (load_keys(self.run_dir, cell=self.cell.id).get(self.cell.id),)
        return self._keys[0]


def keyspace_step(a: CellAnalysis) -> None:
    """Hotspot metrics and the modelled tablet summary from the cell's sampled keys."""
    if not a.measured:
        return

    keyspace = summarize_run_cell(run_dir=a.run_dir, cell=a.cell, cell_summary=a.summary, samples=a.keys())
    if keyspace is not None:
        a.summary.keyspace = keyspace


def forecast_step(a: CellAnalysis) -> None:
    """The launch forecast (modelled) when the profile has a ``[launch]``; after the key space (it checks
    its projection against the measured hotspot share)."""
    keyramp.forecast.forecast_step(a)


def plan_step(a: CellAnalysis) -> None:
    """The launch plan (modelled) when the profile has a ``[launch]`` and ``[thresholds]`` gate on it
    (``plan.*``): after the forecast."""
    keyramp.forecast.plan_step(a)


def generator_step(a: CellAnalysis) -> None:
    """``generator_limited`` and why (``keyramp.results._generator``): before the thresholds,
    which turn latency checks of a generator-limited cell "inconclusive"."""
    if not a.measured:
        return  # a probe: no Locust phase, no schedule to keep up with

    verdict = check_generator(a.summary)
    a.summary.generator_limited, a.summary.generator = verdict.limited, verdict


#: (name, step) in order; a new analysis adds itself here.
ANALYSIS_STEPS: tuple[tuple[str, Callable[[CellAnalysis], None]], ...] = (
    ("generator check", generator_step),
    ("key-space analysis", keyspace_step),
    ("launch forecast", forecast_step),
    ("launch plan", plan_step),
)


def analyse_cell(a: CellAnalysis, warnings: list[str], *,
                 steps: Sequence[tuple[str, Callable[[CellAnalysis], None]]] = ANALYSIS_STEPS) -> None:
    """Run every step on a finished cell, then its thresholds; never raises for a step."""
    for name, step in steps:
        try:
            step(a)
        except Exception as exc:  # noqa: BLE001 - best effort: the measurements are already on disk
            warnings.append(f"{a.cell.id}: {name} failed: {exc.__class__.__name__}: {exc}")
    a.summary.thresholds = evaluate(a.profile.thresholds, a.summary)
