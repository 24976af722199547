"""The keys the cell really wrote, projected to the launch: for Python workloads, store-allocated
ids, runs without a profile, and cells whose recording disagrees with the regenerated stream.

What the recording shows is kept and scaled to the launch rate:

* **append points and their rates**: the recorded inserts, sorted by key, fall into runs of
  rising time, one per place new keys land (``keyspace.append_runs``); each run's share of
  the inserts is that point's share of the launch's appends, and the points become
  ``Frontiers`` laid out like regenerated ones (``_pattern.Layout``): exact, not sampled;
* **read spread**: each recorded access to an existing record, at its place within the part of
  its point's region that existed when it was made, over the part that exists at its launch
  time (an update of what was just inserted stays at the append point);
* **positions over time** when the keys land spread (no append points): the recorded
  accesses replayed in order, stretched over the launch, one picked at random in each of
  ``samples`` slices (never an even stride).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from keyramp.backends import STORES
from keyramp.forecast._captured import IndexRange
from keyramp.forecast._keyload import MIN_HOT, KeyLoad
from keyramp.forecast._mix import OpMix
from keyramp.forecast._pattern import AppendPoints, Layout
from keyramp.forecast._project import Projection, RangeStream, _cumulative, jittered_times, shard_keys
from keyramp.keyspace import append_runs, as_inserts, key_positions, preload_indexes, reference_or_none
from keyramp.profile import Settings

__all__ = ["RecordedKeys", "recorded_key_load", "recorded_keys", "recorded_projection"]



@dataclass(frozen=True, kw_only=True)
class RecordedKeys:
    """A cell's sampled accesses placed in its key range (time-sorted)."""

    t: np.ndarray  # seconds since the measured phase began
    pos: np.ndarray  # share of the cell's range below each key (the range as at the end of the cell)
    lead: np.ndarray  # key order (equal: same key or undecided): what append runs are found on
    inserts: np.ndarray  # bool: the access created its key (a Python workload's insert_ops included)
    is_read: np.ndarray
    existing: int  # records when the cell began
    #: the unit each access writes or reads (document, entity, entity group, row): its key's sort text, or
    #: the parent's where the store limits an entity group
    unit: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype="S1"))
    writes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # bool: the access writes

    def __len__(self) -> int:
        return len(self.t)


def recorded_keys(samples: Any, *, settings: Settings | None, backend: str, strategy: str,
                  existing: int | None, keep: int, own_keys: bool = False) -> RecordedKeys | None:
    """The cell's sampled keys (``CellKeys``), at most ``keep`` of them (one at random per slice of time).
    Where the store limits an entity group, an ancestor path's unit is its parent. ``own_keys``: the keys are
    not the strategy's (a Python workload's own ids): placed among themselves, never in the strategy's range."""
    if samples is None or not len(samples):
        return None

    if len(samples) > keep:
        samples = samples.take(preload_indexes(len(samples), points=keep))
    samples = as_inserts(samples, settings.workload.insert_ops if settings is not None else ())
    ins = samples.inserts
    ref = None if own_keys else reference_or_none(settings=settings, backend=backend, strategy=strategy,
                                                  samples=samples, sample_rate=1.0, existing=existing)
    kp = key_positions(samples.key, reference=ref, inserts=ins, times=samples.t)
    return RecordedKeys(t=samples.t, pos=kp.pos, lead=kp.lead, inserts=ins, is_read=samples.reads,
                        existing=int(existing or 0), unit=_units(samples.key, STORES.get(backend).has("entity_groups")),
                        writes=samples.writes)


def _units(keys: np.ndarray, groups: bool) -> np.ndarray:
    """Each sampled key's unit: the key itself, or its parent (the part before the NUL of an ancestor path)."""
    keys = np.asarray(keys)
    if not groups or keys.dtype.kind != "S" or not len(keys):
        return keys
    return np.array([k.split(b"\x00", 1)[0] for k in keys.tolist()], dtype=keys.dtype)


def recorded_key_load(keys: RecordedKeys, mix: OpMix, *, shards: int = 1) -> KeyLoad:
    """The units the cell wrote often enough to be told from chance (``MIN_HOT`` sampled writes), each with
    its share of the row accesses: a sampled access is one operation, which makes ``rows_per_op`` rows."""
    written = keys.unit[keys.writes] if len(keys.writes) else keys.unit[:0]
    if not len(written):
        return KeyLoad(source="recorded", shards=shards)
    units, counts = np.unique(written, return_counts=True)
    hot = np.flatnonzero(counts >= MIN_HOT)
    hot = hot[np.argsort(-counts[hot], kind="stable")]
    shares = counts[hot] / len(keys) / max(mix.rows_per_op, 1e-12)
    names = tuple(u.decode("utf-8", "replace") for u in units[hot[:3]].tolist())
    return KeyLoad(fixed=shares.astype(np.float64), names=names, source="recorded", shards=shards)


def _points(keys: RecordedKeys) -> tuple[AppendPoints, np.ndarray, _Grown] | None:
    """The recorded append points (shares, direction), each one's upper bound in the recorded range, and how
    far each had grown at any moment of the recording."""
    ins = keys.inserts
    if int(ins.sum()) < 16:
        return None
    runs = append_runs(keys.lead[ins], keys.pos[ins], keys.t[ins])
    if runs is None:
        return None
    sizes = np.bincount(runs.run)
    bounds = np.zeros(len(sizes))
    np.maximum.at(bounds, runs.run, keys.pos[ins])
    points = AppendPoints(first_keys=np.zeros(len(sizes), dtype="S1"), share=sizes / sizes.sum(),
                          prepend=not runs.forward)
    return points, np.maximum.accumulate(bounds), _Grown(runs.run, keys.pos[ins], keys.t[ins])


class _Grown:
    """Each append point's highest key at a moment of the recording (its recorded inserts up to then; before
    its first, that first one's place): the top of the part of its region that existed then."""

    def __init__(self, run: np.ndarray, pos: np.ndarray, t: np.ndarray) -> None:
        order = np.lexsort((t, run))  # by point (points are key-ordered: a later one's keys lie above), then time
        self.run, self.t = run[order], t[order]
        self.top = np.maximum.accumulate(pos[order])
        self.first = np.searchsorted(self.run, np.arange(int(run.max()) + 1))
        self.span = float(t.max() - min(float(t.min()), 0.0)) + 1.0

    def __call__(self, k: np.ndarray, when: np.ndarray) -> np.ndarray:
        j = np.searchsorted(self.run * self.span + self.t, k * self.span + when, side="right") - 1
        first = self.first[np.minimum(k, len(self.first) - 1)]
        return np.where(j >= first, self.top[np.maximum(j, 0)], self.top[first])


#: A replayed launch instant draws from this many recorded accesses around its place in the recording:
#: a few hundred recorded accesses stretched over an hour would otherwise put a whole 10-s step on one or
#: two keys (a hot key that was never there); a moving hotspot's neighbours are its neighbours in the range.
_WINDOW = 32


def _pick(n: int, samples: int, seed: int) -> np.ndarray:
    """For each of ``samples`` equal slices of the launch, a recorded access at random among the ``_WINDOW``
    around the same place in the recording (in time order)."""
    rng = np.random.default_rng([seed, 0xACC5])
    center = (np.arange(samples) + rng.random(samples)) * (n / samples)
    half = min(_WINDOW, n) / 2
    at = np.clip(center, half, n - half) + (rng.random(samples) - 0.5) * 2 * half
    return np.clip(at.astype(np.int64), 0, n - 1)


def _spread(keys: RecordedKeys) -> bool:
    """The recorded keys land spread and stay spread: nearly every access a key of its own, placed with no
    drift in time (no append point, no moving hotspot): their load spreads over the range like hashed keys'."""
    if len(keys) < 2 * _WINDOW or len(np.unique(keys.unit)) < 0.9 * len(keys):
        return False
    corr = np.corrcoef(keys.t, keys.pos)[0, 1] if keys.t.std() > 0 and keys.pos.std() > 0 else 0.0
    return bool(abs(corr) < 0.3)


def recorded_projection(keys: RecordedKeys, *, mix: OpMix, rate: Callable[[float], float], duration_s: float,
                        samples: int, seed: int, why: str,
                        rates: Callable[[np.ndarray], np.ndarray] | None = None, key_shards: int = 1,
                        indexes: Sequence[IndexRange] = ()) -> Projection:
    """The recorded pattern at the launch: append points exact, the rest replayed over the launch.
    ``key_shards``: every key spread over that many adjacent keys (the launch planner's fix); ``indexes``:
    the index ranges the recorded writes append to (``_captured.index_ranges``)."""
    grid, cum = _cumulative(rate, duration_s, mix.inserts_per_op, rates)
    t = jittered_times(samples, duration_s, seed)
    found = _points(keys) if mix.inserts_per_op > 0 else None
    load = recorded_key_load(keys, mix, shards=key_shards)
    if found is None and _spread(keys):
        rows = max(mix.rows_per_op, 1e-12)
        docs = RangeStream(t=t[:0], pos=np.zeros(0), is_read=np.zeros(0, dtype=bool),
                           uniform_writes=mix.writes_per_op / rows, uniform_reads=mix.reads_per_op / rows)
        samples = 0
    elif found is None:
        pick = _pick(len(keys), samples, seed)
        docs = RangeStream(t=t, pos=shard_keys(keys.pos[pick], key_shards, len(keys), seed=seed),
                           is_read=keys.is_read[pick])
    else:
        points, upper, grown = found
        layout = Layout(points=points, existing=keys.existing, new=float(cum[-1]))
        others = np.flatnonzero(~keys.inserts)
        appends = mix.inserts_per_op / max(mix.rows_per_op, 1e-12)
        n_other = round(samples * (1.0 - appends))
        if len(others) and n_other:
            t = jittered_times(n_other, duration_s, seed)
            pick = others[_pick(len(others), n_other, seed)]
            x = keys.pos[pick]
            k = np.clip(np.searchsorted(upper, x, side="left"), 0, len(upper) - 1)
            lower = np.concatenate([[0.0], upper[:-1]])[k]
            # its place within the part of the region that existed when it was made (an update of what was
            # just inserted is at the top, where the launch's appends are): an append point's region grows
            top = upper[k] if points.prepend else np.maximum(grown(k, keys.t[pick]), x)
            within = np.clip((x - lower) / np.maximum(top - lower, 1e-12), 0.0, 1.0)
            exists = (keys.existing + np.interp(t, grid, cum)) / layout.total  # the part of a region that exists
            pos = layout.place(k, within * exists)
            docs = RangeStream(t=t, pos=pos, is_read=keys.is_read[pick],
                               frontiers=layout.frontiers(grid, cum / max(float(cum[-1]), 1e-12)), appends=appends)
        else:
            docs = RangeStream(t=np.zeros(0), pos=np.zeros(0), is_read=np.zeros(0, dtype=bool),
                               frontiers=layout.frontiers(grid, cum / max(float(cum[-1]), 1e-12)), appends=appends)
    progress = cum / max(float(cum[-1]), 1e-12)
    index = {r.name: r.stream(existing=keys.existing, new=float(cum[-1]), grid=grid, progress=progress)
             for r in indexes}
    return Projection(docs=docs, mix=mix, source="recorded", why=why, samples=samples, keys=load, index=index,
                      index_load={r.name: r.per_op for r in indexes})
