"""Key-space analysis of one cell's sampled keys in a run: for the runner and ``keyramp keyspace``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from keyramp._errors import UsageError
from keyramp.keyspace._load import CellKeys, KeyPositions, Reference, load_keys
from keyramp.keyspace._metrics import analyze_cell, summary_entry
from keyramp.keyspace._reference import cell_reference
from keyramp.keyspace._tablets import TabletTimeline

__all__ = ["analyse_samples", "reference_or_none", "summarize_run_cell"]


def reference_or_none(*, profile: Mapping[str, Any] | None, backend: str, strategy: str, samples: CellKeys,
                      sample_rate: float) -> Reference | None:
    """The cell's key range from its profile, or None (rank among the samples) if it cannot be rebuilt."""
    if not profile:
        return None
    try:
        return cell_reference(profile=profile, backend=backend, strategy=strategy, samples=samples,
                              sample_rate=sample_rate)
    except (UsageError, KeyError, TypeError, ValueError):  # an old or hand-edited profile: samples only
        return None


def analyse_samples(
    samples: CellKeys,
    *,
    profile: Mapping[str, Any] | None,
    backend: str,
    strategy: str,
    total_count: int,
    time_scale: float,
    rate_fn: Callable[[float], float] | None,
    buckets: int = 1000,
) -> tuple[KeyPositions, np.ndarray, dict[str, Any], TabletTimeline | None]:
    """``analyze_cell`` on a cell's sampled keys, against the key range rebuilt from ``profile``.

    ``total_count``: the cell's operations (the denominator of the sample rate). Without a
    profile, or one the range cannot be rebuilt from, the sampled keys alone make the range;
    ``metrics["range_from"]`` says which.
    """
    sample_rate = min(1.0, len(samples) / max(total_count, 1))
    reference = reference_or_none(profile=profile, backend=backend, strategy=strategy, samples=samples,
                                  sample_rate=sample_rate)
    kp, t, metrics, timeline = analyze_cell(
        samples.key, samples.t, samples.op, backend=backend, time_scale=time_scale, rate_fn=rate_fn,
        buckets=buckets, sample_rate=sample_rate, reference=reference,
    )
    metrics = {**metrics, "range_from": "profile" if reference is not None else "samples"}
    return kp, t, metrics, timeline


def summarize_run_cell(*, run_dir: Path, cell: Any, profile: Mapping[str, Any], total_count: int,
                       keys_start: int = 0) -> dict[str, Any] | None:
    """Hotspot metrics + the modelled tablet summary from ``cell``'s sampled keys in ``keys.csv``.

    ``cell`` is a ``keyramp.profile._profile.Cell``; ``profile`` the resolved profile table, from
    which the preloaded key range is rebuilt. ``None`` when the cell sampled no keys.
    """
    samples = load_keys(run_dir / "keys.csv", cell=cell.id, start=keys_start).get(cell.id)
    if samples is None or len(samples) == 0:
        return None
    kp, _, metrics, timeline = analyse_samples(
        samples, profile=profile, backend=cell.backend, strategy=cell.strategy, total_count=total_count,
        time_scale=cell.time_scale, rate_fn=cell.schedule.rate if cell.schedule.open_model else None,
    )
    return summary_entry(kp, metrics, timeline)
