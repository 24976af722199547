"""``StoreModel``: a range-partitioned store, one operation at a time (the reference model).

Online and event-driven: ``offer(op, now)`` admits or throttles one operation and updates
the tablets it touched. The same object serves the offline reference run (``reference_run``)
and a proxy in front of an emulator, at capacities ÷ ``scale`` and delays ÷ ``time_scale``.

* Serverless stores (``kind = "ranges"``): a tablet serves ``tablet_ops_per_s``, an index tablet
  ``index_append_ops_per_s``; overload is cause ``"range"``.
* Bigtable (``kind = "nodes"``): a tablet lives on one node and serves at most a node's
  ``node_write_rows_per_s`` (a read row costs ``node_write / node_read`` of a write); the
  cluster serves ``nodes`` times that, placed tablets packing perfectly; the pieces of a split
  share their parent's node for ``placement_delay_s``. Overload is cause ``"node"``.
* Per-key limits: a unit (``StoreOp.units``) sustains ``key_write_ops_per_s`` writes
  (transforms included), cause ``"key"``; on Bigtable never more than one node's capacity.

An operation is admitted only if every unit, tablet and node it needs has room: a throttled
operation spends nothing, but loads every tablet it touched (its load window counts requests).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from keyramp.core import UsageError
from keyramp.storemodel._limits import KeyLimits, RateLimit
from keyramp.storemodel._space import Groups, Rules, Space, Tablet
from keyramp.storemodel._types import Decision, ModelParams, ModelState, StoreOp

if TYPE_CHECKING:
    from keyramp.backends import StoreSpec

__all__ = ["WINDOW_BUCKETS", "StoreModel", "resolve_params"]

#: The load window: 10 buckets of one model second (the fast model's 10-s step).
WINDOW_BUCKETS = 10
_RHO_CAP = 0.99
_NEEDS = {"ranges": ("tablet_ops_per_s", "split_threshold_frac", "split_delay_s", "split_fanout"),
          "nodes": ("node_write_rows_per_s", "node_read_rows_per_s", "split_threshold_frac", "split_delay_s",
                    "split_fanout")}


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name}: must be a number > 0, got {value!r}")
    return float(value)


def resolve_params(point: Mapping[str, float], *, kind: str, nodes: int = 1, scale: float = 1.0,
                   time_scale: float = 1.0) -> ModelParams:
    """The model's parameters from a point of a store's box (``StoreParams``); ``UsageError`` if unusable.

    Parameters a point does not name take the value that adds nothing: no placement delay, no
    per-key limit (an older calibration file)."""
    if kind not in _NEEDS:
        raise UsageError(f"store model kind: one of {', '.join(_NEEDS)}, got {kind!r}")
    missing = [n for n in _NEEDS[kind] if n not in point]
    if missing:
        raise UsageError(f"store model ({kind}): the parameter point has no {missing[0]!r}")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise UsageError(f"nodes: must be an integer >= 1, got {nodes!r}")
    if kind == "ranges":
        cap = _positive("tablet_ops_per_s", point["tablet_ops_per_s"])
        index_cap, read_cost = _positive("index_append_ops_per_s", point.get("index_append_ops_per_s", cap)), 1.0
    else:
        cap = _positive("node_write_rows_per_s", point["node_write_rows_per_s"])
        index_cap, read_cost = cap, cap / _positive("node_read_rows_per_s", point["node_read_rows_per_s"])
    key = point.get("key_write_ops_per_s")
    key_limit = None if key is None else _positive("key_write_ops_per_s", key)
    if key_limit is not None and kind == "nodes":
        key_limit = min(key_limit, cap)  # one row is served by one node, whatever the cluster
    return ModelParams(kind=kind, capacity=cap, index_capacity=index_cap, key_limit=key_limit,
                       split_threshold_frac=_positive("split_threshold_frac", point["split_threshold_frac"]),
                       split_delay_s=float(point["split_delay_s"]),
                       split_fanout=max(2, round(_positive("split_fanout", point["split_fanout"]))),
                       placement_delay_s=float(point.get("placement_delay_s", 0.0)) if kind == "nodes" else 0.0,
                       read_cost=read_cost, nodes=nodes, scale=_positive("scale", scale),
                       time_scale=_positive("time_scale", time_scale))


class StoreModel:
    """A store's tablets, nodes and per-key limits, offered one operation at a time."""

    def __init__(self, point: Mapping[str, float], *, kind: str, nodes: int = 1, scale: float = 1.0,
                 time_scale: float = 1.0, seed: int = 0) -> None:
        p = self.params = resolve_params(point, kind=kind, nodes=nodes, scale=scale, time_scale=time_scale)
        self.seed = seed  # nothing in the model draws at random: the same offers give the same answers
        self.time_scale = p.time_scale
        self._per_bucket = p.time_scale  # buckets of one model second
        bucket_s = 1.0 / p.time_scale
        window = bucket_s * WINDOW_BUCKETS
        self._rules = {cap: Rules(capacity=cap / p.scale, threshold=p.split_threshold_frac * cap / p.scale,
                                  delay=p.split_delay_s / p.time_scale, fanout=p.split_fanout, bucket_s=bucket_s,
                                  buckets=WINDOW_BUCKETS, placement=p.placement_delay_s / p.time_scale)
                       for cap in {p.capacity, p.index_capacity}}
        self._keys = KeyLimits(p.key_limit / p.scale, window) if p.key_limit is not None else None
        self._key_wait = 1.0 / p.key_limit / p.time_scale if p.key_limit is not None else 0.0
        nodes_kind = p.kind == "nodes"
        self._cause = "node" if nodes_kind else "range"
        self._cluster = RateLimit(p.capacity * p.nodes / p.scale, window) if nodes_kind else None
        self._cluster_load = Tablet(b"", now=0.0, bucket=0, buckets=WINDOW_BUCKETS)
        self._cluster_inv = 1.0 / (window * p.capacity * p.nodes / p.scale)
        self._groups = Groups(p.capacity / p.scale, window) if nodes_kind else None
        self._spaces: dict[str, Space] = {}
        self._now = -math.inf
        self._offered = self._admitted = 0
        self._throttled = {"key": 0, "range": 0, "node": 0}

    @classmethod
    def for_store(cls, spec: StoreSpec, point: Mapping[str, float] | None = None, *, storage: str | None = None,
                  nodes: int = 1, scale: float = 1.0, time_scale: float = 1.0, seed: int = 0) -> StoreModel:
        """The model of a registered store at ``point`` (default: its box's mid point)."""
        if spec.tablets is None:
            raise UsageError(f"{spec.name}: no tablet model to run")
        box = spec.tablets.box(storage)
        assert box.kind is not None
        return cls(box.mid() if point is None else point, kind=box.kind, nodes=nodes, scale=scale,
                   time_scale=time_scale, seed=seed)

    def _space(self, name: str, now: float, bucket: int) -> Space:
        p = self.params
        cap = p.index_capacity if name.startswith("index:") else p.capacity
        space = self._spaces[name] = Space(name, self._rules[cap], now=now, bucket=bucket, mu=cap,
                                           groups=self._groups)
        return space

    def offer(self, op: StoreOp, now: float) -> Decision:
        """Admit or throttle ``op`` at ``now`` (seconds, never decreasing from call to call)."""
        if now < self._now:
            raise ValueError(f"offer: now went back from {self._now} to {now}")
        self._now = now
        bucket = int(now * self._per_bucket)
        keys = self._keys
        if keys is not None and now >= keys.next_sweep:
            keys.sweep(now)
        self._offered += 1
        spaces, read_cost = self._spaces, self.params.read_cost
        touched: list[tuple[Space, Tablet, float]] = []
        total = 0.0
        for a in op.accesses:
            space = spaces.get(a.space) or self._space(a.space, now, bucket)
            cost = a.rows if a.write else a.rows * read_cost
            total += cost
            touched.append((space, space.note(a.key, cost, now, bucket), cost))
        write = op.kind != "read" and bool(op.units)
        cause = "key" if write and keys is not None and not keys.ok(op.units, now) else None
        if cause is None:
            for space, t, _ in touched:
                if t.tat - now > space.tol:
                    cause = self._cause
                    break
        if self._cluster is not None:
            cause = self._nodes(touched, now, bucket, total, cause)
        if cause is not None:
            self._throttled[cause] += 1
            mu = touched[0][0].mu if touched else self.params.capacity
            wait = self._key_wait if cause == "key" else _RHO_CAP / (mu * (1.0 - _RHO_CAP))
            return Decision(False, wait / self.time_scale, cause)
        if write and keys is not None:
            keys.take(op.units, now)
        wait = 0.0
        floor = self._cluster_rho() if self._cluster is not None else 0.0
        for space, t, cost in touched:
            t.tat = (t.tat if t.tat > now else now) + cost / space.rules.capacity
            rho = min(max(t.wsum * space.inv_load, floor), _RHO_CAP)
            w = rho / (space.mu * (1.0 - rho))
            if w > wait:
                wait = w
        self._admitted += 1
        return Decision(True, wait / self.time_scale, None)

    def _nodes(self, touched: list[tuple[Space, Tablet, float]], now: float, bucket: int, total: float,
               cause: str | None) -> str | None:
        """Bigtable's nodes: the cluster's load (every request), its cap and the split pieces' nodes; if
        ``cause`` is still None and all have room, their queues take the operation."""
        load, cluster, groups = self._cluster_load, self._cluster, self._groups
        assert cluster is not None and groups is not None
        if bucket != load.bucket:
            load.roll(bucket, _NEVER)
        load.win[bucket % WINDOW_BUCKETS] += total
        load.wsum += total
        if cause is not None:
            return cause
        pinned = []
        for _, t, cost in touched:
            if t.group >= 0:
                if t.pin_until > now:
                    pinned.append((groups.limits[t.group], cost))
                else:
                    t.group = -1
        if not cluster.ok(now) or not all(limit.ok(now) for limit, _ in pinned):
            return "node"
        cluster.take(now, total)
        for limit, cost in pinned:
            limit.take(now, cost)
        return None

    def _cluster_rho(self) -> float:
        return self._cluster_load.wsum * self._cluster_inv

    def state(self) -> ModelState:
        return ModelState(tablets={name: len(s.tablets) for name, s in self._spaces.items()}, offered=self._offered,
                          admitted=self._admitted, throttled=dict(self._throttled),
                          splits=sum(s.splits for s in self._spaces.values()),
                          units_tracked=len(self._keys) if self._keys is not None else 0)

    def tablets(self) -> int:
        """Tablets over every space (a space not touched yet has none)."""
        return sum(len(s.tablets) for s in self._spaces.values())

    def bounds(self, space: str) -> tuple[bytes, ...]:
        """The split keys of ``space`` (tablet i starts at bounds[i-1]); () if it is one tablet or untouched."""
        s = self._spaces.get(space)
        return tuple(s.bounds) if s is not None else ()


#: Rules for the cluster's load window: it is never "over" (it does not split).
_NEVER = Rules(capacity=1.0, threshold=math.inf, delay=math.inf, fanout=2, bucket_s=1.0, buckets=WINDOW_BUCKETS)
