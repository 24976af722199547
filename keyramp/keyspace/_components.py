"""What loads the tablets, step by step: the parts of a key stream known exactly, and the samples.

* ``Frontiers``: append points known from the key design (each point's newest key over
  time, its share of the appends), and the records that exist behind them (uniform reads);
* an evenly spread share (hashed keys, uniform reads of them): each tablet by its width;
* ``SampleShares``: sampled accesses for what is known only from samples (moving designs,
  skewed reads, recorded keys), with the noise guard.

``Load`` adds them up for a block of steps (``shares``) and hands the splitter the atoms
of the recent load a quantile can fall between (``atoms``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Frontiers", "Load", "SampleShares", "frontier_block"]

_SAMPLES_PER_TABLET = 30  # long-window samples per tablet (Poisson noise ~18 %)
_UNIFORM_ATOMS = 8  # evenly spread load of a tablet about to split: points its quantiles fall between


@dataclass(frozen=True, kw_only=True)
class Frontiers:
    """Append points known exactly (from the key design, not from samples).

    Point k's newest key moves from ``start[k]`` to ``end[k]`` (positions in the range as it
    is at the end) as the appends progress, inside its region ``[lo[k], hi[k])``; it takes
    ``share[k]`` of the appends, which are ``load_share`` of the range's load. ``progress``
    is the share of all appends made by each ``grid`` time (schedule seconds, 0 to 1).
    ``existing_share`` of the load goes evenly to the records that exist (uniform reads):
    each region's existing part, in proportion to its share.
    """

    start: np.ndarray
    end: np.ndarray
    share: np.ndarray
    grid: np.ndarray
    progress: np.ndarray
    load_share: float
    lo: np.ndarray
    hi: np.ndarray
    existing_share: float = 0.0

    def at(self, t: float) -> np.ndarray:
        return self.start + (self.end - self.start) * float(np.interp(t, self.grid, self.progress))

    def __len__(self) -> int:
        return len(self.share)

    def existing_cdf(self, f: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Rows (one per row of newest-key positions ``f``) of the share of the existing records below ``x``."""
        k = np.clip(np.searchsorted(self.lo, x, side="right") - 1, 0, len(self.share) - 1)
        appends = self.end >= self.start
        a = np.where(appends, self.lo, f)  # the existing part: below the newest key (above it for prepends)
        b = np.where(appends, f, self.hi)
        before = np.cumsum(self.share) - self.share
        within = np.clip((x[None, :] - a[:, k]) / np.maximum(b[:, k] - a[:, k], 1e-300), 0.0, 1.0)
        return before[k][None, :] + self.share[k][None, :] * within


class SampleShares:
    """The sampled part of the stream and the share of it on each tablet, for blocks of steps.

    A window's counts per tablet slide with the steps: the first row's window is counted,
    each next row adds the samples that enter and removes those that leave, so a block
    costs its samples and its rows × tablets, never a window per row.
    """

    def __init__(self, pos: np.ndarray, sched: np.ndarray, weights: np.ndarray | None, *, t_start: np.ndarray,
                 t_end: np.ndarray, min_window: int, window_s: float) -> None:
        self.pos, self.weights, self.min_window = pos, weights, min_window
        self.n = len(pos)
        self.tab = np.zeros(self.n, dtype=np.int64)
        self.e = np.searchsorted(sched, t_end, side="right")
        self.s0 = np.searchsorted(sched, t_start, side="right")
        self.s0[0] = 0
        self.lw = np.minimum(np.searchsorted(sched, t_end - np.maximum(window_s, t_end - t_start), side="right"),
                             self.s0)

    def retab(self, new: np.ndarray) -> None:
        """The samples' tablets after the bounds ``new`` were added (once per split, not per step)."""
        self.tab += np.searchsorted(new, self.pos, side="right")  # a sample moves up one tablet per new bound below

    def _rows(self, lo: np.ndarray, hi: np.ndarray, n_tab: int, weights: np.ndarray | None) -> np.ndarray:
        """Counts per tablet of samples ``lo[r] <= i < hi[r]`` for consecutive, non-overlapping rows."""
        idx = np.arange(int(lo[0]), int(hi[-1]))
        row = np.searchsorted(hi, idx, side="right")
        w = None if weights is None else weights[idx]
        return np.bincount(row * n_tab + self.tab[idx], weights=w, minlength=len(lo) * n_tab).reshape(len(lo), n_tab)

    def _window(self, l0: np.ndarray, e: np.ndarray, n_tab: int, weights: np.ndarray | None) -> np.ndarray:
        """Counts per tablet of the sliding windows ``[l0[r], e[r])`` (both ends non-decreasing)."""
        first = np.bincount(self.tab[l0[0]:e[0]], weights=None if weights is None else weights[l0[0]:e[0]],
                            minlength=n_tab)
        rows = len(e)
        if rows == 1:
            return first[None, :]
        enter = self._rows(e[:-1], e[1:], n_tab, weights)
        leave = self._rows(l0[:-1], l0[1:], n_tab, weights) if l0[-1] > l0[0] else 0.0
        return np.concatenate([first[None, :], first[None, :] + np.cumsum(enter - leave, axis=0)])

    def block(self, k0: int, k1: int, n_tab: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows k0..k1-1: (share per tablet, the step's own sample count, window start used)."""
        e, s0 = self.e[k0:k1], self.s0[k0:k1]
        need = max(self.min_window, _SAMPLES_PER_TABLET * n_tab)
        l0 = np.minimum(self.lw[k0:k1], np.maximum(0, e - need))
        n_short = e - s0
        l0 = np.maximum.accumulate(l0)
        c_long = self._window(l0, e, n_tab, None)
        c_short = self._rows(s0, e, n_tab, None) if e[-1] > s0[0] else np.zeros_like(c_long)
        w_long = c_long if self.weights is None else self._window(l0, e, n_tab, self.weights)
        w_short = c_short if self.weights is None else self._rows(s0, e, n_tab, self.weights)
        total = c_long.sum(axis=1)
        expected = c_long / np.maximum(total, 1)[:, None] * n_short[:, None]
        live = expected > 0
        chi2 = np.where(live, (c_short - expected) ** 2 / np.where(live, expected, 1.0), 0.0).sum(axis=1)
        dof = np.maximum(1, live.sum(axis=1) - 1)
        # Noise guard: the step's own samples replace the long window only beyond Poisson noise.
        moved = (n_short > 0) & (((c_short > 0) & ~live).any(axis=1) | (chi2 > dof + 5.0 * np.sqrt(2.0 * dof) + 10.0))
        chosen = np.where(moved[:, None], w_short, w_long)
        sums = chosen.sum(axis=1)
        share = np.where(sums[:, None] > 0, chosen / np.maximum(sums, 1e-300)[:, None], 1.0 / n_tab)
        return share, n_short, np.where(moved, s0, l0)

    def recent(self, k: int, start: int) -> np.ndarray:
        """Positions of the samples step k's share came from (splits are cut among them)."""
        return self.pos[start:self.e[k]]


def frontier_block(cuts: np.ndarray, f: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Rows of each append point's share on the tablet(s) its newest keys covered during each step.

    ``f``: the points' positions at the block's step boundaries (steps + 1 rows). The points'
    paths in a step, ``[lo, hi)``, are disjoint and in order (each stays in its own region),
    so the share below any position is one search: a tablet takes the difference at its bounds
    (a point that crosses a bound within the step is split by overlap).
    """
    rows, n = len(f) - 1, len(share)
    lo, hi = np.minimum(f[:-1], f[1:]), np.maximum(f[:-1], f[1:])
    bounds = np.concatenate([[0.0], cuts, [1.0]])
    offset = 2.0 * np.arange(rows)[:, None]  # rows apart: one search over all rows
    k = np.searchsorted((lo + offset).ravel(), (bounds[None, :] + offset).ravel(), side="right")
    k = k.reshape(rows, len(bounds)) - 1 - np.arange(rows)[:, None] * n
    below = np.cumsum(share) - share
    kk = np.maximum(k, 0)
    r = np.arange(rows)[:, None]
    span = np.maximum(hi[r, kk] - lo[r, kk], 1e-300)
    cdf = np.where(k >= 0, below[kk] + share[kk] * np.clip((bounds[None, :] - lo[r, kk]) / span, 0.0, 1.0), 0.0)
    return np.diff(cdf, axis=1)


def _frontier_rows(fr: Frontiers, times: np.ndarray) -> np.ndarray:
    """The append points' positions at ``times`` (rows)."""
    g = np.interp(times, fr.grid, fr.progress)
    return fr.start[None, :] + (fr.end - fr.start)[None, :] * g[:, None]



def _bounds(cuts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0.0], cuts, [1.0]])


@dataclass(kw_only=True)
class Load:
    """The parts of a range's load: ``append`` and ``existing`` shares on the frontiers, ``uniform``
    spread evenly, the rest (``sampled``) as the samples fall."""

    samples: SampleShares | None
    frontiers: Frontiers | None
    uniform: float
    append: float = field(init=False)
    existing: float = field(init=False)
    sampled: float = field(init=False)
    _f: np.ndarray | None = field(init=False, default=None)
    _starts: np.ndarray | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        fr = self.frontiers
        self.append = float(fr.load_share) if fr is not None else 0.0
        self.existing = float(fr.existing_share) if fr is not None else 0.0
        self.sampled = max(0.0, 1.0 - self.append - self.uniform - self.existing) if self.samples is not None else 0.0

    def shares(self, k0: int, k1: int, cuts: np.ndarray, t_start: float, t_end: np.ndarray) -> np.ndarray:
        """Rows k0..k1-1: each tablet's share of the step's load."""
        share = np.zeros((k1 - k0, len(cuts) + 1))
        if self.samples is not None:
            s_share, _, self._starts = self.samples.block(k0, k1, len(cuts) + 1)
            share += self.sampled * s_share
        if self.uniform > 0:
            share += self.uniform * np.diff(_bounds(cuts))[None, :]
        fr = self.frontiers
        if fr is not None:
            self._f = f = _frontier_rows(fr, np.concatenate([[t_start], t_end]))
            share += self.append * frontier_block(cuts, f, fr.share)
            if self.existing > 0:
                share += self.existing * np.diff(fr.existing_cdf((f[:-1] + f[1:]) / 2, _bounds(cuts)), axis=1)
        return share

    def atoms(self, k: int, row: int, cuts: np.ndarray, ready: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions, load, reach) of the recent load at step k (``row`` of the last block), for the
        tablets ``ready`` to split: the samples the share came from, the append points, and atoms
        standing for the evenly spread loads inside those tablets."""
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        if self.samples is not None and self._starts is not None:
            src = self.samples.recent(k, int(self._starts[row]))
            parts.append((src, np.full(len(src), self.sampled / max(len(src), 1)), src))
        fr = self.frontiers
        if fr is not None and self._f is not None:
            at = self._f[row + 1]
            parts.append((at, fr.share * self.append, fr.end))  # an append point reaches to its region's end
            if self.existing > 0:
                e_at, e_mass = _existing_atoms(fr, at, cuts, ready)
                parts.append((e_at, e_mass * self.existing, e_at))
        if self.uniform > 0:
            u_at, u_mass = _uniform_atoms(cuts, ready, self.uniform)
            parts.append((u_at, u_mass, u_at))
        if not parts:
            return np.zeros(0), np.zeros(0), np.zeros(0)
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]


def _uniform_atoms(cuts: np.ndarray, tablets: np.ndarray, mass: float) -> tuple[np.ndarray, np.ndarray]:
    """The evenly spread load of the tablets about to split, as atoms a quantile can fall between."""
    bounds = _bounds(cuts)
    lo, width = bounds[tablets], np.diff(bounds)[tablets]
    at = lo[:, None] + width[:, None] * ((np.arange(_UNIFORM_ATOMS) + 0.5) / _UNIFORM_ATOMS)[None, :]
    return at.ravel(), np.repeat(width * (mass / _UNIFORM_ATOMS), _UNIFORM_ATOMS)


def _existing_atoms(fr: Frontiers, f: np.ndarray, cuts: np.ndarray, ready: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The existing records' share inside the tablets about to split, as atoms (``_uniform_atoms``)."""
    bounds = _bounds(cuts)
    lo, width = bounds[ready], np.diff(bounds)[ready]
    edges = lo[:, None] + width[:, None] * (np.arange(_UNIFORM_ATOMS + 1) / _UNIFORM_ATOMS)[None, :]
    cdf = fr.existing_cdf(f[None, :], edges.ravel()).reshape(edges.shape)
    return ((edges[:, 1:] + edges[:, :-1]) / 2).ravel(), np.diff(cdf, axis=1).ravel()
