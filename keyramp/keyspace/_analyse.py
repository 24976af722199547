"""The runner's entry point: key-space metrics for one finished cell of a run."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keyramp._errors import UsageError
from keyramp.keyspace._load import CellKeys, Reference, load_keys
from keyramp.keyspace._metrics import summarize_cell
from keyramp.keyspace._reference import cell_reference

__all__ = ["reference_or_none", "summarize_run_cell"]


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


def summarize_run_cell(*, run_dir: Path, cell: Any, profile: Mapping[str, Any], total_count: int,
                       keys_start: int = 0) -> dict[str, Any] | None:
    """Hotspot metrics + the modelled tablet summary from ``cell``'s sampled keys in ``keys.csv``.

    ``cell`` is a ``keyramp._profile.Cell``; ``profile`` the resolved profile table, from
    which the preloaded key range is rebuilt. ``None`` when the cell sampled no keys.
    """
    samples = load_keys(run_dir / "keys.csv", cell=cell.id, start=keys_start).get(cell.id)
    if samples is None or len(samples) == 0:
        return None
    sample_rate = min(1.0, len(samples) / max(total_count, 1))
    reference = reference_or_none(profile=profile, backend=cell.backend, strategy=cell.strategy, samples=samples,
                                  sample_rate=sample_rate)
    out = summarize_cell(
        samples.key,
        samples.t,
        samples.op,
        backend=cell.backend,
        time_scale=cell.time_scale,
        rate_fn=cell.schedule.rate if cell.schedule.open_model else None,
        sample_rate=sample_rate,
        reference=reference,
    )
    out["range_from"] = "profile" if reference is not None else "samples"
    return out
