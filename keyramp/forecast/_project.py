"""A cell's key pattern driven at the launch traffic: the stream the tablet model reads.

Keys are a pure function of the insert index (``keys/``), and which record a read hits is
a seeded distribution over the records that exist. So the stream a launch would send is
*regenerated* from the cell's strategy and distribution at the launch rate: at launch
time t the next insert is index ``I0 + inserted(t)``, reads pick among ``I0 + inserted(t)``
records, and time-based keys read a clock set to the launch's time (a time bucket holds
what the launch writes in it, not what the emulator wrote). The op mix is the cell's
measured one.

Two parts, neither of which can alias with the key design:

* **append points** the design declares (``KeyStrategy.append_points``: sequential 1,
  ``sharded(64)`` 64, …) are found exactly from dense blocks of keys (``_pattern``) and
  handed to the model as ``Frontiers``: no insert of theirs is sampled;
* everything else (reads, spread inserts, moving designs) is sampled at jittered times:
  one random instant in each of ``samples`` equal slices of the launch, so insert indexes
  are random within their slice, never evenly spaced (evenly spaced indexes put
  ``sharded(10)`` in one shard at any rate that is a multiple of 60).

Monotonic indexed fields (``indexed_value``, a document shape's timestamps) write one
index entry per insert into a range ordered by the field's value: projected alongside
(serverless stores), with its own append points. Recorded keys (``_recorded``) replace
all this when the keys cannot be rebuilt or the recording says otherwise.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from keyramp.backends import STORES
from keyramp.core import key_sort_text
from keyramp.forecast._keyload import KeyLoad
from keyramp.forecast._mix import CLASSES, OpMix
from keyramp.forecast._pattern import MAX_POINTS, AppendPoints, Layout, find_append_points
from keyramp.keys import make_distribution, parse_shape
from keyramp.keyspace import Frontiers, KeyPositions, key_bytes, key_positions, make_reference, preload_indexes
from keyramp.profile import Settings, WorkloadSettings
from keyramp.workload import CellWorkload

__all__ = ["Projection", "RangeStream", "jittered_times", "regenerated_projection", "shard_keys"]

#: Indexed values whose index range the forecast projects (the others are spread or absent).
INDEXED = ("monotonic", "prefixed")
#: Uniform picks spread evenly over the range only when at least this many records exist at the start
#: (or inserts add more): fewer are single keys, sampled where they are.
SPREAD_RECORDS = 1000
_GOLDEN = 0.6180339887498949


@dataclass(frozen=True, kw_only=True)
class RangeStream:
    """One key range of the launch: what is known exactly, and sampled accesses for the rest.

    Shares are of the range's row accesses (the model weighs them by cost): ``appends`` land
    on the append points (``frontiers``) and ``existing_*`` evenly on the records that exist
    in their regions; ``uniform_*`` spread evenly over the range (hashed keys, uniform reads
    of them); the samples (times, positions) stand for what remains.
    """

    t: np.ndarray
    pos: np.ndarray
    is_read: np.ndarray
    frontiers: Frontiers | None = None
    appends: float = 0.0
    uniform_writes: float = 0.0
    uniform_reads: float = 0.0
    #: with append points: accesses spread evenly over the records that exist (uniform reads)
    existing_writes: float = 0.0
    existing_reads: float = 0.0

    @property
    def points(self) -> int | None:
        return len(self.frontiers) if self.frontiers is not None else None

    @property
    def sampled(self) -> bool:
        """Whether sampling noise can move what the model makes of this range."""
        return len(self.t) > 0


@dataclass(frozen=True, kw_only=True)
class Projection:
    """The launch's key pattern: the document (row) range and any index ranges, and where it came from."""

    docs: RangeStream
    mix: OpMix
    source: str  # "regenerated" | "recorded"
    why: str
    samples: int  # sampled accesses drawn (the stability check doubles it)
    #: index name -> the index entries inserts write (serverless stores)
    index: Mapping[str, RangeStream] = field(default_factory=dict)
    #: sampled mode only: the document positions with their range, and which samples insert (the check)
    positions: KeyPositions | None = None
    is_new: np.ndarray | None = None
    #: writes per unit (document, entity, entity group, row): what a per-key limit sees
    keys: KeyLoad = field(default_factory=KeyLoad)
    #: index name -> its entries per operation, where not one per insert (a recording's: what writes made)
    index_load: Mapping[str, float] = field(default_factory=dict)

    @property
    def t(self) -> np.ndarray:
        return self.docs.t

    @property
    def pos(self) -> np.ndarray:
        return self.docs.pos


def _cumulative(rate: Callable[[float], float], duration_s: float, per_op: float,
                rates: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rows inserted by time t on a grid (trapezoids of the rate; steps land on grid points).
    ``rates``: ``rate`` for the whole grid at once (``Launch.rates``)."""
    n = int(min(20_000, max(200, duration_s)))
    grid = np.linspace(0.0, duration_s, n + 1)
    at = np.minimum(grid, duration_s * (1 - 1e-12))
    r = (np.asarray(rates(at)) if rates is not None else np.array([rate(x) for x in at.tolist()])) * per_op
    cum = np.concatenate([[0.0], np.cumsum((r[1:] + r[:-1]) / 2 * np.diff(grid))])
    return grid, cum


def jittered_times(n: int, duration_s: float, seed: int) -> np.ndarray:
    """One random instant in each of ``n`` equal slices of the launch (ascending): no fixed spacing."""
    u = np.random.default_rng([seed, 0x5EED]).random(n)
    return (np.arange(n, dtype=np.float64) + u) * (duration_s / n)


def _classes(n: int, mix: OpMix, seed: int) -> np.ndarray:
    """Row class of each sample, by the mix's rows per op, on a low-discrepancy sequence."""
    weights = np.array([mix.per_op.get(c, 0.0) for c in CLASSES])
    cum = np.cumsum(weights / weights.sum())
    u = np.modf(np.random.default_rng(seed).random() + np.arange(n) * _GOLDEN)[0]
    return np.minimum(np.searchsorted(cum, u, side="right"), len(CLASSES) - 1)


def _entry_text(value: Any, doc: str) -> str:
    """An index entry's sort text: the field's value, then the document key (entries are unique)."""
    if isinstance(value, datetime):
        value = int(value.timestamp() * 1000)
    head = f"{value:020d}" if isinstance(value, int) else str(value)
    return f"{head}\x00{doc}"


def _index_fields(workload: WorkloadSettings, records: Any) -> list[tuple[str, str, int]]:
    """(record field, index name, declared append points) of the indexed fields whose own range the
    forecast projects: ``created`` (``indexed_value``), or a document shape's indexed timestamps."""
    indexed = workload.indexed_value
    if indexed in INDEXED:
        points = int(getattr(records, "users", 1000)) if indexed == "prefixed" else 1
        return [("created", f"index:created ({indexed})", points)]

    return [(name, f"index:{name} (monotonic)", 1)
            for name in parse_shape(workload.document or {}).monotonic_indexed()]


@dataclass(frozen=True, kw_only=True)
class _Launch:
    """What the projection needs of the launch: inserts by time, and the existing records."""

    grid: np.ndarray
    cum: np.ndarray
    existing: int
    duration_s: float

    @property
    def new(self) -> float:
        return float(self.cum[-1])

    def inserted(self, t: np.ndarray) -> np.ndarray:
        return np.floor(np.interp(t, self.grid, self.cum)).astype(np.int64)

    def progress(self) -> np.ndarray:
        return self.cum / max(self.new, 1e-12)


class _Cell:
    """The cell's key code on the launch's clock, its keys kept by insert index, and sample draws."""

    def __init__(self, *, settings: Settings, backend: str, strategy: str, launch: _Launch,
                 cache: dict[int, str] | None) -> None:
        self.wl = wl = CellWorkload(backend=backend, strategy=strategy, settings=settings)
        self.launch = launch
        start_ms = int(getattr(wl.strategy, "start_ms", 1_700_000_000_000))
        existing, grid, cum = launch.existing, launch.grid.tolist(), launch.cum.tolist()
        last = len(cum) - 1

        def launch_clock(index: int) -> int:
            # Records before the launch were written 1 ms apart; launch inserts at their launch time
            # (the inverse of inserts-by-time, interpolated: a key is made per call, so no numpy here).
            n = index - existing
            if n < 0 or cum[-1] <= 0:
                return start_ms + n
            k = min(bisect.bisect_right(cum, n), last)
            lo, hi = cum[k - 1], cum[k]
            frac = min((n - lo) / (hi - lo), 1.0) if hi > lo else 0.0
            return start_ms + int(1000.0 * (grid[k - 1] + frac * (grid[k] - grid[k - 1])))

        wl.strategy.clock = launch_clock  # time-based keys: a bucket holds what the launch writes in it
        wl.records.created = launch_clock
        self.keys: dict[int, str] = {} if cache is None else cache

    def key_text(self, i: int) -> str:
        text = self.keys.get(i)
        if text is None:
            text = self.keys[i] = key_sort_text(self.wl.key_of(i))  # type: ignore[arg-type]
        return text

    def draw(self, samples: int, seeds: range, mix: OpMix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Times (jittered), row classes and insert indexes of ``samples`` accesses per seed, merged in time."""
        parts = []
        for seed in seeds:
            t = jittered_times(samples, self.launch.duration_s, seed)
            cls = _classes(samples, mix, seed)
            dist = make_distribution(self.wl.distribution, seed=seed + 1, params=self.wl.distribution_params)
            inserted = self.launch.inserted(t)
            idx = np.where(cls == 0, self.launch.existing + inserted, 0)
            for i in np.flatnonzero(cls != 0).tolist():
                idx[i] = dist.next_index(max(1, self.launch.existing + int(inserted[i])))
            parts.append((t, cls, idx))
        t = np.concatenate([p[0] for p in parts])
        order = np.argsort(t, kind="stable")
        return t[order], np.concatenate([p[1] for p in parts])[order], np.concatenate([p[2] for p in parts])[order]


def regenerated_projection(
    *,
    settings: Settings,
    backend: str,
    strategy: str,
    mix: OpMix,
    rate: Callable[[float], float],
    duration_s: float,
    existing: int,
    samples: int,
    seed: int = 0,
    index_ranges: bool = True,
    exact: bool = True,
    seeds: int = 1,
    cache: dict[int, str] | None = None,
    rates: Callable[[np.ndarray], np.ndarray] | None = None,
    key_shards: int = 1,
) -> Projection:
    """The cell's keys at ``rate`` (ops/s at time t) over ``duration_s``, after ``existing`` records.

    ``exact``: what the design says exactly (append points, hashed keys, uniform reads) as
    such; False samples every access (the check at the cell's own rate, which the measured
    metrics come from). ``seeds``: draws of ``samples`` each (seeds ``seed``, ``seed + 1`` …),
    merged: twice the samples for the stability check keep the first draw. ``cache``: insert
    index -> key text, shared by projections of the same launch traffic (keys follow its clock).
    ``rates``: ``rate`` at many times at once (``Launch.rates``). ``key_shards``: every key spread over
    that many adjacent keys (a distributed counter: the launch planner's fix for a key over its limit).
    """
    grid, cum = _cumulative(rate, duration_s, mix.inserts_per_op, rates)
    launch = _Launch(grid=grid, cum=cum, existing=existing, duration_s=duration_s)
    cell = _Cell(settings=settings, backend=backend, strategy=strategy, launch=launch, cache=cache)
    wl = cell.wl
    declared = 1 if wl.group_size else wl.strategy.append_points()
    points = (find_append_points(cell.key_text, declared=declared, total=existing + math.ceil(launch.new))
              if exact and mix.inserts_per_op > 0 else None)
    # Hashed keys (no append point, or more than are treated exactly): new keys land evenly.
    many = existing >= SPREAD_RECORDS or mix.inserts_per_op > 0
    spread = (exact and points is None and (declared is None or declared > MAX_POINTS) and not wl.group_size
              and wl.strategy.traits.spreads and many)
    # Uniform picks of the records spread evenly only over many records: a few (a counter: one) are
    # keys of their own, which never split, so they are sampled where they are.
    uniform_reads = wl.distribution == "uniform" and many
    # Nothing to sample when the design says everything exactly: no draw, no key.
    none = (points is not None or spread) and uniform_reads
    t, cls, idx = (np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)) if none else \
        cell.draw(samples, range(seed, seed + seeds), mix)
    new = cls == 0
    positions = is_new = None
    if points is not None:
        docs = _frontier_range(points, launch, t=t, idx=idx, new=new, cls=cls, key_text=cell.key_text, mix=mix,
                               uniform_reads=uniform_reads)
    elif spread:
        docs = _spread_range(launch, t=t, idx=idx, new=new, cls=cls, key_text=cell.key_text, mix=mix,
                             uniform_reads=uniform_reads)
    else:
        docs, positions = _sampled_range(launch, t=t, idx=idx, new=new, cls=cls, key_text=cell.key_text)
        docs = replace(docs, pos=shard_keys(docs.pos, key_shards, positions.distinct, seed=seed))
        is_new = new
    index: dict[str, RangeStream] = {}
    for field_name, label, declared_index in (_index_fields(settings.workload, wl.records)
                                              if index_ranges and mix.inserts_per_op > 0 else []):
        def entry(i: int, f: str = field_name) -> str:
            return _entry_text(wl.records.record(i)[f], cell.key_text(i))

        index[label] = _index_range(entry, declared_index, launch,
                                    draw=lambda: cell.draw(samples, range(seed, seed + seeds), mix))
    return Projection(docs=docs, mix=mix, source="regenerated", samples=0 if none else samples * seeds, index=index,
                      positions=positions, is_new=is_new,
                      keys=replace(_design_keys(wl, mix, launch), shards=key_shards),
                      why="keys regenerated from the strategy and read distribution at the launch rate")


def _design_keys(wl: CellWorkload, mix: OpMix, launch: _Launch) -> KeyLoad:
    """Writes per unit as the design makes them: writes to existing records picked by the read
    distribution over the records that exist, inserts filling entity groups in turn (where the store
    limits a group)."""
    rows = max(mix.rows_per_op, 1e-12)
    group = wl.group_size if wl.group_size and STORES.get(wl.backend_name).has("entity_groups") else 1
    return KeyLoad(ranked=make_distribution(wl.distribution, params=wl.distribution_params),
                   ranked_share=mix.per_op.get(("write", "existing"), 0.0) / rows, group=max(1, group),
                   insert_share=mix.inserts_per_op / rows, grid=launch.grid, records=launch.existing + launch.cum)


def shard_keys(pos: np.ndarray, shards: int, distinct: int, *, seed: int) -> np.ndarray:
    """Positions of accesses when every key is spread over ``shards`` adjacent keys: each access moves to
    one of them at random, inside its key's slot of the range (so a range holding one hot key can split
    between its shards)."""
    if shards <= 1 or not len(pos):
        return pos
    which = np.random.default_rng([seed, 0x5AD]).integers(0, shards, len(pos))
    gap = 0.5 / max(distinct, 1) / shards
    return np.minimum(pos, np.nextafter(1.0, 0.0) - gap * shards) + which * gap


def _frontier_range(points: AppendPoints, launch: _Launch, *, t: np.ndarray, idx: np.ndarray, new: np.ndarray,
                    cls: np.ndarray, key_text: Callable[[int], str], mix: OpMix, uniform_reads: bool) -> RangeStream:
    """The append points as frontiers; uniform accesses to existing records spread over what exists,
    skewed ones sampled and placed by the layout."""
    layout = Layout(points=points, existing=launch.existing, new=launch.new)
    frontiers = layout.frontiers(launch.grid, launch.progress())
    rows = max(mix.rows_per_op, 1e-12)
    appends = mix.inserts_per_op / rows
    if uniform_reads:
        return RangeStream(t=t[:0], pos=np.zeros(0), is_read=np.zeros(0, dtype=bool), frontiers=frontiers,
                           appends=appends, existing_writes=mix.per_op.get(("write", "existing"), 0.0) / rows,
                           existing_reads=mix.reads_per_op / rows)
    keep = ~new
    keys = key_bytes([key_text(int(i)) for i in idx[keep].tolist()])
    pos = layout.positions(keys, idx[keep]) if len(keys) else np.zeros(0)
    return RangeStream(t=t[keep], pos=pos, is_read=cls[keep] == 2, frontiers=frontiers, appends=appends)


def _reference(launch: _Launch, key_text: Callable[[int], str], new_keys: list[str], new_t: np.ndarray) -> Any:
    """The range at the end of the launch: a sample of the existing records and the sampled inserts."""
    pre = preload_indexes(launch.existing)
    pre_keys = [key_text(int(i)) for i in pre.tolist()]
    weight = np.concatenate([np.full(len(pre_keys), launch.existing / max(len(pre_keys), 1)),
                             np.full(len(new_keys), launch.new / max(len(new_keys), 1))])
    since = np.concatenate([np.full(len(pre_keys), -math.inf), new_t])
    return make_reference(pre_keys + new_keys, weight=weight, since=since)


def _sampled_range(launch: _Launch, *, t: np.ndarray, idx: np.ndarray, new: np.ndarray, cls: np.ndarray,
                   key_text: Callable[[int], str]) -> tuple[RangeStream, KeyPositions]:
    """Every access sampled, placed against the range at the end of the launch (preload + sampled inserts)."""
    keys = [key_text(int(i)) for i in idx.tolist()]
    ref = _reference(launch, key_text, [k for k, is_new in zip(keys, new.tolist(), strict=True) if is_new], t[new])
    kp = key_positions(keys, reference=ref, inserts=new, times=t)
    return RangeStream(t=t, pos=kp.pos, is_read=cls == 2), kp


#: Inserts a spread design's reference takes when reads are sampled against it.
_SPREAD_REFERENCE = 4096


def _spread_range(launch: _Launch, *, t: np.ndarray, idx: np.ndarray, new: np.ndarray, cls: np.ndarray,
                  key_text: Callable[[int], str], mix: OpMix, uniform_reads: bool) -> RangeStream:
    """Hashed keys: inserts land evenly over the range at every moment, and so do uniform reads of
    them. Only skewed reads (zipfian, latest, hotspot) are sampled, against a reference."""
    rows = max(mix.rows_per_op, 1e-12)
    writes = mix.inserts_per_op + mix.per_op.get(("write", "existing"), 0.0)
    if uniform_reads:
        return RangeStream(t=t[:0], pos=np.zeros(0), is_read=np.zeros(0, dtype=bool),
                           uniform_writes=writes / rows, uniform_reads=mix.reads_per_op / rows)
    keep = ~new & (cls == 2)  # reads sampled; inserts and writes to existing rows spread evenly
    ins = np.flatnonzero(new)
    ins = ins[preload_indexes(len(ins), points=_SPREAD_REFERENCE)] if len(ins) else ins
    ref = _reference(launch, key_text, [key_text(int(i)) for i in idx[ins].tolist()], t[ins])
    reads = [key_text(int(i)) for i in idx[keep].tolist()]
    pos = key_positions(reads, reference=ref).pos if reads else np.zeros(0)
    return RangeStream(t=t[keep], pos=pos, is_read=np.ones(int(keep.sum()), dtype=bool),
                       uniform_writes=writes / rows)


def _index_range(entry_of: Callable[[int], str], declared: int, launch: _Launch, *,
                 draw: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]]) -> RangeStream:
    """An indexed field's own range: only inserts write to it, one entry each."""
    total = launch.existing + math.ceil(launch.new)
    points = find_append_points(entry_of, declared=declared, total=total)
    if points is not None:
        layout = Layout(points=points, existing=launch.existing, new=launch.new)
        return RangeStream(t=np.zeros(0), pos=np.zeros(0), is_read=np.zeros(0, dtype=bool),
                           frontiers=layout.frontiers(launch.grid, launch.progress()), appends=1.0)
    t, cls, idx = draw()
    t, idx = t[cls == 0], idx[cls == 0]
    entries = [entry_of(int(i)) for i in idx.tolist()]
    pre = preload_indexes(launch.existing)
    pre_entries = [entry_of(int(i)) for i in pre.tolist()]
    weight = np.concatenate([np.full(len(pre), launch.existing / max(len(pre), 1)),
                             np.full(len(entries), launch.new / max(len(entries), 1))])
    since = np.concatenate([np.full(len(pre), -math.inf), t])
    ref = make_reference(pre_entries + entries, weight=weight, since=since)
    return RangeStream(t=t, pos=key_positions(entries, reference=ref).pos, is_read=np.zeros(len(t), dtype=bool))
