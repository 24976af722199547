"""The key range a cell ran against, rebuilt from its profile: preloaded keys + sampled inserts.

Samples alone show only the keys a cell *touched*; the preloaded records (written before
the measured phase) are invisible, so "the range" would shrink to the touched keys and a
sequential cell's appends would look spread over it. Preloaded keys are deterministic
(``CellWorkload.key_of(i)`` for ``i < record_count``: a pure function of the index), so an
evenly spaced sample of them stands for the existing range, and the sampled inserts for
the keys the cell added, each weighted by how many real keys it represents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from keyramp.core import key_sort_text
from keyramp.keyspace._load import (
    MAX_REFERENCE,
    CellKeys,
    Reference,
    make_reference,
)
from keyramp.profile import Schedule, Settings
from keyramp.results import CellSummary, as_cell
from keyramp.workload import CellWorkload

__all__ = ["PRELOAD_POINTS", "cell_reference", "existing_before", "preload_indexes"]

#: Preloaded keys sampled per cell (evenly spaced insert indexes): 4 per bucket of 1,000.
PRELOAD_POINTS = 4096


def preload_indexes(count: int, *, points: int = PRELOAD_POINTS) -> np.ndarray:
    """Up to ``points`` indexes of ``count`` preloaded records, one at random in each of ``points``
    equal slices (int64, ascending; all of them when there are fewer; empty when none).

    Not evenly spaced: a stride that is a multiple of a design's period (``sharded(64)`` at
    a spacing of 64) would sample one shard only and misplace every other one.
    """
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    if count <= points:
        return np.arange(count, dtype=np.int64)
    u = np.random.default_rng([count, 0x9E37]).random(points)
    return np.unique(np.minimum(((np.arange(points) + u) * (count / points)).astype(np.int64), count - 1))


def existing_before(cell_summary: CellSummary | Mapping[str, Any], settings: Settings,
                    schedule: Schedule | None) -> int:
    """Records that exist when a cell's measured phase starts: the preload plus the warm-up's inserts.

    The runner counts the warm-up's inserts (``warmup_inserts`` in the cell summary); for runs
    without that count (older runs, distributed cells) they are estimated from the warm-up's
    length, its rate (``schedule``'s starting rate, the cell's) and the inserts per operation.
    """
    summary = as_cell(cell_summary)
    wl = settings.workload
    count = int(wl.record_count)
    done = summary.warmup_inserts
    if isinstance(done, int) and not isinstance(done, bool):
        return count + max(done, 0)
    warmup_s = summary.warmup_s
    if not isinstance(warmup_s, int | float) or isinstance(warmup_s, bool) or warmup_s <= 0 or schedule is None:
        return count
    rate = schedule.rate(0.0)
    new_records = {"insert": 1, "batch_write": int(wl.batch_size)}  # per operation
    per_op = sum(float(share) * new_records[op] for op, share in wl.ops.items() if op in new_records)
    return count + round(float(warmup_s) * rate * per_op)


def cell_reference(
    *,
    settings: Settings,
    backend: str,
    strategy: str,
    samples: CellKeys,
    sample_rate: float,
    existing: int | None = None,
    preload_points: int = PRELOAD_POINTS,
) -> Reference | None:
    """The range of ``strategy`` keys existing during a cell of a run of ``settings``.

    ``sample_rate``: the fraction of keyed accesses that were sampled (scales the inserts).
    ``existing``: records when the measured phase starts (``existing_before``: preload plus
    warm-up inserts; default the preload alone). Warm-up inserts are contiguous in insert
    index, so leaving them out would pile every read of them into one slot of the range: a
    fake static hotspot. None when keys cannot be rebuilt (the store allocated them).
    """
    # A strategy that no longer builds (a hand-edited profile) raises here; the caller then ranks among the samples.
    wl = CellWorkload(backend=backend, strategy=strategy, settings=settings)
    if wl.strategy.server_allocated:
        return None
    count = wl.record_count if existing is None else max(int(existing), 0)
    idx = preload_indexes(count, points=preload_points)
    pre = [key_sort_text(wl.key_of(int(i))) for i in idx]  # type: ignore[arg-type]
    ins = samples.inserts
    if not ins.any():
        ins_keys, ins_t = np.zeros(0, dtype="S1"), np.zeros(0)
        inserted = 0.0
    else:
        ins_keys, ins_t = samples.key[ins], samples.t[ins]
        # A sampled batch_write stands for batch_size new keys (its first key is sampled).
        batch = np.asarray(samples.op[ins]) == (b"batch_write" if samples.op.dtype.kind == "S" else "batch_write")
        inserted = float(np.where(batch, wl.batch_size, 1).sum()) / max(sample_rate, 1e-12)
        if len(ins_keys) > MAX_REFERENCE:  # spread in time (one per slice, at random: no fixed stride)
            keep = preload_indexes(len(ins_keys), points=MAX_REFERENCE)
            ins_keys, ins_t = ins_keys[keep], ins_t[keep]
    if not pre and not len(ins_keys):
        return None
    weights = np.concatenate([np.full(len(pre), count / max(len(pre), 1)),
                              np.full(len(ins_keys), inserted / max(len(ins_keys), 1))])
    since = np.concatenate([np.full(len(pre), -math.inf), ins_t])
    keys = np.concatenate([np.array([k.encode("utf-8") for k in pre], dtype=bytes) if pre else np.zeros(0, "S1"),
                           ins_keys])
    return make_reference(keys, weight=weights, since=since)
