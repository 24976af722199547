"""A cell's key pattern driven at the launch traffic: the sampled stream the tablet model reads.

Keys are a pure function of the insert index (``keys/``), and which record a read hits is
a seeded distribution over the records that exist. So the stream a launch would send is
*regenerated* from the cell's strategy and distribution at the launch rate: at launch
time t the next insert is index ``I0 + inserted(t)``, reads pick among ``I0 + inserted(t)``
records, and time-based keys read a clock set to the launch's time (a time bucket holds
what the launch writes in it, not what the emulator wrote). The op mix is the cell's
measured one. Where keys cannot be rebuilt (the store allocated them, or no profile), the
recorded positions are replayed, stretched over the launch (``source = "recorded"``).

Monotonic indexed fields (``indexed_value``) write one index entry per insert into an
index range ordered by the field's value; it is projected alongside (serverless stores).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from keyramp._types import key_sort_text
from keyramp.keyspace._load import KeyPositions, key_positions, make_reference
from keyramp.keyspace._reference import preload_indexes

__all__ = ["OpMix", "Projection", "op_mix", "recorded_projection", "regenerated_projection"]

#: op -> row accesses it makes: (kind, where, rows-field or count). ``query`` is not projected:
#: what it reads depends on its filter and index, which the key stream does not show.
_ROWS: dict[str, tuple[tuple[str, str, str | int], ...]] = {
    "insert": (("write", "new", 1),),
    "batch_write": (("write", "new", "batch_size"),),
    "read": (("read", "existing", 1),),
    "batch_read": (("read", "existing", "batch_size"),),
    "update": (("write", "existing", 1),),
    "delete": (("write", "existing", 1),),
    "scan": (("read", "existing", "scan_length"),),
    "transaction": (("read", "existing", 1), ("write", "existing", 1)),
    "increment": (("read", "existing", 1), ("write", "existing", 1)),
}
_CLASSES = (("write", "new"), ("write", "existing"), ("read", "existing"))
_GOLDEN = 0.6180339887498949
#: Indexed values whose index range the forecast projects (the others are spread or absent).
INDEXED = ("monotonic", "prefixed")


@dataclass(frozen=True, kw_only=True)
class OpMix:
    """Row accesses per operation, by class, from the cell's measured operation counts."""

    shares: Mapping[str, float]  # op -> share of the cell's operations (projected ops only)
    per_op: Mapping[tuple[str, str], float]  # (kind, where) -> rows per operation
    not_projected: tuple[str, ...] = ()
    #: Of the existing-row writes, rows per operation that delete (billed apart from writes).
    deletes_per_op: float = 0.0

    @property
    def rows_per_op(self) -> float:
        return sum(self.per_op.values())

    @property
    def inserts_per_op(self) -> float:
        return self.per_op.get(("write", "new"), 0.0)

    @property
    def reads_per_op(self) -> float:
        return self.per_op.get(("read", "existing"), 0.0)

    @property
    def writes_per_op(self) -> float:
        return self.rows_per_op - self.reads_per_op


def _rows_of(workload: Mapping[str, Any]) -> Mapping[str, tuple[tuple[str, str, str | int], ...]]:
    """Row accesses per op name. A Python workload's ops are its methods (docs/workloads.md):
    one that creates the key it returns (``insert_ops``) is one insert, any other one access
    to an existing row, counted as a read (what the method does with it is its own code)."""
    if not workload.get("user"):
        return _ROWS
    inserts = set(workload.get("insert_ops") or ())
    return {op: _ROWS["insert"] if op in inserts else _ROWS["read"] for op in workload["ops"]}


def op_mix(counts: Mapping[str, float], workload: Mapping[str, Any]) -> OpMix:
    """The mix of ``counts`` (op -> operations; the profile's shares when nothing was counted)."""
    if not any(v > 0 for v in counts.values()):
        counts = dict(workload["ops"])
    rows_of = _rows_of(workload)
    projected = {op: float(n) for op, n in counts.items() if op in rows_of and n > 0}
    total = sum(projected.values()) or 1.0
    per_op: dict[tuple[str, str], float] = {c: 0.0 for c in _CLASSES}
    for op, n in projected.items():
        for kind, where, rows in rows_of[op]:
            per_op[(kind, where)] += n / total * (int(workload[rows]) if isinstance(rows, str) else rows)
    skipped = tuple(sorted(op for op, n in counts.items() if op not in rows_of and n > 0))
    # A Python workload's ops are inserts or reads (``_rows_of``): only the built-in delete deletes.
    deletes = 0.0 if workload.get("user") else projected.get("delete", 0.0) / total
    return OpMix(shares={op: n / total for op, n in projected.items()}, per_op=per_op, not_projected=skipped,
                 deletes_per_op=deletes)


@dataclass(frozen=True, kw_only=True)
class Projection:
    """Sampled row accesses of the launch: times (launch seconds), positions, what they are."""

    t: np.ndarray
    pos: np.ndarray  # in the document/row range as it is at the end of the launch
    is_read: np.ndarray
    mix: OpMix
    source: str  # "regenerated" | "recorded"
    why: str
    #: index name -> (times, positions) of the index entries inserts write (serverless stores)
    index: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    #: the document positions with their range, and which samples insert (regenerated only)
    positions: KeyPositions | None = None
    is_new: np.ndarray | None = None


def _cumulative(rate: Callable[[float], float], duration_s: float, per_op: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows inserted by time t on a grid (trapezoids of the rate; steps land on grid points)."""
    n = int(min(20_000, max(200, duration_s)))
    grid = np.linspace(0.0, duration_s, n + 1)
    r = np.array([rate(min(x, duration_s * (1 - 1e-12))) for x in grid]) * per_op
    cum = np.concatenate([[0.0], np.cumsum((r[1:] + r[:-1]) / 2 * np.diff(grid))])
    return grid, cum


def _classes(n: int, mix: OpMix, seed: int) -> np.ndarray:
    """Row class of each sample, by the mix's rows per op, on a low-discrepancy sequence."""
    weights = np.array([mix.per_op.get(c, 0.0) for c in _CLASSES])
    cum = np.cumsum(weights / weights.sum())
    u = np.modf(np.random.default_rng(seed).random() + np.arange(n) * _GOLDEN)[0]
    return np.minimum(np.searchsorted(cum, u, side="right"), len(_CLASSES) - 1)


def _entry_text(value: Any, doc: str) -> str:
    """An index entry's sort text: the field's value, then the document key (entries are unique)."""
    if isinstance(value, datetime):
        value = int(value.timestamp() * 1000)
    head = f"{value:020d}" if isinstance(value, int) else str(value)
    return f"{head}\x00{doc}"


def _index_fields(workload: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(record field, index name) of the indexed fields whose own range the forecast projects:
    ``created`` (``indexed_value``), or a document shape's indexed timestamps."""
    indexed = workload.get("indexed_value", "none")
    if indexed in INDEXED:
        return [("created", f"index:created ({indexed})")]
    from keyramp.keys import parse_shape

    return [
        (name, f"index:{name} (monotonic)") for name in parse_shape(workload.get("document") or {}).monotonic_indexed()
    ]


def regenerated_projection(
    *,
    profile: Mapping[str, Any],
    backend: str,
    strategy: str,
    mix: OpMix,
    rate: Callable[[float], float],
    duration_s: float,
    existing: int,
    samples: int,
    seed: int = 0,
    index_ranges: bool = True,
) -> Projection:
    """The cell's keys at ``rate`` (ops/s at time t) over ``duration_s``, after ``existing`` records."""
    from keyramp.keys import make_distribution
    from keyramp.profile import Settings
    from keyramp.run._workload import CellWorkload  # the runner's own key code, imported late

    wl = CellWorkload(backend=backend, strategy=strategy, settings=Settings.from_data(profile))
    grid, cum = _cumulative(rate, duration_s, mix.inserts_per_op)
    start_ms = int(getattr(wl.strategy, "start_ms", 1_700_000_000_000))

    def launch_clock(index: int) -> int:
        # Records before the launch were written 1 ms apart; launch inserts at their launch time.
        if index < existing or cum[-1] <= 0:
            return start_ms + (index - existing)
        return start_ms + int(1000.0 * float(np.interp(index - existing, cum, grid)))

    wl.strategy.clock = launch_clock  # time-based keys: a bucket holds what the launch writes in it
    wl.records.created = launch_clock
    t = (np.arange(samples, dtype=np.float64) + 0.5) * (duration_s / samples)
    cls = _classes(samples, mix, seed)
    inserted = np.floor(np.interp(t, grid, cum)).astype(np.int64)
    dist = make_distribution(wl.distribution, seed=seed + 1, params=wl.distribution_params)
    new = cls == 0
    idx = np.empty(samples, dtype=np.int64)
    idx[new] = existing + inserted[new]
    for i in np.flatnonzero(~new).tolist():
        idx[i] = dist.next_index(max(1, existing + int(inserted[i])))
    keys = [key_sort_text(wl.key_of(int(i))) for i in idx.tolist()]  # type: ignore[arg-type]
    pre = preload_indexes(existing)
    pre_keys = [key_sort_text(wl.key_of(int(i))) for i in pre.tolist()]  # type: ignore[arg-type]
    total_new = float(cum[-1])
    n_new = int(new.sum())
    ref_keys = pre_keys + [k for k, is_new in zip(keys, new.tolist(), strict=True) if is_new]
    weight = np.concatenate([np.full(len(pre_keys), existing / max(len(pre_keys), 1)),
                             np.full(n_new, total_new / max(n_new, 1))])
    since = np.concatenate([np.full(len(pre_keys), -math.inf), t[new]])
    reference = make_reference(ref_keys, weight=weight, since=since)
    kp = key_positions(keys, reference=reference, inserts=new, times=t)
    index: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for field_name, label in _index_fields(profile["workload"]) if index_ranges and n_new else ():
        entries = [
            _entry_text(wl.records.record(int(i))[field_name], keys[j]) for j, i in enumerate(idx.tolist()) if new[j]
        ]
        pre_entries = [
            _entry_text(wl.records.record(int(i))[field_name], k) for i, k in zip(pre.tolist(), pre_keys, strict=True)
        ]
        ref = make_reference(pre_entries + entries, weight=weight, since=since)
        index[label] = (t[new], key_positions(entries, reference=ref).pos)
    return Projection(t=t, pos=kp.pos, is_read=cls == 2, mix=mix, source="regenerated",
                      why="keys regenerated from the strategy and read distribution at the launch rate",
                      index=index, positions=kp, is_new=new)


def recorded_projection(*, pos: np.ndarray, ops: np.ndarray, mix: OpMix, duration_s: float, samples: int,
                        why: str) -> Projection:
    """The recorded positions replayed in order, stretched over the launch (keys that cannot be rebuilt)."""
    n = len(pos)
    t = (np.arange(samples, dtype=np.float64) + 0.5) * (duration_s / samples)
    pick = np.minimum((np.arange(samples) * n) // samples, n - 1)
    names = np.asarray(ops)
    read_names = [b"read", b"batch_read", b"scan"] if names.dtype.kind == "S" else ["read", "batch_read", "scan"]
    return Projection(t=t, pos=np.asarray(pos, dtype=np.float64)[pick], is_read=np.isin(names[pick], read_names),
                      mix=mix, source="recorded", why=why)
