"""What the per-operation store model is offered and what it answers (docs/keyspace-model.md,
"The per-operation reference model").

An operation is the key spaces it loads (``Access``: the documents or rows, each index entry a
write creates) and the units whose per-key write limit it spends (``StoreOp.units``: the
document, entity, entity group or row; a batch or a transaction lists each unit once). The
model admits it or throttles it (``Decision``), with the cause the store would give.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["CAUSES", "OP_KINDS", "Access", "Decision", "ModelParams", "ModelState", "StoreOp"]

#: Why an operation was throttled: a unit over its per-key write limit (contention), a key range
#: (tablet) over its capacity, a Bigtable node (the tablet's, a split's parent's, the cluster) over its.
CAUSES: Final = ("key", "range", "node")
#: ``transform``: field transforms, increments, Bigtable's ReadModifyWriteRow (writes for per-key limits).
OP_KINDS: Final = frozenset({"read", "write", "delete", "transform"})


@dataclass(frozen=True, slots=True)
class Access:
    """One ordered key space an operation loads.

    ``space``: ``"documents"`` (document / entity paths in store order), ``"index:<name>"`` (the
    entries a write adds to an index: encoded value + document key), ``"rows"`` (Bigtable row
    keys). ``key``: bytes in the store's order. ``rows``: how many consecutive keys from ``key``
    (a scan, or rows a batch puts on one key).
    """

    space: str
    key: bytes
    write: bool
    rows: int = 1


@dataclass(frozen=True, slots=True)
class StoreOp:
    """One request as the store sees it: the key spaces it loads and the units it writes."""

    accesses: tuple[Access, ...]
    units: tuple[bytes, ...] = ()
    kind: str = "write"

    def __post_init__(self) -> None:
        if self.kind not in OP_KINDS:
            raise ValueError(f"StoreOp.kind: one of {', '.join(sorted(OP_KINDS))}, got {self.kind!r}")


@dataclass(frozen=True, slots=True)
class Decision:
    """The model's answer: admitted or throttled (``cause`` one of ``CAUSES``), and after how long.

    ``delay_s``: for an admitted operation, the modelled queueing wait; for a throttled one, how
    long the store queued it before answering. Both on the caller's clock (÷ ``time_scale``).
    """

    admitted: bool
    delay_s: float
    cause: str | None


@dataclass(frozen=True, kw_only=True)
class ModelParams:
    """The parameter point a model runs, resolved: published units, before ``scale``/``time_scale``."""

    kind: str  # "ranges" | "nodes"
    capacity: float  # ops/s a tablet serves (ranges), write rows/s a node serves (nodes)
    index_capacity: float  # ops/s an index tablet serves (ranges; = capacity for nodes)
    key_limit: float | None  # writes/s one unit sustains (None: not modelled)
    split_threshold_frac: float
    split_delay_s: float
    split_fanout: int
    placement_delay_s: float
    read_cost: float  # what a read row costs a tablet, in writes (Bigtable: node_write / node_read)
    nodes: int
    scale: float
    time_scale: float

    @property
    def cluster(self) -> float | None:
        """Write rows/s the cluster serves (nodes), or None (ranges: no cluster cap)."""
        return self.capacity * self.nodes if self.kind == "nodes" else None

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, kw_only=True)
class ModelState:
    """A read-only view of the model: tablets per space, and what it has answered."""

    tablets: Mapping[str, int]
    offered: int
    admitted: int
    throttled: Mapping[str, int] = field(default_factory=dict)  # cause -> operations
    splits: int = 0
    #: units with a write still inside their per-key limit's window (the rest are forgotten)
    units_tracked: int = 0

    @property
    def throttled_total(self) -> int:
        return sum(self.throttled.values())

    def to_json(self) -> dict[str, Any]:
        return {"tablets": dict(self.tablets), "offered": self.offered, "admitted": self.admitted,
                "throttled": dict(self.throttled), "splits": self.splits, "units_tracked": self.units_tracked}
