"""The tablet model at one point of the parameter box: a projection in, throttling over the launch out.

Serverless stores (Datastore, Firestore): the document range splits by load; an indexed
monotonic field adds an index range whose tablets take ``index_append_ops_per_s``. A
write needs both ranges, so per step the throttled operations are the larger of the
document range's and the index range's (which only writes reach).

Bigtable: a tablet is served by one node, so it takes at most one node's rows/s; the
cluster takes ``nodes`` of them. Reads and writes load a node differently (17,000 vs
14,000 rows/s on SSD): each row access costs ``1 / its rows-per-second`` of a node-second.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from keyramp.forecast._project import Projection, RangeStream
from keyramp.keyspace import Frontiers, TabletParams, simulate

__all__ = ["THROTTLED_STEP", "Outcome", "run_point"]

#: A step counts as throttled above this share (adapt_s): well above sampling noise.
THROTTLED_STEP = 0.01
_MIN_WINDOW = 4_000


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What the model says at one parameter point (every figure modelled)."""

    t: np.ndarray  # end of each step, launch seconds
    offered: np.ndarray  # operations/s the launch offers
    throttled: np.ndarray  # share of the step's requests the store cannot serve
    added_p99_ms: np.ndarray
    tablets: np.ndarray
    #: requests/s: the operations and the throttled ones clients send again (None: no retries)
    attempts: np.ndarray | None = None
    #: What throttles the most operations: the key range (``documents`` or ``rows``), an index range
    #: (``index:<field>``, as ``Projection.index`` names it) or ``key`` (one key's write limit); None: nothing.
    limited_by: str | None = None

    @property
    def throttled_fraction(self) -> float:
        """Throttled requests ÷ requests over the launch (without retries: ÷ operations)."""
        w = self.offered if self.attempts is None else self.attempts
        total = float(w.sum())
        return float((self.throttled * w).sum() / total) if total > 0 else 0.0

    @property
    def served(self) -> np.ndarray:
        """Requests/s the store served per step (modelled)."""
        return (self.offered if self.attempts is None else self.attempts) * (1.0 - self.throttled)

    @property
    def peak_throttled_fraction(self) -> float:
        return float(self.throttled.max()) if len(self.throttled) else 0.0

    @property
    def adapt_s(self) -> float | None:
        """From the first throttled step to the end of the last; 0 if none; None if still throttled at the end."""
        hot = np.flatnonzero(self.throttled > THROTTLED_STEP)
        if not len(hot):
            return 0.0
        if hot[-1] == len(self.t) - 1:
            return None
        step = float(self.t[1] - self.t[0]) if len(self.t) > 1 else float(self.t[0])
        return float(self.t[hot[-1]] - self.t[hot[0]] + step)

    @property
    def added_p99(self) -> float:
        """The worst step's 99th-percentile queueing wait of served operations."""
        return float(self.added_p99_ms.max()) if len(self.added_p99_ms) else 0.0


def _step_s(duration_s: float) -> float:
    return max(10.0, duration_s / 480.0)  # ≤ 480 steps: a day-long launch stays cheap


def _frontiers(stream: RangeStream, cost_share: float, existing: float = 0.0) -> Frontiers | None:
    return (None if stream.frontiers is None
            else replace(stream.frontiers, load_share=cost_share, existing_share=existing))


def run_point(projection: Projection, *, kind: str, point: Mapping[str, float], rate: Callable[[float], float],
              duration_s: float, nodes: int = 1, rates: Callable[[np.ndarray], np.ndarray] | None = None) -> Outcome:
    """Simulate the launch once with the parameter values ``point`` of a ``kind`` box (``MODEL_KINDS``).
    ``rates``: ``rate`` at many times at once (``Launch.rates``).

    Parameters a box does not name (an older calibration file) take the value that adds
    nothing: no retries, no placement delay.
    """
    mix = projection.mix
    step = _step_s(duration_s)
    fanout = round(point["split_fanout"])
    delay = float(point["split_delay_s"])
    retry = float(point.get("retry_reoffer", 0.0))
    if kind == "ranges":
        capacity, total, read_cost = float(point["tablet_ops_per_s"]), None, 1.0
    else:
        capacity = float(point["node_write_rows_per_s"])  # a tablet lives on one node
        total = capacity * nodes
        read_cost = capacity / float(point["node_read_rows_per_s"])  # in node-seconds of writes
    cost_per_op = mix.writes_per_op + read_cost * mix.reads_per_op
    params = TabletParams(capacity=capacity, split_threshold=float(point["split_threshold_frac"]) * capacity,
                          split_delay_s=delay, step_s=step, min_window_samples=_MIN_WINDOW, total_capacity=total,
                          split_fanout=fanout, retry=retry,
                          placement_delay_s=float(point.get("placement_delay_s", 0.0)))
    docs = projection.docs
    weights = None if read_cost == 1.0 else np.where(docs.is_read, read_cost, 1.0)
    rows_cost = max(cost_per_op / max(mix.rows_per_op, 1e-12), 1e-12)  # per row access, on average
    appends = docs.appends / rows_cost  # appends are writes: cost 1 per row
    uniform = (docs.uniform_writes + read_cost * docs.uniform_reads) / rows_cost
    existing = (docs.existing_writes + read_cost * docs.existing_reads) / rows_cost
    tl = simulate(docs.pos, docs.t, rate_fn=lambda t: rate(t) * cost_per_op, params=params, duration_s=duration_s,
                  weights=weights, frontiers=_frontiers(docs, appends, existing), uniform=uniform,
                  rates=None if rates is None else lambda ts: rates(ts) * cost_per_op)
    ops = tl.offered / max(cost_per_op, 1e-12)
    attempts = (tl.attempts if tl.attempts is not None else tl.offered) / max(cost_per_op, 1e-12)
    throttled = tl.throttled.copy()
    p99 = tl.added_p99_ms.copy()
    lost = {"rows" if kind == "nodes" else "documents": _lost(tl.throttled, ops)}  # operations each limit throttles
    if kind == "ranges" and projection.index and "index_append_ops_per_s" in point:
        cap = float(point["index_append_ops_per_s"])
        idx_params = replace(params, capacity=cap, split_threshold=float(point["split_threshold_frac"]) * cap)
        for name, stream in projection.index.items():
            per_op = float(projection.index_load.get(name, mix.inserts_per_op))  # entries an operation writes
            share = min(1.0, per_op / max(mix.rows_per_op, 1e-12))  # of the row accesses, in the index too
            itl = simulate(stream.pos, stream.t, rate_fn=_scaled(rate, per_op), params=idx_params,
                           duration_s=duration_s, frontiers=_frontiers(stream, 1.0),
                           rates=None if rates is None else _scaled(rates, per_op))
            n = min(len(itl.throttled), len(throttled))
            # A write needs both ranges: the step loses the larger of the two throttled shares.
            throttled[:n] = np.maximum(throttled[:n], itl.throttled[:n] * share)
            p99[:n] = np.maximum(p99[:n], itl.added_p99_ms[:n])
            lost[name] = _lost(itl.throttled[:n] * share, ops)
    if "key_write_ops_per_s" in point and not projection.keys.empty:
        attempts, lost["key"] = _key_limit(projection, point, tl.t - step / 2, ops, attempts, throttled, retry)
    worst = max(lost, key=lambda k: lost[k])
    return Outcome(t=tl.t, offered=ops, attempts=attempts, throttled=throttled, added_p99_ms=p99, tablets=tl.tablets,
                   limited_by=worst if lost[worst] > 0 else None)


def _scaled(fn: Callable[[Any], Any], k: float) -> Callable[[Any], Any]:
    return lambda x: fn(x) * k


def _lost(share: np.ndarray, ops: np.ndarray) -> float:
    """Operations a limit throttles over the launch (its share per step × the step's operations)."""
    n = min(len(share), len(ops))
    return float((share[:n] * ops[:n]).sum())


def _key_limit(projection: Projection, point: Mapping[str, float], t: np.ndarray, ops: np.ndarray,
               attempts: np.ndarray, throttled: np.ndarray, retry: float) -> tuple[np.ndarray, float]:
    """The per-key limit (``key_write_ops_per_s``): what the launch's units refuse, per step, into
    ``throttled`` (in place); returns the requests per step (the larger of the tablets' and the units'
    steady states, each with its refused requests sent again), and the operations the limit throttles
    (``Outcome.limited_by``).

    A unit never splits and no node helps it: it serves ``limit`` writes/s and refuses the rest; with
    retries a unit at demand d sees (d − a·L) / (1 − a) requests (the range model's steady state). A
    refused write fails its operation (an increment's read with it), so the share is of the operations
    sent. A write needs its unit and its tablet: the step loses the larger share (as with an index range).
    """
    excess = projection.keys.excess(t, ops * projection.mix.rows_per_op, float(point["key_write_ops_per_s"]))
    refused = excess / (1.0 - min(retry, 0.99))  # operations/s, retries included
    sent = ops + (refused - excess)  # the units' own requests: the operations and the refused ones sent again
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.minimum(np.where(sent > 0, refused / sent, 0.0), 1.0)
    np.maximum(throttled, share, out=throttled)
    return np.maximum(attempts, sent), _lost(share, ops)
