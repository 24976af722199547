"""Append points of a key design, found exactly: where a launch's new keys land.

A key design appends at a known number of places: sequential ids at 1, ``sharded(64)`` at
64, ``device#timestamp`` at 1,000 (``KeyStrategy.append_points``). Sampling such a stream
sparsely is what made the forecast wrong: 6 samples a launch second spread over 64 points
are a few samples per point per step, and evenly spaced insert indexes alias with the
design (``index % shards`` hits a few shards). So the points are not sampled: two dense
blocks of consecutive insert indexes (the first keys ever written and the last of the
launch) are generated and sorted; sorted by key, each point's inserts come in index
order, so the index drops exactly where one point's region ends and the next begins.

The blocks give each point's region (its first key), its share of the inserts, and the
direction (append or prepend). The design is *stationary* when both blocks show the same
points and merging them adds none; a design whose points move (time buckets) is not, and
is sampled instead. ``Layout`` then places any record of the range analytically, and the
points' newest keys at any time (``Frontiers``), with no sampling noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from keyramp.keyspace import Frontiers, key_bytes

__all__ = ["MAX_POINTS", "AppendPoints", "Layout", "find_append_points"]

#: Append points treated exactly (more: sampled, each then carries under 1/4,096 of the appends).
MAX_POINTS = 8192
#: Inserts per point in each block: round-robin points get exact shares, random picks ±18 %.
_PER_POINT = 4
_MIN_BLOCK = 512


@dataclass(frozen=True, kw_only=True)
class AppendPoints:
    """A range's new keys land at ``len(share)`` stationary places, in key order."""

    first_keys: np.ndarray  # S array: the lowest key of each point's region (to find a key's point)
    share: np.ndarray  # share of the inserts each point takes (sums to 1)
    prepend: bool  # new keys land below the earlier ones (reverse timestamps)

    def __len__(self) -> int:
        return len(self.share)

    def point_of(self, keys: np.ndarray) -> np.ndarray:
        """The point whose region holds each key (sort texts as an ``S`` array)."""
        return np.clip(np.searchsorted(self.first_keys, keys, side="right") - 1, 0, len(self.share) - 1)


def _runs(keys: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, bool]:
    """Sorted by key: where each run of one point starts (positions in key order), and the direction."""
    order = np.argsort(keys, kind="stable")
    d = np.diff(index[order])
    forward = float(d[d > 0].sum()) >= float(-d[d < 0].sum())
    breaks = np.flatnonzero(d < 0 if forward else d > 0) + 1
    return np.concatenate([[0], breaks]), forward


def find_append_points(entry_of: Callable[[int], str], *, declared: int | None, total: int) -> AppendPoints | None:
    """The append points of a range whose ``total`` entries are ``entry_of(0 .. total-1)``, or None.

    ``declared``: how many the design says (``KeyStrategy.append_points``); None, 0 or more than
    ``MAX_POINTS``: not treated exactly. None also when the blocks disagree with the declaration
    or with each other (the points move: time buckets).
    """
    if declared is None or not 1 <= declared <= MAX_POINTS or total < 2:
        return None
    # A whole number of rounds of the declared points: round-robin points get exactly equal shares.
    m = int(min(total, declared * math.ceil(max(_MIN_BLOCK, _PER_POINT * declared) / declared)))
    first = np.arange(m)
    last = np.arange(max(m, total - m), total)
    index = np.concatenate([first, last])
    keys = key_bytes([entry_of(int(i)) for i in index.tolist()])
    _, forward = _runs(keys[:m], first)
    both, forward_both = _runs(keys, index)
    order = np.argsort(keys, kind="stable")
    sizes = np.diff(np.concatenate([both, [len(keys)]]))
    if len(last) >= 2:
        # Stationary: the launch's last keys land in the same points' regions as the first ones (a
        # point's run holds keys of both blocks); moving points (a new time bucket) hold one block each.
        run_of = np.repeat(np.arange(len(both)), sizes)
        late = np.bincount(run_of, weights=(order >= m).astype(np.float64), minlength=len(both))
        mixed = (late > 0) & (late < sizes)
        if _runs(keys[m:], last)[1] != forward or forward_both != forward or sizes[mixed].sum() < 0.5 * len(keys):
            return None
    if len(both) > declared:  # more places than the design says: not the declared design
        return None
    return AppendPoints(first_keys=keys[order][both], share=sizes / sizes.sum(), prepend=not forward)


@dataclass(frozen=True, kw_only=True)
class Layout:
    """The range at the end of the launch: the points' regions in key order, each holding its share
    of the ``existing`` records and of the ``new`` ones (index order within a region)."""

    points: AppendPoints
    existing: int
    new: float

    @property
    def total(self) -> float:
        return max(float(self.existing) + self.new, 1.0)

    @property
    def _offset(self) -> np.ndarray:
        return np.cumsum(self.points.share) - self.points.share

    def positions(self, keys: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Positions (share of the final range below) of records by key and insert index."""
        frac = np.clip(np.asarray(index, dtype=np.float64) / self.total, 0.0, 1.0)
        return self.place(self.points.point_of(keys), frac)

    def place(self, point: np.ndarray, frac: np.ndarray) -> np.ndarray:
        """Positions of records of ``point`` that are ``frac`` of the way through the final range's
        insert order (a point's records sort in insert order, or reversed for prepends)."""
        within = 1.0 - frac - 1.0 / self.total if self.points.prepend else frac
        share = self.points.share[point]
        return np.clip(self._offset[point] + share * np.clip(within, 0.0, 1.0), 0.0, 1.0 - 1e-12)

    def frontiers(self, grid: np.ndarray, progress: np.ndarray) -> Frontiers:
        """Each point's newest key over the launch (``progress``: share of the new records by ``grid`` time)."""
        share, off = self.points.share, self._offset
        before, after = self.existing / self.total, 1.0
        if self.points.prepend:
            start, end = off + share * (1.0 - before), off
        else:
            start, end = off + share * before, off + share * after
        return Frontiers(start=start, end=np.minimum(end, 1.0 - 1e-12), share=share, grid=grid, progress=progress,
                         load_share=1.0, lo=off, hi=off + share)
