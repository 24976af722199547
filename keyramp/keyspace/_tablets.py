"""A range-partitioned store simulated from a key stream: the *modelled* half of keyramp.

The emulators are single-node stores that never split, so what sequential keys or a
fast ramp would do to Datastore, Firestore or Bigtable is modelled here from the
key stream and the scheduled rate. Every figure this module produces is a model output
(``modelled: true``); parameters and their sources are in docs/keyspace-model.md.

The model, per step of ``step_s`` schedule seconds (the engine is ``_simulate``):

* the load of the step (scheduled rate, or observed sample rate) is spread over the key
  space: sampled accesses as their samples fall, append points known exactly
  (``Frontiers``) on the tablet holding each point's newest key; tablets are contiguous
  position ranges;
* a tablet serves up to ``capacity`` ops/s and throttles the rest; the served load waits
  in an M/M/1 queue with service rate ``capacity`` (a rough added-latency figure);
  clients send ``retry`` of the throttled requests again the next step;
* with a cluster (``total_capacity``, Bigtable) the nodes serve at most that, and the
  pieces of a split stay on their parent's node for ``placement_delay_s``;
* a tablet whose load stays above ``split_threshold`` for ``split_delay_s`` splits at
  quantiles of its recent load (a single hot key cannot split);
* a new key range starts as one tablet; tablets never merge (runs are short).

Sampling noise: with few samples per tablet a uniform stream looks lumpy and would
predict throttling that is not there. The sampled load's shape therefore comes from a
long window (at least ``min_window_samples``) unless the current step's counts differ
from it beyond Poisson noise (a moving hotspot: chi-square test). Append points are not
sampled at all when the projection knows them (``Frontiers``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from keyramp.backends import STORES, store_params
from keyramp.core import UsageError
from keyramp.keyspace._components import Frontiers, Load, SampleShares
from keyramp.keyspace._simulate import MAX_BLOCK, Block, TabletParams, Tablets, block_size, p99_wait_ms, rho_rows

__all__ = [
    "SYNTHETIC_PATTERNS",
    "TabletParams",
    "TabletTimeline",
    "has_model",
    "params_for",
    "simulate",
    "synthetic_stream",
]

RateFn = Callable[[float], float]


def has_model(backend: str) -> bool:
    """Whether ``backend`` is a registered store with tablet-model parameters."""
    return backend in STORES and STORES.get(backend).tablets is not None


def params_for(backend: str, **overrides: Any) -> TabletParams:
    """The mid point of the store's parameter ranges (the forecast's, with sources) as ``TabletParams``."""
    if not has_model(backend):
        known = ", ".join(s.name for s in STORES.specs() if s.tablets is not None)
        raise UsageError(f"no tablet model for backend {backend!r}; known: {known}")
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
    offered: np.ndarray  # ops/s offered to the key range (the schedule's)
    tablets: np.ndarray
    max_load: np.ndarray  # ops/s on the busiest tablet
    max_share: np.ndarray  # share of the load on the busiest tablet
    hot_is_last: np.ndarray  # busiest tablet is the last of the range (appending)
    throttled: np.ndarray  # share of the step's requests the store throttles
    added_latency_ms: np.ndarray  # load-weighted queueing estimate
    #: 99th percentile of the step's M/M/1 queueing wait over served ops (mixture over tablets)
    added_p99_ms: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: requests/s the range received: the offered load and the throttled requests sent again
    attempts: np.ndarray | None = None
    achieved: np.ndarray = field(init=False)
    modelled: bool = True

    def __post_init__(self) -> None:
        if self.attempts is None:
            self.attempts = self.offered
        self.achieved = self.attempts * (1.0 - self.throttled)

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
            #: the rate this model ran at (the test's own, not a launch's): what its figures are "at"
            "offered_ops_per_s": round(float(self.offered.mean()), 1),
            "params": {k: v for k, v in asdict(self.params).items() if v is not None},
        }

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"modelled": True}
        for name in ("t", "offered", "tablets", "max_load", "throttled", "added_latency_ms", "achieved"):
            out[name] = [round(float(v), 4) for v in getattr(self, name)]
        return out


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
    frontiers: Frontiers | None = None,
    uniform: float = 0.0,
    rates: Callable[[np.ndarray], np.ndarray] | None = None,
) -> TabletTimeline:
    """Simulate tablets for one key range.

    ``positions`` in ``[0, 1)`` and ``times`` (wall seconds, ascending) are the sampled
    accesses; schedule time = wall time x ``time_scale``. The load at schedule time t is
    ``rate_fn(t)`` when given, else the sampled rate / ``sample_rate`` (fraction of
    accesses that were sampled). ``duration_s`` is in schedule seconds. ``weights``: what
    each sample costs a tablet relative to the others (e.g. a Bigtable read vs a write);
    the load is spread over the tablets by weight, ``rate_fn`` is then in the same units.
    ``frontiers``: append points known exactly; they carry ``frontiers.load_share`` of the
    load. ``uniform``: the share of the load known to spread evenly over the range (hashed
    keys, uniform reads of them). The samples carry the rest. ``rates``: ``rate_fn`` for many
    times at once (the same load, evaluated once for every parameter point).
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
    if len(sched) and frontiers is None and uniform <= 0:
        step = max(step, 20.0 * horizon / len(sched))
    n_steps = max(1, math.ceil(horizon / step - 1e-9))
    t_end = (np.arange(n_steps) + 1.0) * step
    t_start = t_end - step
    if rates is not None:
        offered = np.asarray(rates(t_start + step / 2), dtype=np.float64)
    elif rate_fn is not None:
        offered = np.array([float(rate_fn(t)) for t in (t_start + step / 2).tolist()])
    else:
        counts = np.diff(np.searchsorted(sched, np.concatenate([[-np.inf], t_end]), side="right"))
        offered = counts / sample_rate / (step / time_scale)
    known = uniform + (frontiers.load_share + frontiers.existing_share if frontiers is not None else 0.0)
    samples = None
    if known < 1.0 - 1e-12 and len(sched):
        samples = SampleShares(pos, sched, wts, t_start=t_start, t_end=t_end, min_window=params.min_window_samples,
                               window_s=params.window_s)
    return _run(params, t_start, t_end, offered, Load(samples=samples, frontiers=frontiers, uniform=uniform))


def _run(params: TabletParams, t_start: np.ndarray, t_end: np.ndarray, offered: np.ndarray, load: Load,
         ) -> TabletTimeline:
    """Blocks of steps until the next split, then the split (``_simulate``)."""
    tablets = Tablets(params)
    cap, n_steps = params.capacity, len(t_end)
    most = block_size(params, float(t_end[0] - t_start[0]))
    rows = most
    parts: list[dict[str, np.ndarray]] = []
    k = 0
    while k < n_steps:
        k1 = min(n_steps, k + rows)
        share = load.shares(k, k1, tablets.cuts, float(t_start[k]), t_end[k:k1])
        blk = tablets.serve(offered[k:k1, None] * share, t_end[k:k1])
        j = tablets.first_split(blk.load, t_start[k:k1], t_end[k:k1])
        last = k1 - k - 1 if j is None else j
        parts.append(_rows(blk, last + 1, cap, offered[k:k + last + 1], t_end[k:k + last + 1]))
        tablets.carry(blk, last, float(t_end[k + last]))
        # Any block length gives the same steps (a block stops at its first split): blocks double while
        # nothing splits (a quiet launch is a few blocks), and after a split run about as long as the
        # last one went, so few rows past the next split are computed and thrown away.
        rows = min(MAX_BLOCK, 2 * rows) if j is None else max(2, min(most, 2 * (j + 1)))
        if j is not None:
            atoms, mass, reach = load.atoms(k + j, j, tablets.cuts, tablets.ready)
            if tablets.split(atoms, mass, float(t_end[k + j]), reach=reach) and load.samples is not None:
                load.samples.retab(tablets.added)
        k += last + 1
    col = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    return TabletTimeline(params=params, t=col["t"], offered=col["offered"], attempts=col["attempts"],
                          tablets=col["tablets"].astype(np.int64), max_load=col["max_load"],
                          max_share=col["max_share"], hot_is_last=col["last"].astype(bool), throttled=col["thr"],
                          added_latency_ms=col["lat"], added_p99_ms=p99_wait_ms(col["hist"], cap, col["floor"]))


def _rows(blk: Block, n: int, cap: float, offered: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
    """Per-step figures of the first ``n`` rows of a block."""
    load, served, floor = blk.load[:n], blk.served[:n], blk.rho_floor[:n]
    attempts = load.sum(axis=1)
    busy = attempts > 0
    safe = np.where(busy, attempts, 1.0)
    hot = load.argmax(axis=1)
    max_load = load[np.arange(n), hot]
    rho = np.maximum(np.minimum(load / cap, 0.99), floor[:, None])
    return {
        "t": t, "offered": offered, "attempts": attempts, "tablets": np.full(n, load.shape[1], dtype=np.float64),
        "max_load": max_load, "max_share": np.where(busy, max_load / safe, 0.0),
        "last": ((hot == load.shape[1] - 1) & (max_load > 0)).astype(np.float64),
        "thr": np.where(busy, np.maximum(0.0, 1.0 - served.sum(axis=1) / safe), 0.0),
        "lat": np.where(busy, (load * (rho / (1.0 - rho) / cap * 1000.0)).sum(axis=1) / safe, 0.0),
        "floor": floor, "hist": rho_rows(served, cap, floor),
    }


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
    ``reverse``: each key before the previous (reverse timestamps). ``shards``:
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


SYNTHETIC_PATTERNS = ("uniform", "sequential", "reverse", "shards")
