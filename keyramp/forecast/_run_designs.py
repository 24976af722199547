"""The cells of a finished run as the forecast sees them: each cell's ``CellDesign`` and a loader of its
sampled keys (``keyramp forecast RUN`` and ``keyramp plan RUN`` both start here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from keyramp.core import UsageError
from keyramp.forecast._design import CellDesign
from keyramp.forecast._forecast import cell_samples
from keyramp.forecast._launch import Launch
from keyramp.profile import Settings
from keyramp.results import Run, RunManifest, data_cells

__all__ = ["RunCell", "RunDesigns", "run_designs"]


@dataclass(frozen=True, kw_only=True)
class RunCell:
    cell_id: str
    design: CellDesign
    #: A loader of the cell's sampled keys (None: the run recorded none).
    samples: Any = None


@dataclass(frozen=True, kw_only=True)
class RunDesigns:
    """The run's profile read back, typed (``settings`` None: a run without one; ``launch``: its ``[launch]``),
    its backends, and its cells with a key stream."""

    settings: Settings | None
    launch: Launch | None
    backends: tuple[str, ...]
    cells: tuple[RunCell, ...]


def run_designs(run: Run, *, cell: str | None = None) -> RunDesigns:
    """The cells of a loaded run, or only ``cell``; probe cells (no key stream) are left out.
    ``UsageError`` for an unknown cell id."""
    if run.manifest_error is not None:
        raise UsageError(f"{run.path}: {run.manifest_error}")
    manifest = run.manifest or RunManifest()
    settings = manifest.settings
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
        expanded = manifest.run_cell(cell_id)  # its schedule built once from the settings (None: no profile)
        if expanded is not None:
            design = CellDesign.of_cell(expanded, cell_summary)
        else:
            design = CellDesign.from_summary(backend=str(meta.backend), strategy=str(meta.strategy),
                                             settings=settings, cell_summary=cell_summary)
        out.append(RunCell(cell_id=cell_id, design=design,
                           samples=cell_samples(run, cell_id) if cell_id in with_keys else None))
    return RunDesigns(settings=settings, launch=manifest.launch, backends=backends, cells=tuple(out))
