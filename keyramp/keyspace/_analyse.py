"""Key-space analysis of one cell's sampled keys in a run: for the runner and ``keyramp keyspace``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from keyramp.backends import DEFAULT_BACKEND, tablet_capacity_band
from keyramp.core import UsageError
from keyramp.keyspace._heatmap import heatmap_data
from keyramp.keyspace._load import CellKeys, KeyPositions, Reference, key_positions, load_keys
from keyramp.keyspace._metrics import analyze_cell, summary_entry
from keyramp.keyspace._reference import cell_reference, existing_before
from keyramp.keyspace._tablets import TabletTimeline
from keyramp.profile import Cell, Schedule, Settings, rebuilds_keys
from keyramp.results import CellSummary, KeyspaceFigures, ManifestCell, Run, RunManifest

__all__ = ["analyse_samples", "as_inserts", "cell_duration", "cell_existing", "cell_heatmap", "existing_records",
           "hot_window", "reference_or_none", "summarize_run_cell", "total_count"]


def reference_or_none(*, settings: Settings | None, backend: str, strategy: str, samples: CellKeys,
                      sample_rate: float, existing: int | None = None) -> Reference | None:
    """The cell's key range from its settings, or None (rank among the samples) if it cannot be rebuilt."""
    if settings is None or not rebuilds_keys(settings):
        return None
    try:
        return cell_reference(settings=settings, backend=backend, strategy=strategy, samples=samples,
                              sample_rate=sample_rate, existing=existing)
    except (UsageError, KeyError, TypeError, ValueError):  # an old or hand-edited profile: samples only
        return None


def hot_window(metrics: Mapping[str, Any], *, backend: str, ops_per_s: float) -> dict[str, Any]:
    """The hottest 1 % window in real ops/s (measured) next to what one tablet serves (a modelled band)."""
    share = metrics.get("hottest_1pct_share")
    out: dict[str, Any] = {"hottest_1pct_ops_per_s": None if share is None else round(float(share) * ops_per_s, 1)}
    try:
        band = tablet_capacity_band(backend)
    except UsageError:
        return out
    value = out["hottest_1pct_ops_per_s"]
    out["tablet_capacity_ops_per_s"] = {"low": band.low, "mid": band.mid, "high": band.high, "source": band.source,
                                        "modelled": True}
    if value is not None:
        out["hot_window_vs_capacity"] = ("above the band" if value > band.high else
                                         "within the band" if value >= band.low else "below the band")
    return out


def as_inserts(samples: CellKeys, names: Sequence[str]) -> CellKeys:
    """A run that did not record each access's kind: a Python workload's ops that create keys
    (``workload.insert_ops``) read as inserts (the analysis grows the key range with them and measures
    appends on them). A run that recorded the kinds says so itself."""
    if not names or not len(samples) or samples.access is not None:
        return samples
    ops = samples.op
    wanted = [n.encode() for n in names] if ops.dtype.kind == "S" else list(names)
    hit = np.isin(ops, wanted)
    if not hit.any():
        return samples
    return dataclasses.replace(samples, kind=np.where(hit, b"insert", samples.kinds).astype("S9"))


def analyse_samples(
    samples: CellKeys,
    *,
    settings: Settings | None,
    backend: str,
    strategy: str,
    total_count: int,
    time_scale: float,
    rate_fn: Callable[[float], float] | None,
    buckets: int = 1000,
    existing: int | None = None,
    duration_s: float | None = None,
) -> tuple[KeyPositions, np.ndarray, dict[str, Any], TabletTimeline | None]:
    """``analyze_cell`` on a cell's sampled keys, against the key range rebuilt from the run's ``settings``.

    ``total_count``: the cell's operations (the denominator of the sample rate). Without
    settings, or ones the range cannot be rebuilt from, the sampled keys alone make the range;
    ``metrics["range_from"]`` says which. ``existing``: records when the measured phase
    started (``existing_before``); ``duration_s``: the measured phase (for ops/s).
    """
    sample_rate = min(1.0, len(samples) / max(total_count, 1))
    samples = as_inserts(samples, settings.workload.insert_ops if settings is not None else ())
    reference = reference_or_none(settings=settings, backend=backend, strategy=strategy, samples=samples,
                                  sample_rate=sample_rate, existing=existing)
    kp, t, metrics, timeline = analyze_cell(
        samples.key, samples.t, samples.analysis_ops, backend=backend, time_scale=time_scale, rate_fn=rate_fn,
        buckets=buckets, sample_rate=sample_rate, reference=reference,
    )
    span = duration_s if duration_s and duration_s > 0 else (float(t[-1]) if len(t) and t[-1] > 0 else 1.0)
    metrics = {**metrics, "range_from": "profile" if reference is not None else "samples",
               **hot_window(metrics, backend=backend, ops_per_s=total_count / span)}
    return kp, t, metrics, timeline


def summarize_run_cell(*, run_dir: Path, cell: Cell, cell_summary: CellSummary,
                       samples: CellKeys | None = None) -> KeyspaceFigures | None:
    """Hotspot metrics + the modelled tablet summary from ``cell``'s sampled keys in the run directory:
    the cell summary's ``keyspace`` (the runner sets it while it builds the summary).

    ``cell``: the profile's cell (its settings rebuild the preloaded key range); ``cell_summary`` the
    cell's summary so far (operation count, duration, warm-up inserts). ``None`` when the cell sampled
    no keys. ``samples``: the cell's keys when the caller has read them already.
    """
    if samples is None:
        samples = load_keys(run_dir, cell=cell.id).get(cell.id)
    if samples is None or len(samples) == 0:
        return None
    kp, _, metrics, timeline = analyse_samples(
        samples, settings=cell.settings, backend=cell.backend, strategy=cell.strategy,
        total_count=total_count(cell_summary, 0), time_scale=cell.time_scale,
        rate_fn=cell.schedule.rate if cell.schedule.open_model else None,
        existing=existing_before(cell_summary, cell.settings, cell.schedule), duration_s=cell_duration(cell_summary),
    )
    return summary_entry(kp, metrics, timeline)


def cell_duration(cell_summary: CellSummary) -> float | None:
    value = cell_summary.duration_s
    return float(value) if value is not None and value > 0 else None


def total_count(cell_summary: CellSummary, default: int) -> int:
    """Operations summary.json counted for a cell (the sample rate's denominator), else ``default``."""
    return int(cell_summary.total.count) if cell_summary.total is not None else default


def existing_records(cell_summary: CellSummary, settings: Settings | None, schedule: Schedule | None = None
                     ) -> int | None:
    """Records when the cell's measured phase started (preload + warm-up inserts), as the runner counted
    them, if the run's profile says (``settings`` None: the run kept none; ``schedule``: the cell's)."""
    return None if settings is None else existing_before(cell_summary, settings, schedule)


def cell_existing(summary: CellSummary, cell: Cell | None) -> int | None:
    """``existing_records`` of a finished run's cell (None: the run kept no profile to expand it)."""
    return None if cell is None else existing_before(summary, cell.settings, cell.schedule)


def cell_heatmap(run: Run, cell: str, *, buckets: int = 250, time_bins: int | None = None) -> dict[str, Any] | None:
    """The heatmap of one cell of a run (a catalog ``Run``), without the metrics or the tablet
    model: what ``keyramp ui`` draws for a finished cell when no ``keyramp keyspace`` file exists.

    Keys are placed against the same reference the runner used (rebuilt from the manifest's
    profile), so the picture matches the summary's metrics. ``None`` when the cell sampled no keys.
    """
    samples = load_keys(run, cell=cell).get(cell)
    if samples is None or len(samples) == 0:
        return None
    manifest = run.manifest or RunManifest()
    meta = next((c for c in manifest.cells if c.id == cell), None) or ManifestCell(id=cell)
    summary = run.cell(cell)
    count = total_count(summary, len(samples))
    settings = manifest.settings
    samples = as_inserts(samples, settings.workload.insert_ops if settings is not None else ())
    backend, strategy = meta.backend or DEFAULT_BACKEND, meta.strategy or "?"
    reference = reference_or_none(settings=settings, backend=backend, strategy=strategy, samples=samples,
                                  sample_rate=min(1.0, len(samples) / max(count, 1)),
                                  existing=cell_existing(summary, manifest.run_cell(cell)))
    t = samples.t
    kp = key_positions(samples.key, reference=reference, inserts=samples.inserts if len(t) else None, times=t)
    duration = float(meta.duration_s or 0.0)
    heat = heatmap_data(kp, t, buckets=buckets, time_bins=time_bins, duration_s=max(duration, float(t[-1])))
    return {"schema": 1, "run_id": manifest.run_id, "cell": cell, "backend": backend, "strategy": strategy,
            "time_scale": float(meta.time_scale or 1.0), "samples": len(t),
            "range_from": "profile" if reference is not None else "samples", **heat}
