"""A range-partitioned store simulated from a key stream: the *modelled* half of keyramp.

The emulators are single-node stores that never split, so what sequential keys or a
fast ramp would do to Datastore, Firestore or Bigtable is modelled here from the
sampled key stream and the scheduled rate. Every figure this module produces is a
model output (``modelled: true``); parameters and their sources are in
docs/keyspace-model.md.

The model, per step of ``step_s`` schedule seconds:

* the load of the cell (scheduled rate, or observed sample rate) is spread over the
  key space as the samples of the step are; tablets are contiguous position ranges;
* a tablet throttles what exceeds ``capacity`` ops/s; the rest waits in an M/M/1
  queue with service rate ``capacity`` (a rough added-latency figure);
* a tablet whose load stays above ``split_threshold`` for ``split_delay_s`` splits at
  the median of its recent samples (a single hot key cannot split);
* a new key range starts as one tablet; tablets never merge (runs are short).

Sampling noise: with few samples per tablet a uniform stream looks lumpy and would
predict throttling that is not there. The load shape therefore comes from a long
window (at least ``min_window_samples``) unless the current step's counts differ from
it beyond Poisson noise (a moving hotspot: chi-square test), in which case the step's
own samples are used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from keyramp._errors import UsageError

__all__ = [
    "SYNTHETIC_PATTERNS",
    "TabletParams",
    "TabletTimeline",
    "has_model",
    "params_for",
    "simulate",
    "simulate_collection",
    "synthetic_stream",
]

RateFn = Callable[[float], float]
_QUANTA = 1 << 16  # position resolution of tablet bounds
_SAMPLES_PER_TABLET = 30  # long-window samples per tablet (Poisson noise ~18 %)
_WAIT_GRID = np.geomspace(1e-4, 1.0, 97)  # waits the p99 is searched on, × the slowest tablet's bound


@dataclass(frozen=True, kw_only=True)
class TabletParams:
    capacity: float  # ops/s one tablet serves before throttling
    split_threshold: float  # ops/s that, sustained for split_delay_s, triggers a split
    split_delay_s: float  # schedule seconds
    step_s: float = 10.0  # simulation step, schedule seconds (raised for sparse samples)
    window_s: float = 60.0  # long window for the load shape, schedule seconds
    min_window_samples: int = 20_000
    total_capacity: float | None = None  # cluster cap (Bigtable nodes x per-node ops/s)
    max_tablets: int = 1 << 16
    split_fanout: int = 2  # pieces a split tablet becomes (at quantiles of its recent samples)


def has_model(backend: str) -> bool:
    """Whether ``backend`` is a registered store with tablet-model parameters."""
    from keyramp.backends import STORES

    return backend in STORES and STORES.get(backend).tablets is not None


def params_for(backend: str, **overrides: Any) -> TabletParams:
    """The mid point of the store's parameter ranges (the forecast's, with sources) as ``TabletParams``."""
    if not has_model(backend):
        from keyramp.backends import STORES

        known = ", ".join(s.name for s in STORES.specs() if s.tablets is not None)
        raise UsageError(f"no tablet model for backend {backend!r}; known: {known}")
    from keyramp.forecast._stores import store_params  # imported late: forecast builds on this module

    box = store_params(backend)
    mid = box.mid()
    capacity = mid[box.capacity_param]
    base = TabletParams(capacity=capacity, split_threshold=mid["split_threshold_frac"] * capacity,
                        split_delay_s=mid["split_delay_s"], split_fanout=int(mid["split_fanout"]),
                        total_capacity=capacity if box.kind == "nodes" else None)  # one node
    return replace(base, **overrides) if overrides else base


@dataclass(kw_only=True)
class TabletTimeline:
    """Model output per step (arrays of equal length); every figure is modelled."""

    params: TabletParams
    t: np.ndarray  # end of step, schedule seconds
    offered: np.ndarray  # ops/s offered to the key range
    tablets: np.ndarray
    max_load: np.ndarray  # ops/s on the busiest tablet
    max_share: np.ndarray  # share of the load on the busiest tablet
    hot_is_last: np.ndarray  # busiest tablet is the last of the range (appending)
    throttled: np.ndarray  # predicted throttled fraction of offered ops
    added_latency_ms: np.ndarray  # load-weighted queueing estimate
    #: 99th percentile of the step's M/M/1 queueing wait over served ops (mixture over tablets)
    added_p99_ms: np.ndarray = field(default_factory=lambda: np.zeros(0))
    achieved: np.ndarray = field(init=False)
    modelled: bool = True

    def __post_init__(self) -> None:
        self.achieved = self.offered * (1.0 - self.throttled)

    def at(self, t: float) -> int:
        """Index of the step containing schedule time ``t``."""
        return min(len(self.t) - 1, int(np.searchsorted(self.t, t, side="left")))

    def summary(self) -> dict[str, Any]:
        if len(self.t) == 0:
            return {"modelled": True, "steps": 0}
        last = len(self.t) - 1
        busy = self.offered > 0
        return {
            "modelled": True,
            "steps": len(self.t),
            "step_s": float(self.t[1] - self.t[0]) if len(self.t) > 1 else float(self.t[0]),
            "peak_tablets": int(self.tablets.max()),
            "final_tablets": int(self.tablets[last]),
            "max_throttled_fraction": float(self.throttled.max()),
            "mean_throttled_fraction": float(
                (self.throttled * self.offered).sum() / self.offered.sum() if busy.any() else 0.0
            ),
            "final_throttled_fraction": float(self.throttled[last]),
            "max_tablet_load_ops_per_s": float(self.max_load.max()),
            "final_max_share": float(self.max_share[last]),
            "max_added_latency_ms": float(self.added_latency_ms.max()),
            "peak_achieved_ops_per_s": float(self.achieved.max()),
            "params": {k: v for k, v in asdict(self.params).items() if v is not None},
        }

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"modelled": True}
        for name in ("t", "offered", "tablets", "max_load", "throttled", "added_latency_ms", "achieved"):
            out[name] = [round(float(v), 4) for v in getattr(self, name)]
        return out


def _moved(counts: np.ndarray, expected: np.ndarray) -> bool:
    """Whether a step's counts differ from the long-window shape beyond Poisson noise.

    A chi-square statistic against its degrees of freedom (k - 1, std sqrt(2(k - 1))),
    with a wide margin: only a real move (an appending hotspot) passes, not sampling noise.
    """
    if (counts[expected == 0] > 0).any():
        return True
    live = expected > 0
    chi2 = float((((counts[live] - expected[live]) ** 2) / expected[live]).sum())
    dof = max(1, int(live.sum()) - 1)
    return chi2 > dof + 5.0 * math.sqrt(2.0 * dof) + 10.0


def _p99_wait_ms(load: np.ndarray, cap: float, rho_floor: float) -> float:
    """99th percentile of the M/M/1 waiting time over a step's served ops, mixed over tablets.

    A tablet at utilisation rho (service rate ``cap``) has P(W > x) = rho·exp(-cap(1-rho)x);
    the step's tail is the load-weighted sum, solved for 1 % by bisection.
    """
    total = float(load.sum())
    if total <= 0:
        return 0.0
    # Tablets grouped by utilisation in steps of 0.01 (rounded up): ≤ 100 terms per step.
    rho_t = np.maximum(np.minimum(load / cap, 0.99), rho_floor)
    grid = np.bincount(np.minimum(np.ceil(rho_t * 100.0).astype(np.int64), 99), weights=load / total,
                       minlength=100)
    live = np.flatnonzero(grid)
    weight, rho = grid[live], np.maximum(live / 100.0, rho_floor)
    if float((weight * rho).sum()) <= 0.01:
        return 0.0
    rate = cap * (1.0 - rho)
    # The tail on a log grid of waits (one vectorised pass), then log-linear interpolation.
    hi = float(math.log(100.0) / rate.min())
    xs = _WAIT_GRID * hi
    tail = (weight * rho) @ np.exp(-np.outer(rate, xs))
    k = int(np.argmax(tail <= 0.01))
    if k == 0:
        return float(xs[0]) * 1000.0
    t0, t1 = math.log(tail[k - 1]), math.log(max(float(tail[k]), 1e-300))
    frac = (t0 - math.log(0.01)) / (t0 - t1) if t0 != t1 else 1.0
    return float(math.exp(math.log(xs[k - 1]) + frac * (math.log(xs[k]) - math.log(xs[k - 1])))) * 1000.0


def simulate(
    positions: np.ndarray,
    times: np.ndarray,
    *,
    rate_fn: RateFn | None = None,
    time_scale: float = 1.0,
    params: TabletParams,
    sample_rate: float = 1.0,
    duration_s: float | None = None,
    weights: np.ndarray | None = None,
) -> TabletTimeline:
    """Simulate tablets for one key range.

    ``positions`` in ``[0, 1)`` and ``times`` (wall seconds, ascending) are the sampled
    accesses; schedule time = wall time x ``time_scale``. The load at schedule time t is
    ``rate_fn(t)`` when given, else the sampled rate / ``sample_rate`` (fraction of
    accesses that were sampled). ``duration_s`` is in schedule seconds. ``weights``: what
    each sample costs a tablet relative to the others (e.g. a Bigtable read vs a write);
    the load is spread over the tablets by weight, ``rate_fn`` is then in the same units.
    """
    if time_scale <= 0 or sample_rate <= 0:
        raise UsageError("time_scale and sample_rate must be positive")
    pos = np.asarray(positions, dtype=np.float64)
    sched = np.asarray(times, dtype=np.float64) * time_scale
    wts = None if weights is None else np.asarray(weights, dtype=np.float64)
    if len(sched) > 1 and np.any(np.diff(sched) < 0):
        order = np.argsort(sched, kind="stable")
        pos, sched = pos[order], sched[order]
        wts = None if wts is None else wts[order]
    horizon = duration_s if duration_s is not None else (float(sched[-1]) if len(sched) else 0.0)
    # Aim for >= 20 samples a step on average, so a moving hotspot is significant.
    step = params.step_s
    if len(sched):
        step = max(step, 20.0 * horizon / len(sched))
    n_steps = max(1, math.ceil(horizon / step - 1e-9))

    # Positions on a grid of 2^16 quanta: a tablet is a run of quanta, so the tablet of a
    # sample is a table lookup (rebuilt on splits) instead of a search per sample per step.
    qpos = np.minimum((pos * _QUANTA).astype(np.int64), _QUANTA - 1).astype(np.uint16)
    bounds = np.array([0, _QUANTA], dtype=np.int64)
    tablet_of = np.zeros(_QUANTA, dtype=np.int32)
    over_since = np.array([math.nan])
    cols: dict[str, list[float]] = {k: [] for k in ("t", "offered", "tablets", "max_load", "max_share", "last", "thr",
                                                     "lat", "p99")}
    share = np.ones(1)
    cap = params.capacity
    fanout = max(2, int(params.split_fanout))

    for k in range(n_steps):
        t_end = (k + 1) * step
        t_start = t_end - step
        e = int(np.searchsorted(sched, t_end, side="right"))
        s0 = int(np.searchsorted(sched, t_start, side="right")) if k > 0 else 0
        n_tab = len(bounds) - 1
        # Enough samples in the long window that each tablet's share is not mostly noise.
        need = max(params.min_window_samples, _SAMPLES_PER_TABLET * n_tab)
        l0 = min(int(np.searchsorted(sched, t_end - max(params.window_s, step), side="right")), max(0, e - need), s0)
        short = qpos[s0:e]
        # The long window's shape needs ~min_window_samples, not all of (say) 60 s x 3,000
        # samples/s: thin it evenly, so dense key logs cost O(samples) over the whole run.
        stride = max(1, (e - l0) // (2 * need))
        window = qpos[l0:e:stride]
        w_tab = tablet_of[window]
        use_short = False
        if len(window):
            if wts is None:
                share = np.bincount(w_tab, minlength=n_tab)[:n_tab] / len(window)
            else:
                cw = np.bincount(w_tab, weights=wts[l0:e:stride], minlength=n_tab)[:n_tab]
                share = cw / max(float(cw.sum()), 1e-300)
            if len(short):
                s_tab = w_tab[s0 - l0 :] if stride == 1 else tablet_of[short]
                # The move test counts samples (Poisson noise); the shares it picks are weighted.
                c_short = np.bincount(s_tab, minlength=n_tab)[:n_tab]
                c_long = c_short if wts is None else np.bincount(w_tab, minlength=n_tab)[:n_tab]
                expected = (share if wts is None else c_long / max(len(window), 1)) * len(short)
                use_short = _moved(c_short, expected)
                if use_short:
                    if wts is None:
                        share = c_short / len(short)
                    else:
                        cs = np.bincount(s_tab, weights=wts[s0:e], minlength=n_tab)[:n_tab]
                        share = cs / max(float(cs.sum()), 1e-300)
        elif len(share) != n_tab:
            share = np.full(n_tab, 1.0 / n_tab)

        if rate_fn is not None:
            offered = float(rate_fn(t_start + step / 2))
        else:
            offered = len(short) / sample_rate / (step / time_scale)
        load = offered * share
        served = np.minimum(load, cap).sum()
        cluster_rho = 0.0
        if params.total_capacity is not None:
            served = min(served, params.total_capacity)
            cluster_rho = min(offered / params.total_capacity, 0.99)  # the nodes queue too
        throttled = 1.0 - served / offered if offered > 0 else 0.0
        rho = np.maximum(np.minimum(load / cap, 0.99), cluster_rho)
        wait_ms = rho / (1.0 - rho) / cap * 1000.0
        latency = float((load * wait_ms).sum() / offered) if offered > 0 else 0.0
        cols["p99"].append(_p99_wait_ms(np.minimum(load, cap), cap, cluster_rho))
        hot = int(np.argmax(load))
        cols["t"].append(t_end)
        cols["offered"].append(offered)
        cols["tablets"].append(n_tab)
        cols["max_load"].append(float(load[hot]))
        cols["max_share"].append(float(share[hot]))
        cols["last"].append(float(hot == n_tab - 1 and load[hot] > 0))
        cols["thr"].append(max(0.0, throttled))
        cols["lat"].append(latency)

        # Splits: sustained load above threshold, at the median of the recent samples
        # that produced the tablet's share (the step's own when it was significant).
        over = load > params.split_threshold
        over_since = np.where(over, np.where(np.isnan(over_since), t_start, over_since), math.nan)
        ready = np.flatnonzero(over & (t_end - over_since >= params.split_delay_s - 1e-9))
        if len(ready) == 0 or n_tab >= params.max_tablets:
            continue
        # Quantiles (the median for 2 pieces) of the recent samples that produced the share
        # (the step's own if it moved).
        src = np.sort(short if use_short else window)
        ed = np.searchsorted(src, bounds, side="left")
        new_points: list[int] = []
        for i in ready[: max(0, (params.max_tablets - n_tab) // (fanout - 1))]:
            a, b = ed[i], ed[i + 1]
            if b - a < 2:
                continue
            cuts = {int(src[a + (b - a) * j // fanout]) for j in range(1, fanout)}
            new_points.extend(m for m in cuts if bounds[i] < m < bounds[i + 1])
        if not new_points:
            continue
        new_points = sorted(set(new_points))
        new_bounds = np.sort(np.concatenate([bounds, np.asarray(new_points, dtype=np.int64)]))
        parent = np.searchsorted(bounds, new_bounds[:-1], side="right") - 1
        was_split = np.zeros(n_tab, dtype=bool)
        was_split[np.searchsorted(bounds, new_points, side="right") - 1] = True
        over_since = np.where(was_split[parent], math.nan, over_since[parent])
        share = share[parent] / np.bincount(parent, minlength=n_tab)[parent]  # refined next step
        bounds = new_bounds
        tablet_of = np.repeat(np.arange(len(bounds) - 1, dtype=np.int32), np.diff(bounds))

    return TabletTimeline(
        params=params,
        t=np.asarray(cols["t"]),
        offered=np.asarray(cols["offered"]),
        tablets=np.asarray(cols["tablets"], dtype=np.int64),
        max_load=np.asarray(cols["max_load"]),
        max_share=np.asarray(cols["max_share"]),
        hot_is_last=np.asarray(cols["last"], dtype=bool),
        throttled=np.asarray(cols["thr"]),
        added_latency_ms=np.asarray(cols["lat"]),
        added_p99_ms=np.asarray(cols["p99"]),
    )


def simulate_collection(
    doc_positions: np.ndarray,
    times: np.ndarray,
    *,
    index_positions: Mapping[str, np.ndarray],
    rate_fn: RateFn | None = None,
    time_scale: float = 1.0,
    params: TabletParams,
    duration_s: float | None = None,
) -> dict[str, Any]:
    """Model writes that also write index entries (Firestore/Datastore single-field indexes).

    Each write touches the document range and one entry per indexed field, each index
    its own key range (ordered by the field's value). A write succeeds only if every
    range accepts it, so the collection's throttled fraction is the worst range's.
    """
    ranges = {"documents": doc_positions, **{f"index:{k}": v for k, v in index_positions.items()}}
    timelines = {
        name: simulate(p, times, rate_fn=rate_fn, time_scale=time_scale, params=params, duration_s=duration_s)
        for name, p in ranges.items()
    }
    stack = np.vstack([tl.throttled for tl in timelines.values()])
    offered = next(iter(timelines.values())).offered
    throttled = stack.max(axis=0)
    return {"ranges": timelines, "throttled": throttled, "achieved": offered * (1.0 - throttled), "modelled": True}


def _uniform(n: int, rng: np.random.Generator, *, stratified: bool) -> np.ndarray:
    if stratified:
        # Golden-ratio sequence: any run of consecutive samples covers [0,1) almost
        # evenly, so calibration measures the model rather than sampling noise.
        start = rng.random()
        return np.modf(start + np.arange(n, dtype=np.float64) * 0.6180339887498949)[0]
    return rng.random(n)


def synthetic_stream(
    pattern: str,
    *,
    duration_s: float,
    samples_per_s: float,
    seed: int = 0,
    shards: int = 64,
    stratified: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Positions and times (schedule seconds, time_scale 1) for a key pattern.

    ``uniform``: random/hashed/server-allocated keys. ``sequential``: each key past the
    previous (sequential ids, timestamp-first keys, a monotonic indexed field).
    ``reverse``: each key before the previous (reverse timestamps). ``hashed_prefix``:
    ``shards`` prefixes, sequential within each (BP-KEY-3).
    """
    if pattern not in SYNTHETIC_PATTERNS:
        raise UsageError(f"unknown synthetic pattern {pattern!r}; known: {', '.join(SYNTHETIC_PATTERNS)}")
    n = max(1, int(duration_s * samples_per_s))
    rng = np.random.default_rng(seed)
    times = (np.arange(n, dtype=np.float64) + 0.5) * (duration_s / n)
    frac = np.arange(n, dtype=np.float64) / n
    if pattern == "uniform":
        pos = _uniform(n, rng, stratified=stratified)
    elif pattern == "sequential":
        pos = frac
    elif pattern == "reverse":
        pos = 1.0 - frac - 1.0 / n
    else:
        shard = (np.floor(_uniform(n, rng, stratified=stratified) * shards)).astype(np.int64)
        pos = (shard + frac) / shards
    return pos, times


SYNTHETIC_PATTERNS = ("uniform", "sequential", "reverse", "hashed_prefix")
