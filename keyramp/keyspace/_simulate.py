"""The tablet simulator's engine: serving, retries, node placement and splits.

Tablets are contiguous ranges of positions in ``[0, 1)``, held as their inner bounds
(``cuts``, ascending): the tablet of a position is one ``searchsorted``. What loads them
each step comes from ``_components``.

Between splits the tablets do not change, so the engine computes a block of steps at a
time with whole-array operations and stops the block at the first step that splits:
the cost grows with the number of splits, not with the number of steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_BLOCK", "Block", "TabletParams", "Tablets", "block_size", "p99_wait_ms", "rho_rows"]

_LOG_P = math.log(0.01)  # the p99's tail probability
_NEWTON_PASSES = 60
_RHO_BINS = 100
MAX_BLOCK = 64  # most steps computed together while no tablet splits
_USEFUL = 0.99  # a split whose largest piece keeps this share of the tablet's load is not made
_RELOOK = 4  # split delays before a tablet that could not be split usefully is looked at again


@dataclass(frozen=True, kw_only=True)
class TabletParams:
    """What one simulation runs with (``_tablets.params_for``: the middle of a store's ranges)."""

    capacity: float  # ops/s one tablet serves before throttling
    split_threshold: float  # ops/s that, sustained for split_delay_s, triggers a split
    split_delay_s: float  # schedule seconds
    step_s: float = 10.0  # simulation step, schedule seconds (raised for sparse samples)
    window_s: float = 60.0  # long window for the load shape, schedule seconds
    min_window_samples: int = 20_000
    total_capacity: float | None = None  # cluster cap (Bigtable nodes x per-node ops/s)
    max_tablets: int = 1 << 16
    split_fanout: int = 2  # pieces a split tablet becomes (at quantiles of its recent load)
    retry: float = 0.0  # share of throttled requests clients send again the next step
    placement_delay_s: float = 0.0  # pieces of a split stay on their parent's node this long (clusters)


@dataclass
class Block:
    """What a block of steps produced (rows = steps), before any split at its last row."""

    load: np.ndarray  # requests/s per tablet, retries included
    served: np.ndarray
    rho_floor: np.ndarray  # the cluster's utilisation (the nodes queue too)


class Tablets:
    """The tablets of one key range and what they carry between steps."""

    def __init__(self, params: TabletParams) -> None:
        self.p = params
        self.cuts = np.zeros(0)
        self.over_since = np.array([math.nan])
        self.retry = np.zeros(1)  # ops/s of throttled requests sent again next step
        self.pin = np.full(1, -1, dtype=np.int64)  # node group a fresh tablet still shares (-1: placed)
        self.pin_until = np.zeros(1)
        self._groups = 0
        self.ready = np.zeros(0, dtype=np.int64)
        self.added = np.zeros(0)  # the bounds the last split added

    def __len__(self) -> int:
        return len(self.cuts) + 1

    def serve(self, demand: np.ndarray, t_end: np.ndarray) -> Block:
        """Serve rows of demand: a tablet up to its capacity, tablets still on their parent's node
        together up to one node, the cluster up to its nodes; throttled requests come back
        (``retry``) the next step."""
        p = self.p
        pins = p.total_capacity is not None and bool((self.pin >= 0).any())
        if p.retry <= 0 and not pins:
            load = demand + self.retry[None, :]
            served = np.minimum(load, p.capacity)
            self._cluster(served)
        elif not pins and p.total_capacity is None:  # retries, tablet by tablet: three operations a step
            load, served = np.empty_like(demand), np.empty_like(demand)
            retry, cap, again = self.retry, p.capacity, p.retry
            for r in range(len(demand)):
                row = np.add(demand[r], retry, out=load[r])
                np.minimum(row, cap, out=served[r])
                retry = again * (row - served[r])
        else:
            load, served = np.empty_like(demand), np.empty_like(demand)
            retry = self.retry
            pinned = np.flatnonzero(self.pin >= 0)
            groups, inverse = np.unique(self.pin[pinned], return_inverse=True)
            until = self.pin_until[pinned]
            for r in range(len(demand)):
                load[r] = demand[r] + retry
                row = np.minimum(load[r], p.capacity)
                waiting = until > t_end[r]  # pieces of a split still on their parent's node
                if waiting.any():
                    idx, grp = pinned[waiting], inverse[waiting]
                    per_node = np.bincount(grp, weights=row[idx], minlength=len(groups))
                    row[idx] *= np.minimum(1.0, p.capacity / np.maximum(per_node, 1e-300))[grp]
                served[r] = row
                self._cluster(served[r : r + 1])
                retry = p.retry * (load[r] - served[r])
        floor = (np.minimum(load.sum(axis=1) / p.total_capacity, 0.99) if p.total_capacity is not None
                 else np.zeros(len(load)))
        return Block(load=load, served=served, rho_floor=floor)

    def _cluster(self, served: np.ndarray) -> None:
        if self.p.total_capacity is not None:
            total = served.sum(axis=1)
            served *= np.minimum(1.0, self.p.total_capacity / np.maximum(total, 1e-300))[:, None]

    def carry(self, block: Block, row: int, t_end: float) -> None:
        """State after ``row`` of a block: the throttled requests that come back, placed tablets."""
        self.retry = self.p.retry * (block.load[row] - block.served[row])
        self.pin[self.pin_until <= t_end] = -1

    def first_split(self, load: np.ndarray, t_start: np.ndarray, t_end: np.ndarray) -> int | None:
        """The first row at which a tablet's load has stayed above the trigger for the delay (its
        tablets in ``ready``), or None; ``over_since`` is carried to the end of the rows kept."""
        p = self.p
        over = load > p.split_threshold
        rows = np.arange(len(load))[:, None]
        last_under = np.maximum.accumulate(np.where(over, -1, rows), axis=0)
        carried = np.where(np.isnan(self.over_since), t_start[0], self.over_since)
        since = np.where(last_under >= 0, t_start[np.minimum(last_under + 1, len(load) - 1)], carried[None, :])
        since = np.where(over, since, math.nan)
        due = over & (t_end[:, None] - since >= p.split_delay_s - 1e-9)
        hit = np.flatnonzero(due.any(axis=1)) if len(self) < p.max_tablets else np.zeros(0, dtype=np.int64)
        last = int(hit[0]) if len(hit) else len(load) - 1
        self.over_since = since[last]
        self.ready = np.flatnonzero(due[last]) if len(hit) else np.zeros(0, dtype=np.int64)
        return int(hit[0]) if len(hit) else None

    def split(self, atoms: np.ndarray, mass: np.ndarray, t_end: float, *, reach: np.ndarray | None = None) -> bool:
        """Split the ``ready`` tablets at quantiles of the recent load (``atoms``: positions, ``mass``:
        the load each stands for); whether a bound was added. A single key cannot split.

        ``reach``: how far each atom's keys will extend (an append point's future keys, up to its
        region's end, do not exist yet: a split key is an existing key, so it falls past them).
        """
        p = self.p
        fanout = max(2, int(p.split_fanout))
        ready = self.ready[: max(0, (p.max_tablets - len(self)) // (fanout - 1))]
        if not len(atoms) or not len(ready):
            return False
        order = np.argsort(atoms, kind="stable")
        x, cum = atoms[order], np.concatenate([[0.0], np.cumsum(mass[order])])
        r = x if reach is None else reach[order]
        lo_zone, hi_zone = np.minimum(x, r), np.maximum(x, r)
        bounds = np.concatenate([[0.0], self.cuts, [1.0]])
        ed = np.searchsorted(x, bounds, side="left")
        a, b = ed[ready], ed[ready + 1]
        live = b > a
        a, b, tab = a[live], b[live], ready[live]
        target = cum[a][:, None] + (cum[b] - cum[a])[:, None] * (np.arange(1, fanout)[None, :] / fanout)
        i = np.clip(np.searchsorted(cum, target, side="left") - 1, a[:, None], (b - 1)[:, None])
        nxt = np.minimum(i + 1, (b - 1)[:, None])
        # Between two atoms' keys (past the first one's reach), or at a lone atom's start.
        gap = hi_zone[i] < lo_zone[nxt]
        cut = np.where(nxt > i, np.where(gap, (hi_zone[i] + lo_zone[nxt]) / 2.0, x[nxt]), x[i])
        lo, hi = bounds[tab][:, None], bounds[tab + 1][:, None]
        valid = (cut > lo) & (cut < hi)
        # A cut that leaves (nearly) all the load on one piece changes nothing the model can see (an
        # append point alone: its new keys stay on the last piece): not made, tried again after a delay.
        edges = np.sort(np.concatenate([lo, np.where(valid, cut, lo), hi], axis=1), axis=1)
        mass = np.diff(cum[np.searchsorted(x, edges, side="left")], axis=1)
        total = mass.sum(axis=1)
        valid &= (mass.max(axis=1) < _USEFUL * total)[:, None] & (total > 0)[:, None]
        # A tablet that cannot be cut here (one key, a lone append point) looks again later, on a clock
        # shared by all such tablets: their next looks come together, not one step after another.
        again = np.zeros(len(self), dtype=bool)
        again[ready] = True
        again[tab[valid.any(axis=1)]] = False
        period = _RELOOK * max(p.split_delay_s, 1e-9)
        self.over_since[again] = math.ceil(t_end / period) * period
        new = np.unique(cut[valid])
        self.added = new
        if not len(new):
            return False
        self._apply(new, t_end, x, cum)
        return True

    def _apply(self, new: np.ndarray, t_end: float, x: np.ndarray, cum: np.ndarray) -> None:
        n_tab = len(self)
        cuts = np.sort(np.concatenate([self.cuts, new]))
        parent = np.searchsorted(self.cuts, np.concatenate([[-1.0], cuts]), side="right")
        split = np.zeros(n_tab, dtype=bool)
        split[np.searchsorted(self.cuts, new, side="right")] = True
        self.over_since = np.where(split[parent], math.nan, self.over_since[parent])
        # Requests sent again go back to their keys: each piece takes its share of the recent load.
        edge = cum[np.searchsorted(x, np.concatenate([[0.0], cuts, [1.0]]), side="left")]
        piece = np.diff(edge)
        whole = np.bincount(parent, weights=piece, minlength=n_tab)
        pieces = np.bincount(parent, minlength=n_tab)
        share = np.where(whole[parent] > 0, piece / np.where(whole[parent] > 0, whole[parent], 1.0),
                         1.0 / pieces[parent])
        self.retry = self.retry[parent] * share
        if self.p.total_capacity is not None and self.p.placement_delay_s > 0:
            # The pieces of a split stay on their parent's node until placed elsewhere.
            group = self.pin.copy()
            fresh = split & (group < 0)
            group[fresh] = self._groups + np.arange(int(fresh.sum()))
            self._groups += int(fresh.sum())
            self.pin = group[parent]
            self.pin_until = np.where(split[parent], t_end + self.p.placement_delay_s, self.pin_until[parent])
        else:
            self.pin, self.pin_until = np.full(len(cuts) + 1, -1, dtype=np.int64), np.zeros(len(cuts) + 1)
        self.cuts = cuts


def block_size(params: TabletParams, step: float) -> int:
    """Steps per block: no tablet can split sooner than the split delay after a split."""
    return int(min(MAX_BLOCK, max(8, math.ceil(params.split_delay_s / max(step, 1e-9)) + 1)))


def rho_rows(served: np.ndarray, cap: float, rho_floor: np.ndarray) -> np.ndarray:
    """Share of each step's served load per utilisation bin of 0.01 (rounded up), for the p99."""
    total = served.sum(axis=1)
    rho = np.maximum(np.minimum(served / cap, 0.99), rho_floor[:, None])
    bins = np.minimum(np.ceil(rho * 100.0).astype(np.int64), _RHO_BINS - 1)
    rows = np.arange(len(served))[:, None]
    w = served / np.maximum(total, 1e-300)[:, None]
    return np.bincount((rows * _RHO_BINS + bins).ravel(), weights=w.ravel(),
                       minlength=len(served) * _RHO_BINS).reshape(len(served), _RHO_BINS)


def p99_wait_ms(hist: np.ndarray, cap: float, rho_floor: np.ndarray) -> np.ndarray:
    """99th percentile of the M/M/1 queueing wait per step, from ``rho_rows``.

    A tablet at utilisation rho (service rate ``cap``) has P(W > x) = rho·exp(-cap(1-rho)x); a
    step's tail is the load-weighted sum. Its log is convex and falls in x, so Newton's method
    from x = 0 climbs to the 1 % point monotonically: all steps at once, a few passes.
    """
    out = np.zeros(len(hist))
    rho_all = np.maximum(np.arange(_RHO_BINS)[None, :] / 100.0, np.asarray(rho_floor)[:, None])
    steps = np.flatnonzero((hist * rho_all).sum(axis=1) > 0.01)  # below: the tail never reaches 1 %
    if not len(steps):
        return out
    sub, rho = hist[steps], rho_all[steps]
    rows, bins = np.nonzero(sub)  # (step, live bin) pairs, grouped by step
    r = rho[rows, bins]
    lam, c = cap * (1.0 - r), sub[rows, bins] * r
    starts = np.flatnonzero(np.r_[True, np.diff(rows) > 0])
    x = np.zeros(len(steps))
    for _ in range(_NEWTON_PASSES):
        e = c * np.exp(-lam * x[rows])
        s0, s1 = np.add.reduceat(e, starts), np.add.reduceat(lam * e, starts)
        step = (np.log(s0) - _LOG_P) * s0 / s1
        x += step
        if np.all(np.abs(step) <= 1e-6 * x + 1e-12):
            break
    out[steps] = x * 1000.0
    return out
