"""Writes that land on one key: what a per-key limit sees (a document, an entity, an entity group,
a Bigtable row — a key never splits, so no tablet or node helps it).

Google's limits are per unit: about one sustained write a second per Firestore document, per
Datastore entity group (per entity in Datastore mode), and one node's rows/s for a Bigtable row
(``key_write_ops_per_s`` in each store's box). What the launch puts on its hottest units comes
from the same stream as everything else the forecast projects:

* **from the design** (regenerated): writes to existing records pick them by the cell's read
  distribution over the records that exist at each moment of the launch, whose shape each
  distribution declares (``Distribution.over_limit``: a counter — one record — takes every
  write; uniform updates over a million records take a millionth each); inserts that fill an
  entity group in turn (``entity_group_size``) all land on the group being filled;
* **from the recording** (``RecordedKeys``): the units the cell really wrote, each with its share
  of the sampled row accesses, kept when a unit shows up often enough to be told from chance
  (``MIN_HOT``); a share of the cell's writes is the same share of the launch's.

``excess`` is what the units refuse per second; the model throttles it (``_model.run_point``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from keyramp.keys import Distribution

__all__ = ["MIN_HOT", "KeyLoad"]

#: A recorded unit counts as hot when at least this many sampled writes hit it: below that a
#: repeat is chance (a few uuid upserts sampled twice), not a design.
MIN_HOT = 8
#: Instants ``hottest`` looks at.
_PROBES = 64


@dataclass(frozen=True, kw_only=True)
class KeyLoad:
    """The launch's writes per unit.

    ``fixed``: units that take a fixed share of the row accesses as writes (a recording's hot
    units), descending, named in ``names``. ``ranked``: writes to existing records, ``ranked_share``
    of the row accesses, picked by this distribution over the records that exist (``records`` at
    ``grid`` times). ``group``: records per unit (entity groups of consecutive inserts), whose
    inserts (``insert_share`` of the row accesses) fill one unit after another.
    """

    fixed: np.ndarray = field(default_factory=lambda: np.zeros(0))
    names: tuple[str, ...] = ()
    ranked: Distribution | None = None
    ranked_share: float = 0.0
    group: int = 1
    insert_share: float = 0.0
    grid: np.ndarray = field(default_factory=lambda: np.zeros(1))
    records: np.ndarray = field(default_factory=lambda: np.ones(1))
    source: str = "design"
    #: Each unit spread over this many keys (a distributed counter's shards, the planner's fix): a unit
    #: at demand d then refuses (d − shards · limit)⁺ in all, exactly as shards keys at d / shards each.
    shards: int = 1

    @property
    def empty(self) -> bool:
        return not len(self.fixed) and (self.ranked is None or self.ranked_share <= 0) and \
            (self.group <= 1 or self.insert_share <= 0)

    def _records(self, t: np.ndarray) -> np.ndarray:
        return np.maximum(1.0, np.interp(t, self.grid, self.records))

    def excess(self, t: np.ndarray, rows: np.ndarray, limit: float) -> np.ndarray:
        """Writes/s the units refuse at times ``t`` (schedule s) when the launch makes ``rows`` row
        accesses/s there, at ``limit`` writes/s per unit (the same shape as ``t``)."""
        t, rows = np.asarray(t, dtype=np.float64), np.asarray(rows, dtype=np.float64)
        limit = limit * self.shards
        out = np.maximum(0.0, rows[:, None] * self.fixed[None, :] - limit).sum(axis=1) if len(self.fixed) \
            else np.zeros_like(rows)
        if self.ranked is not None and self.ranked_share > 0:
            n = self._records(t)
            writes = rows * self.ranked_share
            if self.group > 1 and self.ranked.name == "uniform":  # n / group units, each its records' picks
                out = out + np.maximum(0.0, writes - np.ceil(n / self.group) * limit)
            else:  # skewed picks: the hot records are scattered, each in its own unit
                out = out + self.ranked.over_limit(n, writes, limit)
        if self.group > 1 and self.insert_share > 0:
            # Inserts fill one group at a time: a second's inserts land on min(rate, group) writes per unit.
            inserts = rows * self.insert_share
            per_unit = np.minimum(inserts, float(self.group))
            with np.errstate(divide="ignore", invalid="ignore"):
                out = out + np.where(per_unit > limit, inserts * (1.0 - limit / per_unit), 0.0)
        return out

    def hottest(self, t: np.ndarray, rows: np.ndarray) -> float:
        """The hottest unit's writes/s at its busiest moment (what decides whether a limit can act)."""
        t, rows = np.asarray(t, dtype=np.float64), np.asarray(rows, dtype=np.float64)
        if len(t) > _PROBES:  # a few instants are enough: the busiest one and a spread of the rest
            keep = np.unique(np.concatenate([np.linspace(0, len(t) - 1, _PROBES).round(), [np.argmax(rows)]]))
            t, rows = t[keep.astype(np.int64)], rows[keep.astype(np.int64)]
        top = rows * (float(self.fixed[0]) if len(self.fixed) else 0.0)
        if self.ranked is not None and self.ranked_share > 0:
            n = self._records(t)
            shares = np.array([self.ranked.hottest(int(x)) for x in n.tolist()])
            if self.group > 1 and self.ranked.name == "uniform":
                shares = np.minimum(1.0, shares * self.group)
            top = np.maximum(top, rows * self.ranked_share * shares)
        if self.group > 1 and self.insert_share > 0:
            top = np.maximum(top, np.minimum(rows * self.insert_share, float(self.group)))
        return float(top.max()) / self.shards if len(top) else 0.0
