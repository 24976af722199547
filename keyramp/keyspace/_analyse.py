"""The runner's entry point: key-space metrics for one finished cell of a run."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keyramp.keyspace._load import load_keys
from keyramp.keyspace._metrics import summarize_cell

__all__ = ["summarize_run_cell"]


def summarize_run_cell(*, run_dir: Path, cell: Any, profile: Mapping[str, Any], total_count: int,
                       keys_start: int = 0) -> dict[str, Any] | None:
    """Hotspot metrics + the modelled tablet summary from ``cell``'s sampled keys in ``keys.csv``.

    ``cell`` is a ``keyramp._profile.Cell``; ``profile`` the resolved profile table.
    ``None`` when the cell sampled no keys.
    """
    samples = load_keys(run_dir / "keys.csv", cell=cell.id, start=keys_start).get(cell.id)
    if samples is None or len(samples) == 0:
        return None
    return summarize_cell(
        samples.key,
        samples.t,
        samples.op,
        backend=cell.backend,
        time_scale=cell.time_scale,
        rate_fn=cell.schedule.rate if cell.schedule.open_model else None,
        sample_rate=min(1.0, len(samples) / max(total_count, 1)),
    )
