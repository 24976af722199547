"""Model parameters as ranges, each with where its numbers come from.

Google publishes a few figures (the 500/50/5 ramp, 500 writes/s on a sequential index,
Bigtable's rows/s per node); it does not publish a tablet's capacity, how long a split
takes or into how many pieces. Every parameter is therefore a range ``low … high`` with a
``mid``, the source of each bound, and whether a bigger value helps the store
(``better``). The forecast runs the model at several points of this box and reports the
band of outcomes, never one number.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from keyramp.core import UsageError

__all__ = ["MODEL_KINDS", "PARAM_NAMES", "ParamRange", "ParamSet", "StoreParams", "TabletModel", "load_params_file",
           "param_name"]

#: Each model parameter's name as a reader meets it (docs/keyspace-model.md names each so, next to its
#: key): views say "uncertain (split delay)", never the key ``split_delay_s`` alone.
PARAM_NAMES: Mapping[str, str] = {
    "tablet_ops_per_s": "key-range capacity",
    "index_append_ops_per_s": "index append capacity",
    "split_threshold_frac": "split threshold",
    "split_delay_s": "split delay",
    "split_fanout": "split fan-out",
    "node_write_rows_per_s": "node write capacity",
    "node_read_rows_per_s": "node read capacity",
    "placement_delay_s": "placement delay",
    "retry_reoffer": "retried share",
    "key_write_ops_per_s": "per-key write limit",
    "samples": "sampling",  # not a parameter: a verdict the key samples decide (twice the samples differ)
}


def param_name(key: str) -> str:
    """``split delay`` for ``split_delay_s``; an unknown key (a calibration file's own) as it is."""
    return PARAM_NAMES.get(key, key)

Point = Literal["low", "mid", "high"]


@dataclass(frozen=True, kw_only=True)
class ParamRange:
    """One parameter: ``low <= mid <= high`` in ``unit``; ``source`` is a URL or says why there is none."""

    low: float
    mid: float
    high: float
    unit: str
    source: str
    #: One line: what the bounds rest on.
    note: str
    #: The figure itself is published (not only bounded by, or guessed from, other figures).
    published: bool = False
    #: Which end makes the store look better: "high" (capacity) or "low" (a delay).
    better: Literal["high", "low"] = "high"

    def __post_init__(self) -> None:
        if not self.low <= self.mid <= self.high:
            raise UsageError(
                f"parameter range must satisfy low <= mid <= high, got {self.low}, {self.mid}, {self.high}"
            )

    def at(self, point: Point) -> float:
        return {"low": self.low, "mid": self.mid, "high": self.high}[point]

    def favourable(self) -> float:
        return self.high if self.better == "high" else self.low

    def unfavourable(self) -> float:
        return self.low if self.better == "high" else self.high

    def to_json(self) -> dict[str, Any]:
        return {"low": self.low, "mid": self.mid, "high": self.high, "unit": self.unit, "source": self.source,
                "note": self.note, "published": self.published}


#: One value per parameter: a point of the box.
ParamSet = Mapping[str, float]


#: What the ranges of each model kind must name. ``ranges``: key ranges that split by load and
#: serve ``tablet_ops_per_s`` each (Datastore, Firestore; ``index_append_ops_per_s`` for an
#: index range when the store indexes fields). ``nodes``: a tablet lives on one node of a
#: cluster of ``nodes`` (Bigtable), reads and writes cost a node differently.
MODEL_KINDS: Mapping[str, frozenset[str]] = {
    "ranges": frozenset({"tablet_ops_per_s", "split_threshold_frac", "split_delay_s", "split_fanout"}),
    "nodes": frozenset({"node_write_rows_per_s", "node_read_rows_per_s", "split_threshold_frac", "split_delay_s",
                        "split_fanout"}),
}


@dataclass(frozen=True, kw_only=True)
class StoreParams:
    """The parameter box of one store (and, for Bigtable, one storage type)."""

    store: str
    ranges: Mapping[str, ParamRange]
    #: The model this box drives (``MODEL_KINDS``); None: a box the tablet model cannot run (tests).
    kind: Literal["ranges", "nodes"] | None = None
    #: Where the ranges came from: "defaults (published figures and stated guesses)" or a calibration file.
    origin: str = "defaults"
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = sorted(MODEL_KINDS[self.kind] - set(self.ranges)) if self.kind is not None else []
        if missing:
            raise ValueError(f"{self.store}: a {self.kind!r} model needs the parameter {missing[0]!r}")

    @property
    def capacity_param(self) -> str:
        """What one tablet serves: its own capacity, or its node's."""
        return "tablet_ops_per_s" if self.kind == "ranges" else "node_write_rows_per_s"

    def __iter__(self) -> Iterator[str]:
        return iter(self.ranges)

    def mid(self) -> dict[str, float]:
        return {name: r.mid for name, r in self.ranges.items()}

    def corner(self, *, favourable: bool) -> dict[str, float]:
        return {name: (r.favourable() if favourable else r.unfavourable()) for name, r in self.ranges.items()}

    def varied(self) -> list[str]:
        """Parameters whose range has width (the others cannot move the outcome)."""
        return [name for name, r in self.ranges.items() if r.low < r.high]

    def with_ranges(self, ranges: Mapping[str, ParamRange], *, origin: str) -> StoreParams:
        unknown = sorted(set(ranges) - set(self.ranges))
        if unknown:
            raise UsageError(f"{origin}: unknown parameter {unknown[0]!r} for {self.store} "
                             f"(known: {', '.join(self.ranges)})")
        return replace(self, ranges={**self.ranges, **ranges}, origin=origin)

    def to_json(self) -> dict[str, dict[str, Any]]:
        return {name: r.to_json() for name, r in self.ranges.items()}


@dataclass(frozen=True, kw_only=True)
class TabletModel:
    """A store's tablet-model parameters (``StoreSpec.tablets``): one box per storage type.

    Stores with one kind of storage have one box under ``""``; Bigtable has ``ssd`` and ``hdd``.
    The boxes and the sources of every bound are declared in the store's own spec module.
    """

    boxes: Mapping[str, StoreParams]
    default: str = ""

    @classmethod
    def single(cls, box: StoreParams) -> TabletModel:
        return cls(boxes={"": box})

    def __post_init__(self) -> None:
        if self.default not in self.boxes:
            raise ValueError(f"default storage {self.default!r} has no parameter box")

    @property
    def storage_types(self) -> tuple[str, ...]:
        return tuple(k for k in self.boxes if k)

    def box(self, storage: str | None = None) -> StoreParams:
        key = self.default if storage is None else storage
        if key not in self.boxes:
            raise UsageError(f"storage: one of {', '.join(self.storage_types) or 'none'}, got {storage!r}")
        return self.boxes[key]

    def keyed(self, store: str) -> dict[str, StoreParams]:
        """Boxes under the names calibration files use: ``store``, or ``store-<storage>``."""
        return {(f"{store}-{k}" if k else store): box for k, box in self.boxes.items()}


def _range_from(doc: Any, base: ParamRange, where: str) -> ParamRange:
    if not isinstance(doc, Mapping):
        raise UsageError(f"{where}: must be a table {{low, mid, high, source}}")
    values = []
    for key in ("low", "mid", "high"):
        v = doc.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
            raise UsageError(f"{where}.{key}: must be a number >= 0, got {v!r}")
        values.append(float(v))
    source = doc.get("source")
    if not isinstance(source, str) or not source:
        raise UsageError(f"{where}.source: every parameter needs its source")
    try:
        return replace(base, low=values[0], mid=values[1], high=values[2], source=source,
                       note=str(doc.get("note") or "fitted by keyramp calibrate"), published=False)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None


def load_params_file(path: Path, defaults: Mapping[str, StoreParams]) -> dict[str, StoreParams]:
    """Store parameter boxes with the ranges of a calibration file (``keyramp calibrate`` writes it).

    The file is JSON ``{"schema": 1, "stores": {store: {param: {low, mid, high, source}}}}``;
    parameters it does not name keep their defaults.
    """
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such parameter file") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read parameter file: {exc}") from None
    stores = doc.get("stores") if isinstance(doc, Mapping) else None
    if not isinstance(stores, Mapping) or doc.get("schema") != 1:
        raise UsageError(f"{path}: expected {{\"schema\": 1, \"stores\": {{…}}}}")
    out = dict(defaults)
    for store, params in stores.items():
        if store not in defaults:
            raise UsageError(f"{path}: stores.{store}: unknown store (known: {', '.join(defaults)})")
        if not isinstance(params, Mapping):
            raise UsageError(f"{path}: stores.{store}: must be a table of parameters")
        base = defaults[store]
        ranges = {}
        for name, spec in params.items():
            if name not in base.ranges:
                raise UsageError(f"{path}: stores.{store}.{name}: unknown parameter (known: {', '.join(base.ranges)})")
            ranges[name] = _range_from(spec, base.ranges[name], f"{path}: stores.{store}.{name}")
        out[store] = base.with_ranges(ranges, origin=str(path))
    return out
