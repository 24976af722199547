"""A cell's key-space figures (summary.json ``cells[id].keyspace``) as a results document.

``keyramp.keyspace`` writes it (``summary_entry``): hotspot figures measured on the cell's
sampled keys, the hottest 1 % window in ops/s next to the band one tablet serves (published
figures, modelled), and ``model``, the tablet model of a range-partitioned store run on the
key stream at the test's own rate (modelled; docs/keyspace-model.md). Every field is optional:
a cell with no sampled operations has ``samples: 0`` and little else, and summaries written
before a figure existed simply lack it. Keys this model does not know stay in ``extra``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from keyramp.results._doc import JsonDoc
from keyramp.results._doc import doc as _doc

__all__ = ["CapacityBand", "KeyspaceFigures", "TabletModel", "TabletModelParams", "as_keyspace"]


@dataclass(kw_only=True)
class CapacityBand(JsonDoc):
    """Ops/s one tablet (key range) serves on the store: a band of published figures (modelled)."""

    low: float | None = None
    mid: float | None = None
    high: float | None = None
    source: str | None = None
    modelled: bool | None = None


@dataclass(kw_only=True)
class TabletModelParams(JsonDoc):
    """The tablet model's parameters (``keyspace._tablets.TabletParams``; the store's mid point)."""

    capacity: float | None = field(default=None, metadata=_doc("ops/s one tablet serves before throttling"))
    split_threshold: float | None = None
    split_delay_s: float | None = None
    step_s: float | None = None
    window_s: float | None = None
    min_window_samples: int | None = None
    total_capacity: float | None = field(default=None, metadata=_doc("cluster cap (Bigtable nodes x per-node ops/s)"))
    max_tablets: int | None = None
    split_fanout: int | None = None
    retry: float | None = None
    placement_delay_s: float | None = None


@dataclass(kw_only=True)
class TabletModel(JsonDoc):
    """The tablet model's summary at the test's own rate (every figure modelled)."""

    modelled: bool | None = None
    steps: int | None = None
    step_s: float | None = None
    peak_tablets: int | None = None
    final_tablets: int | None = None
    max_throttled_fraction: float | None = None
    mean_throttled_fraction: float | None = None
    final_throttled_fraction: float | None = None
    max_tablet_load_ops_per_s: float | None = None
    final_max_share: float | None = None
    max_added_latency_ms: float | None = None
    peak_achieved_ops_per_s: float | None = None
    offered_ops_per_s: float | None = field(
        default=None, metadata=_doc("the rate the model ran at (the test's own, not a launch's)"))
    params: TabletModelParams | None = None


@dataclass(kw_only=True)
class KeyspaceFigures(JsonDoc):
    """Hotspot figures measured on a cell's sampled keys, and the modelled tablet summary (``model``)."""

    samples: int | None = field(default=None, metadata=_doc("sampled operations the figures rest on"))
    distinct_keys: int | None = None
    buckets: int | None = None
    time_bins: int | None = None
    hottest_bucket_share: float | None = None
    hottest_1pct_share: float | None = field(
        default=None, metadata=_doc("share of operations on the busiest 1 % of the key range, per time bin"))
    hottest_bucket_share_overall: float | None = None
    gini: float | None = None
    entropy_norm: float | None = None
    append_fraction: float | None = None
    prepend_fraction: float | None = None
    position_time_corr: float | None = None
    moving_hotspot: bool | None = None
    append_points: int | None = field(
        default=None, metadata=_doc("places new keys are appended at (null: they land spread)"))
    range_from: str | None = field(default=None, metadata=_doc("'profile' or 'samples': what the key range is"))
    hottest_1pct_ops_per_s: float | None = None
    tablet_capacity_ops_per_s: CapacityBand | None = None
    hot_window_vs_capacity: str | None = field(
        default=None, metadata=_doc("below the band | within the band | above the band"))
    reference_keys: int | None = None
    range_keys: float | None = None
    model: TabletModel | None = field(default=None, metadata=_doc("the tablet model at the test's rate, modelled"))

    def recorded(self, name: str) -> bool:
        """Whether the figure ``name`` was written, null or not (``append_points: null`` is a
        measurement — the keys land spread — where an absent one is not)."""
        return name in self._keys or getattr(self, name, None) is not None

    @property
    def empty(self) -> bool:
        """No figures: the cell sampled no operations (``samples: 0``), or nothing was written."""
        return self.samples == 0 or not (self._keys or self.to_json())


def as_keyspace(doc: KeyspaceFigures | Mapping[str, Any] | None) -> KeyspaceFigures | None:
    """Key-space figures through the model: a mapping (summary.json's, a JSON twin's) is read at
    this edge (``DocError`` naming the field when it does not read); None stays None."""
    if doc is None or isinstance(doc, KeyspaceFigures):
        return doc
    return KeyspaceFigures.from_json(dict(doc), where="keyspace")
