"""What differs between stores, declared once per store: ``StoreSpec`` and its parts.

Each store package (``keyramp/backends/<store>/``) declares its spec in ``_spec.py`` and
exports it as ``SPECS``; the registry (``keyramp.backends._registry``) finds the packages,
and the rest of keyramp asks a spec (``spec_for(name)``) instead of naming a store. A spec is
plain data plus a few small functions (emulator command, health check, reset): importing it
must stay cheap, so drivers are named by import path and loaded on first use.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from keyramp.backends._fidelity import ProxySpec
from keyramp.backends._params import TabletModel
from keyramp.core import OP_NAMES, Key, UsageError

if TYPE_CHECKING:
    from keyramp.backends._base import Backend

__all__ = [
    "FEATURES",
    "BatchLimits",
    "CloudSpec",
    "EmulatorSpec",
    "InProcessSpec",
    "KeyRules",
    "Operation",
    "PriceSheet",
    "ResetFn",
    "StoreSpec",
    "WorkloadUserSpec",
]

#: What a store may be unable to do; a spec lists what it lacks (``StoreSpec.lacks``) and why.
FEATURES: Final[Mapping[str, str]] = {
    "server_allocated_keys": "the store allocates ids on insert (server_allocated key strategy)",
    "property_queries": "queries that filter or order on record fields",
    "secondary_indexes": "every field indexed automatically (index fan-out costs write latency)",
    "ancestor_queries": "strongly consistent queries inside one parent key",
    "entity_groups": "a parent key's group is the unit of the write-rate limit (legacy Datastore)",
}

#: One operation of a workload: what a user does for op ``name`` (key, record, backend call);
#: returns the (first) key it touched, for key sampling. ``workload/_ops.py`` holds the shared ones.
#: Its argument is the user's ``keyramp.workload.UserOps``, a layer above the stores (hence ``Any``).
Operation = Callable[[Any], "Key | None"]


class ResetFn(Protocol):
    """Clear an emulator's data between cells (``table``: one Bigtable table, else all)."""

    def __call__(self, endpoint: str, *, project: str, instance: str, table: str | None,
                 timeout_s: float) -> None: ...


@dataclass(frozen=True, kw_only=True)
class EmulatorSpec:
    """How to launch, probe and reset one official emulator (``keyramp.targets._emulators`` runs it)."""

    kind: str
    artifact: str  # path under the SDK root that must exist (jar or binary)
    command: Callable[[Path, str, int, Mapping[str, Any]], list[str]]
    #: ``(endpoint, timeout_s) -> ready?``: polled while the emulator starts, checked on reuse.
    health: Callable[[str, float], bool]
    reset: ResetFn
    env_var: str  # where clients (and `keyramp run`) look for an existing emulator
    compose_port: int  # fixed port of the docker-compose service
    needs_java: bool = False
    #: ``EmulatorManager.up`` options this emulator takes (``consistency``: legacy Datastore).
    options: frozenset[str] = frozenset()


@dataclass(frozen=True, kw_only=True)
class InProcessSpec:
    """A store with no emulator process (it lives in the load process): the endpoint its
    driver is given locally, and how it is cleared before each cell."""

    endpoint: str
    reset: ResetFn


@dataclass(frozen=True, kw_only=True)
class KeyRules:
    """Which keys the store accepts (BP-KEY-10): checked by lint on sampled keys, and by tests."""

    max_key_bytes: int
    #: Numeric ids the store accepts, inclusive, and how a message says it; None: any id ≥ 0.
    int_ids: tuple[int, int] | None = None
    int_ids_text: str = ""
    #: Substrings a string key may not contain (a Datastore name or document id: '/').
    forbidden_chars: tuple[str, ...] = ()
    #: Whole names the store refuses (Firestore document ids '.' and '..').
    forbidden_names: frozenset[str] = frozenset()
    #: Names the store reserves (``__.*__``); also refused as a key strategy's string params.
    reserved: re.Pattern[str] | None = None
    #: Key strategy name -> why the store cannot serve it (beyond what ``lacks`` implies).
    unsupported_strategies: Mapping[str, str] = field(default_factory=dict)

    def problem(self, key: Key | None, store: str) -> str | None:
        """Why ``key`` is not a valid key on ``store``, or ``None`` if it is."""
        if key is None:
            return None
        if isinstance(key, tuple):
            for part in key:
                found = self.problem(part, store)
                if found:
                    return found
            return None
        if isinstance(key, int):
            if self.int_ids is not None and not self.int_ids[0] <= key <= self.int_ids[1]:
                return f"numeric id {key} must be {self.int_ids_text}"
            if key < 0:
                return f"negative id {key}"
            return None
        try:
            size = len(key.encode("utf-8"))
        except UnicodeEncodeError:
            return "key is not valid UTF-8"
        if size == 0:
            return "empty key"
        if size > self.max_key_bytes:
            return f"key is {size} bytes, {store} allows {self.max_key_bytes}"
        for char in self.forbidden_chars:
            if char in key:
                return f"{char!r} in key name {key[:40]!r}"
        if key in self.forbidden_names:
            return f"{key!r} is not a valid document id"
        if self.reserved is not None and self.reserved.fullmatch(key):
            return f"{key[:40]!r} matches the reserved pattern {self.reserved.pattern}"
        return None


@dataclass(frozen=True, kw_only=True)
class BatchLimits:
    """Most entities/rows one ``batch_write`` / ``batch_read`` request may carry (None: no limit)."""

    write: int | None
    read: int | None
    source: str  # where the limit is documented


@dataclass(frozen=True, kw_only=True)
class RecordLimits:
    """What one entity / document / row may hold: a profile's document shape is checked
    against it before any load (None: no such limit)."""

    max_bytes: int | None = None
    #: An indexed string or blob (Datastore rejects longer ones).
    indexed_value_max_bytes: int | None = None
    #: Index entries one write may add (Firestore).
    index_entries_max: int | None = None
    source: str = ""  # where the limits are documented


@dataclass(frozen=True, kw_only=True)
class CloudSpec:
    """How the cloud budget names what a cell writes, and what a cloud profile must supply."""

    writes_under: str  # "Datastore kind", "Bigtable table" …
    #: "database": ``<namespace> (database <id>)``; "instance": the full table path.
    scope: str = "database"
    #: A ``[cloud] instance`` is required (Bigtable).
    needs_instance: bool = False
    #: Reads the clean-up's listing bills per record it deletes (the run cost, ``keyramp run
    #: --plan``): Firestore bills a read per document a projection query returns (1.0); Datastore
    #: mode counts keys-only results as free small operations (0.0).
    listing_reads_per_record: float = 0.0

    def location(self, namespace: str, *, project: str, instance: str, database: str) -> str:
        if self.scope == "instance":
            return f"{self.writes_under} projects/{project}/instances/{instance}/tables/{namespace}"
        where = "" if database == "(default)" else f" (database {database})"
        return f"{self.writes_under} {namespace}{where}"


@dataclass(frozen=True, kw_only=True)
class PriceSheet:
    """Where a store's list prices are: ``file`` (JSON) holds one entry of keyramp's price table
    (docs/plan.md#the-price-table: title, billing, default location, locations and their cited
    prices), which the table keeps under ``name``. Stores billed alike share one sheet (Cloud
    Datastore and Firestore in Datastore mode): the entry's ``backends`` are the specs naming it.
    The forecast layer reads it (``keyramp.forecast.load_prices``)."""

    name: str
    file: Path


@dataclass(frozen=True, kw_only=True)
class WorkloadUserSpec:
    """A store's Python-workload user class, ``keyramp.<name>`` (docs/workloads.md): the runner
    builds it from this (``keyramp.run.user_class``); specs that carry the same one share the class,
    which then serves each of their backends."""

    name: str  # "DatastoreUser": the public class name
    #: Locust's request type in plain ``locust -f`` runs, and how messages name the class's store.
    store: str
    #: The class docstring: what ``self.client`` (the ``client`` driver's official client) and
    #: ``self.namespace`` are on this store.
    doc: str
    #: Attributes a user takes from its driver when it starts, besides ``client`` (Bigtable: ``table``).
    driver_attributes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class StoreSpec:
    """Everything keyramp needs to know about one store (a profile's ``backend = "<name>"``)."""

    name: str
    title: str  # for messages: "Cloud Datastore"
    #: Driver name -> ``Backend`` class or ``"module:Class"`` (loaded on first use). "client"
    #: is the official client library; other drivers (e.g. raw gRPC) add entries.
    drivers: Mapping[str, type[Backend] | str]
    #: The official emulator; ``None`` for a store with no emulator process (cloud-only, or
    #: ``in_process``).
    emulator: EmulatorSpec | None
    in_process: InProcessSpec | None = None
    #: Feature (a ``FEATURES`` key) -> why this store does not have it (one line, for messages).
    lacks: Mapping[str, str] = field(default_factory=dict)
    #: Driver -> document-shape value types (``keys.TYPES``) it cannot write yet: a profile
    #: whose ``workload.document`` uses one is refused before any load.
    driver_lacks: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: Operations the store supports (``workload.ops`` names).
    operations: frozenset[str] = frozenset(OP_NAMES)
    #: Store-specific operations, or replacements of shared ones, by name (``workload/_ops.py``).
    own_operations: Mapping[str, Operation] = field(default_factory=dict)
    batch: BatchLimits
    keys: KeyRules
    records: RecordLimits = field(default_factory=RecordLimits)
    #: Store-specific best-practice rules lint applies (docs/best-practices.md ids): 500/50/5
    #: (BP-RAMP-1) and 500 writes/s an append point (BP-KEY-3) are Datastore's and Firestore's figures.
    rules: frozenset[str] = frozenset()
    #: BP-KEY-1: the rules whose fixes to suggest instead of a monotonic key, best first (rule ids: the
    #: strategies that declare themselves their fix, ``keys.fix_strategies``; readable ones where the
    #: store keeps BP-KEY-8).
    hotspot_fix: tuple[str, ...]
    #: The tablet model's parameter ranges and their sources, one box per storage type (the
    #: launch forecast's; docs/keyspace-model.md); ``None``: no model for this store.
    tablets: TabletModel | None
    cloud: CloudSpec | None
    #: How the store proxy of the store-like target reads this store's requests and answers
    #: the throttled ones (docs/fidelity.md); ``None``: no store-like target for this store.
    proxy: ProxySpec | None = None
    #: Python distributions the drivers use: their versions go into the run manifest.
    client_libraries: tuple[str, ...] = ()
    #: The store's list prices (the launch plan's and a cloud run's cost); ``None``: not priced.
    prices: PriceSheet | None = None
    #: The Python-workload user class (``[workload] user``, ``locust -f``); ``None``: none.
    user: WorkloadUserSpec | None = None
    default_driver: str = "client"
    #: ``(key, namespace) -> key``: a keyramp key in the form this store's official client takes
    #: it (a Python workload's ``self.keys``): the same document/entity/row the drivers write
    #: for that key, in the strategy's order. Default: the key as is.
    workload_key: Callable[[Key, str], Any] = field(default=lambda key, namespace: key)
    #: ``"module:function"`` of the decoder of a Python workload's captured requests (``backends._capture``:
    #: the keys, kinds and index entries its own code sent); None: its ops are sampled by what they return.
    capture: str | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.lacks) - set(FEATURES))
        if unknown:
            raise ValueError(f"{self.name}: unknown feature {unknown[0]!r} in lacks (one of: {', '.join(FEATURES)})")
        if self.default_driver not in self.drivers:
            raise ValueError(f"{self.name}: default driver {self.default_driver!r} is not in drivers")
        if not self.operations <= set(OP_NAMES) | set(self.own_operations):
            extra = sorted(self.operations - set(OP_NAMES) - set(self.own_operations))
            raise ValueError(f"{self.name}: operation {extra[0]!r} is neither shared nor in own_operations")
        if self.emulator is not None and self.in_process is not None:
            raise ValueError(f"{self.name}: a store has an emulator process or lives in-process, not both")

    def has(self, feature: str) -> bool:
        if feature not in FEATURES:
            raise KeyError(feature)
        return feature not in self.lacks

    def why_not(self, feature: str) -> str:
        """The one-line reason this store lacks ``feature``."""
        return self.lacks.get(feature) or f"{self.name} has no {FEATURES[feature]}"

    def driver(self, name: str | None = None) -> type[Backend]:
        """The ``Backend`` class of driver ``name`` (default ``default_driver``), imported now."""
        chosen = self.default_driver if name is None else name
        try:
            ref = self.drivers[chosen]
        except KeyError:
            raise UsageError(f"{self.name}: unknown driver {chosen!r} (one of: {', '.join(self.drivers)})") from None
        if not isinstance(ref, str):
            return ref
        module, _, attr = ref.partition(":")
        cls: type[Backend] = getattr(importlib.import_module(module), attr)
        return cls

    def capture_decoder(self) -> Callable[..., Any] | None:
        """The store's decoder of captured requests (``capture``), imported now; None: the store has none."""
        if self.capture is None:
            return None
        module, _, attr = self.capture.partition(":")
        decoder: Callable[..., Any] = getattr(importlib.import_module(module), attr)
        return decoder

    def workload_problem(self, ops: Mapping[str, float], batch_size: int) -> str | None:
        """Why a workload cannot run on this store (an op it lacks, a batch above its limit), or None."""
        for op in ops:
            if op not in self.operations:
                supported = ", ".join(o for o in OP_NAMES if o in self.operations)
                return f"workload.ops.{op}: {self.name} does not support {op} (it supports: {supported})"
        for op, limit in (("batch_write", self.batch.write), ("batch_read", self.batch.read)):
            if op in ops and limit is not None and batch_size > limit:
                return (f"workload.batch_size: {batch_size} is above {self.name}'s {limit} per {op} "
                        f"({self.batch.source})")
        return None
