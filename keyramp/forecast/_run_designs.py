"""The cells of a finished run as the forecast sees them: each cell's ``CellDesign`` and a loader of its
sampled keys (``keyramp forecast RUN`` and ``keyramp plan RUN`` both start here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from keyramp._errors import UsageError
from keyramp.forecast._design import CellDesign
from keyramp.forecast._forecast import cell_samples
from keyramp.profile._schedules import make_schedule
from keyramp.results._catalog import Run
from keyramp.results._read import data_cells
from keyramp.results._summary import RunManifest

__all__ = ["RunCell", "RunDesigns", "run_designs"]


@dataclass(frozen=True, kw_only=True)
class RunCell:
    cell_id: str
    design: CellDesign
    #: A loader of the cell's sampled keys (None: the run recorded none).
    samples: Any = None


@dataclass(frozen=True, kw_only=True)
class RunDesigns:
    """The run's resolved profile (None: a run without one), its backends, and its cells with a key stream."""

    profile: Mapping[str, Any] | None
    backends: tuple[str, ...]
    cells: tuple[RunCell, ...]


def run_designs(run: Run, *, cell: str | None = None) -> RunDesigns:
    """The cells of a loaded run, or only ``cell``; probe cells (no key stream) are left out.
    ``UsageError`` for an unknown cell id."""
    if run.manifest_error is not None:
        raise UsageError(f"{run.path}: {run.manifest_error}")
    manifest = run.manifest or RunManifest()
    profile = manifest.profile
    cells_meta = {c.id: c for c in manifest.cells}
    if cell is not None and cell not in cells_meta:
        raise UsageError(f"unknown cell {cell!r}; cells: {', '.join(sorted(cells_meta))}")
    backends = tuple(sorted({str(c.backend) for c in cells_meta.values()}))
    out: list[RunCell] = []
    with_keys: set[str] | None = None  # cells with recorded keys, read once when first needed
    for cell_id, meta in sorted(cells_meta.items()):
        cell_summary = run.cell(cell_id)
        if (cell is not None and cell_id != cell) or cell_summary.probe is not None:
            continue
        if with_keys is None:
            with_keys = set(data_cells(run, "keys"))
        schedule, horizon = None, 0.0
        if profile:
            horizon = float(meta.duration_s or profile.get("duration_s", 0)) * float(meta.time_scale or 1)
            try:
                schedule = make_schedule(profile["schedule"], horizon=horizon)
            except (UsageError, KeyError, TypeError):
                schedule = None
        design = CellDesign.from_summary(backend=str(meta.backend), strategy=str(meta.strategy),
                                         profile=profile, cell_summary=cell_summary, schedule=schedule,
                                         horizon_s=horizon)
        out.append(RunCell(cell_id=cell_id, design=design,
                           samples=cell_samples(run, cell_id) if cell_id in with_keys else None))
    return RunDesigns(profile=profile, backends=backends, cells=tuple(out))
