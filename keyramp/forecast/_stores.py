"""Per-store parameter ranges and their sources (docs/keyspace-model.md lists them all).

One place for now; issue 22 moves each store's values into its ``StoreSpec`` in
``keyramp/backends/<store>/`` once those land.
"""

from __future__ import annotations

from typing import Final

from keyramp._errors import UsageError
from keyramp.forecast._params import ParamRange, StoreParams

__all__ = ["SOURCES", "STORES", "STORAGE_TYPES", "SERVERLESS", "store_key", "store_params", "tablet_capacity_band"]

#: Where the numbers come from (Google's pages; confirmed while writing the model).
SOURCES: Final = {
    "firestore_ramp": "https://cloud.google.com/firestore/docs/best-practices#ramping_up_traffic",
    "datastore_ramp": "https://cloud.google.com/datastore/docs/best-practices#ramping_up_traffic",
    "shard_timestamp": "https://firebase.google.com/docs/firestore/solutions/shard-timestamp",
    "datastore_index_hotspot": "https://cloud.google.com/datastore/docs/keyvis-patterns-index",
    "bigtable_performance": "https://cloud.google.com/bigtable/docs/performance",
    "bigtable_cpu": "https://cloud.google.com/bigtable/docs/monitoring-instance",
    "bigtable_scaling": "https://cloud.google.com/bigtable/docs/scaling",
}

SERVERLESS: Final = frozenset({"datastore", "firestore", "firestore-datastore"})
STORAGE_TYPES: Final = ("ssd", "hdd")


def _serverless(store: str, ramp: str) -> StoreParams:
    shard = SOURCES["shard_timestamp"]
    index_note = ("published limit: a collection with a sequential indexed field takes 500 writes/s, 500·n with "
                  "n shards")
    if store != "firestore":
        index_note += (" (a Firestore page; Datastore mode runs on Firestore's storage, and its own docs show the "
                       f"same index hotspot without a number: {SOURCES['datastore_index_hotspot']})")
    return StoreParams(store=store, ranges={
        "tablet_ops_per_s": ParamRange(
            low=500.0, mid=1000.0, high=2000.0, unit="ops/s", source=shard, better="high",
            note=("unpublished: the only per-range figure Google gives is the 500 writes/s of one sequential "
                  "index range, so 500 is the floor; 1,000-2,000 is a stated guess")),
        "index_append_ops_per_s": ParamRange(
            low=500.0, mid=500.0, high=500.0, unit="writes/s", source=shard, published=True, better="high",
            note=index_note),
        "split_threshold_frac": ParamRange(
            low=0.4, mid=0.5, high=0.6, unit="× tablet capacity", source=ramp, better="low",
            note=("unpublished: load-based splits are documented, their trigger is not; below 1/1.5 of capacity "
                  "(with a margin for uneven splits) so that a range under the trigger stays under capacity "
                  "after a +50 % step (500/50/5)")),
        "split_delay_s": ParamRange(
            low=30.0, mid=120.0, high=240.0, unit="s", source=ramp, better="low",
            note=("unpublished: +50 % every 5 minutes (500/50/5) implies a hot range splits well within 5 "
                  "minutes; 30 s is a guess (splits are 'not instantaneous')")),
        "split_fanout": ParamRange(
            low=2.0, mid=2.0, high=4.0, unit="pieces", source="unpublished", better="high",
            note="unpublished: the Bigtable paper splits in two; 2-4 pieces per split is a wide guess"),
    })


def _bigtable(storage: str) -> StoreParams:
    perf, cpu = SOURCES["bigtable_performance"], SOURCES["bigtable_cpu"]
    writes, reads = (14_000.0, 17_000.0) if storage == "ssd" else (10_000.0, 500.0)
    cpu_note = (f"up to {writes:,.0f} writes / {reads:,.0f} reads per second per {storage.upper()} node "
                f"(1 KB rows), scaling linearly with nodes ({perf}); low and mid at Google's 70 % and 90 % CPU "
                f"targets ({cpu})")
    return StoreParams(store=f"bigtable-{storage}", ranges={
        "node_write_rows_per_s": ParamRange(
            low=0.7 * writes, mid=0.9 * writes, high=writes, unit="rows/s per node", source=perf, published=True,
            better="high", note=cpu_note),
        "node_read_rows_per_s": ParamRange(
            low=0.7 * reads, mid=0.9 * reads, high=reads, unit="rows/s per node", source=perf, published=True,
            better="high", note=cpu_note),
        "split_threshold_frac": ParamRange(
            low=0.4, mid=0.5, high=0.6, unit="× node capacity", source="unpublished", better="low",
            note=("unpublished: Bigtable splits busy tablets and moves them between nodes; the trigger is not "
                  "published (the OSDI'06 paper splits by size, 100-200 MB)")),
        "split_delay_s": ParamRange(
            low=60.0, mid=300.0, high=1200.0, unit="s", source=SOURCES["bigtable_scaling"], better="low",
            note=("unpublished for splits; 'up to 20 minutes under load' is Google's figure for rebalancing after "
                  "nodes are added, used as the upper bound; 60 s is a guess")),
        "split_fanout": ParamRange(
            low=2.0, mid=2.0, high=4.0, unit="pieces", source="unpublished", better="high",
            note="unpublished: the Bigtable paper splits in two; 2-4 pieces per split is a wide guess"),
    }, extra={"storage": storage})


#: Store key -> default parameter box. Bigtable's depends on the storage type.
STORES: Final[dict[str, StoreParams]] = {
    "datastore": _serverless("datastore", SOURCES["datastore_ramp"]),
    "firestore": _serverless("firestore", SOURCES["firestore_ramp"]),
    "firestore-datastore": _serverless("firestore-datastore", SOURCES["datastore_ramp"]),
    "bigtable-ssd": _bigtable("ssd"),
    "bigtable-hdd": _bigtable("hdd"),
}


def store_key(backend: str, storage: str | None = None) -> str:
    if backend == "bigtable":
        storage = storage or "ssd"
        if storage not in STORAGE_TYPES:
            raise UsageError(f"storage: one of {', '.join(STORAGE_TYPES)}, got {storage!r}")
        return f"bigtable-{storage}"
    if backend not in SERVERLESS:
        raise UsageError(f"no forecast model for backend {backend!r}")
    return backend


def store_params(backend: str, storage: str | None = None, *,
                 boxes: dict[str, StoreParams] | None = None) -> StoreParams:
    """The parameter box for ``backend`` (and Bigtable ``storage``), from ``boxes`` (a calibration) or the defaults."""
    return (boxes or STORES)[store_key(backend, storage)]


def tablet_capacity_band(backend: str, storage: str | None = None) -> ParamRange:
    """What one key range (tablet) serves, ops/s: the band measured hot windows are held against."""
    box = store_params(backend, storage)
    return box.ranges["tablet_ops_per_s" if backend in SERVERLESS else "node_write_rows_per_s"]
