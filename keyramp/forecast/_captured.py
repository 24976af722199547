"""What a recording says beyond its keys: the op mix by what each access really did, whether its keys
are the design's at all, and the index ranges its writes made.

A Python workload's ops are its own code: an op named ``add`` may upsert a document with a uuid id
of its own and an indexed timestamp, another may increment a counter. The recorder keeps, for the
ops it samples, each access its requests made (``keys/<cell>.parquet``: ``kind``, ``index``,
``access``; ``backends._capture``). So:

* **the op mix** (``recorded_mix``) counts, per op, the rows it inserted, wrote, read, per sampled
  operation: a write-only op is never a read (before: every op that did not call ``keys.new()``
  was projected as one read);
* **the keys** are the design's only if the recording shows them among the strategy's
  (``design_keys``): an app that writes ``uuid4()`` ids under ``strategy = "sequential"`` is
  placed among the keys it wrote, never among the strategy's;
* **the index ranges** (``index_ranges``): each indexed field's entries, as the store orders them
  (value, then document), with their append points where they append (a time field) — the range
  Google's 500 writes/s applies to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from keyramp.core import INDEX_FIELD_SEP, UsageError, key_sort_text
from keyramp.forecast._mix import CLASSES, OpMix
from keyramp.forecast._pattern import AppendPoints, Layout
from keyramp.forecast._project import RangeStream
from keyramp.keyspace import CellKeys, append_runs, key_positions
from keyramp.profile import Settings
from keyramp.workload import CellWorkload

__all__ = ["DESIGN_SHARE", "IndexRange", "design_keys", "index_ranges", "keys_found", "recorded_mix"]

#: Entries an index needs in the recording before its range is projected.
_MIN_ENTRIES = 16
#: Recorded inserts checked against the strategy's keys, and the keys generated for it at most.
_CHECKED, _GENERATED = 200, 100_000
#: Share of the recorded inserts that must be the strategy's keys for the strategy's range to stand.
DESIGN_SHARE = 0.9
_CLASS_OF = {b"insert": ("write", "new"), b"write": ("write", "existing"), b"transform": ("write", "existing"),
             b"delete": ("write", "existing"), b"read": ("read", "existing")}


def recorded_mix(samples: CellKeys, counts: Mapping[str, float]) -> OpMix | None:
    """Rows per operation by class, from what each sampled operation's accesses did, weighted by the
    cell's measured operation counts; None when the recording did not keep each access's kind."""
    if samples.access is None or not len(samples):
        return None
    first = samples.access == 0
    ops = samples.op.astype(str)
    total = sum(float(n) for n in counts.values() if n > 0) or 1.0
    per_op = dict.fromkeys(CLASSES, 0.0)
    shares: dict[str, float] = {}
    deletes, skipped = 0.0, []
    for op, n in counts.items():
        rows = ops == op
        sampled = int((rows & first).sum())
        if n <= 0:
            continue
        if not sampled:  # never sampled: the op touched no single key (a query), as before
            skipped.append(op)
            continue
        kinds = samples.kinds[rows]
        projected = False
        for kind, cls in _CLASS_OF.items():
            hit = int((kinds == kind).sum())
            if hit:
                per_op[cls] += float(n) / total * hit / sampled
                projected = True
        deletes += float(n) / total * int((kinds == b"delete").sum()) / sampled
        if projected:
            shares[op] = float(n) / total
        else:
            skipped.append(op)
    kept = sum(shares.values()) or 1.0  # shares of the projected operations, as op_mix gives them
    return OpMix(shares={op: v / kept for op, v in shares.items()}, per_op={c: v / kept for c, v in per_op.items()},
                 not_projected=tuple(sorted(skipped)), deletes_per_op=deletes / kept)


def keys_found(samples: CellKeys, *, settings: Settings, backend: str, strategy: str, existing: int,
               inserted: float) -> float:
    """The share of the keys the recording shows that are the strategy's (``keys.new()``, ``keys.existing()``):
    up to 200 of them, among the keys of the insert indexes the cell can have used (the preload and warm-up's,
    then its own inserts; at most 100,000 of each)."""
    if not len(samples):
        return 1.0
    try:
        wl = CellWorkload(backend=backend, strategy=strategy, settings=settings)
    except (UsageError, KeyError, TypeError, ValueError):
        return 0.0
    if wl.strategy.server_allocated:
        return 0.0
    before = max(existing, wl.record_count)
    indexes = [*range(min(before, _GENERATED)), *range(before, before + min(int(2 * inserted) + 1, _GENERATED))]
    known = {key_sort_text(wl.key_of(i)).encode() for i in indexes}  # type: ignore[arg-type]
    keys = np.unique(samples.key)
    picked = keys[np.linspace(0, len(keys) - 1, min(_CHECKED, len(keys))).astype(np.int64)]
    return float(np.mean([k in known for k in picked.tolist()]))


def design_keys(samples: CellKeys, *, settings: Settings, backend: str, strategy: str, existing: int,
                inserted: float) -> bool:
    """Whether the keys the recording shows are the strategy's, so its range stands for the cell's
    (``keys_found`` at least 90 %)."""
    return keys_found(samples, settings=settings, backend=backend, strategy=strategy, existing=existing,
                      inserted=inserted) >= DESIGN_SHARE


@dataclass(frozen=True, kw_only=True)
class IndexRange:
    """One index's range of the recording: its append points (shares, direction) and the entries a write
    makes in it per operation."""

    name: str
    points: AppendPoints
    per_op: float

    def stream(self, *, existing: float, new: float, grid: np.ndarray, progress: np.ndarray) -> RangeStream:
        layout = Layout(points=self.points, existing=int(existing), new=new)
        return RangeStream(t=np.zeros(0), pos=np.zeros(0), is_read=np.zeros(0, dtype=bool),
                           frontiers=layout.frontiers(grid, progress), appends=1.0)


def index_ranges(samples: CellKeys) -> list[IndexRange]:
    """The index ranges the recorded writes append to (a spread index splits like the documents and is
    left out), each with its entries per sampled operation."""
    if not samples.index:
        return []
    by_field: dict[str, list[tuple[float, str]]] = {}
    for row, written in samples.index.items():
        for entry in written:
            field, _, rest = entry.partition(INDEX_FIELD_SEP)
            by_field.setdefault(field, []).append((float(samples.t[row]), rest))
    operations = max(samples.operations, 1)
    out = []
    for field, entries in sorted(by_field.items()):
        if len(entries) < _MIN_ENTRIES:
            continue
        t = np.array([e[0] for e in entries])
        kp = key_positions([e[1] for e in entries], inserts=np.ones(len(t), dtype=bool), times=t)
        runs = append_runs(kp.lead, kp.pos, t)
        if runs is None:
            continue
        sizes = np.bincount(runs.run)
        points = AppendPoints(first_keys=np.zeros(len(sizes), dtype="S1"), share=sizes / sizes.sum(),
                              prepend=not runs.forward)
        out.append(IndexRange(name=f"index:{field} (recorded)", points=points, per_op=len(entries) / operations))
    return out
