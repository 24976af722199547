"""Bigtable: its spec (emulator, limits, key rules, the Bigtable key-design rules, tablet defaults)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from keyramp.backends._emulator import grpc_ready
from keyramp.backends._fidelity import ProxySpec, Throttle
from keyramp.backends._params import ParamRange, StoreParams, TabletModel
from keyramp.backends._spec import (
    BatchLimits,
    CloudSpec,
    EmulatorSpec,
    KeyRules,
    PriceSheet,
    StoreSpec,
    WorkloadUserSpec,
)
from keyramp.backends.bigtable._admin import reset
from keyramp.core import key_text

__all__ = ["BIGTABLE", "BIGTABLE_PROXY", "BIGTABLE_TABLETS", "SPECS"]

_BINARY: Final = "platform/bigtable-emulator/cbtemulator"


def _bigtable_cmd(sdk: Path, host: str, port: int, opts: Mapping[str, Any]) -> list[str]:
    return [str(sdk / _BINARY), "-host", host, "-port", str(port)]


_PERFORMANCE: Final = "https://cloud.google.com/bigtable/docs/performance"
_CPU_TARGETS: Final = "https://cloud.google.com/bigtable/docs/monitoring-instance"
_SCALING: Final = "https://cloud.google.com/bigtable/docs/scaling"
_CLIENT_DOCS: Final = "https://cloud.google.com/python/docs/reference/bigtable/latest"
_SCHEMA: Final = "https://cloud.google.com/bigtable/docs/schema-design"
_HOT_TABLETS: Final = "https://cloud.google.com/bigtable/docs/hot-tablets"
_CLIENT_RETRY: Final = "https://github.com/googleapis/python-bigtable/blob/main/google/cloud/bigtable/data/_async/client.py"


def _box(storage: str, writes: float, reads: float) -> StoreParams:
    """Google's rows/s per node for ``storage`` (1 KB rows), with its CPU targets as the lower bounds."""
    note = (f"up to {writes:,.0f} writes / {reads:,.0f} reads per second per {storage.upper()} node (1 KB rows), "
            f"scaling linearly with nodes ({_PERFORMANCE}); low and mid at Google's 70 % and 90 % CPU targets "
            f"({_CPU_TARGETS})")
    return StoreParams(store=f"bigtable-{storage}", kind="nodes", extra={"storage": storage}, ranges={
        "node_write_rows_per_s": ParamRange(
            low=0.7 * writes, mid=0.9 * writes, high=writes, unit="rows/s per node", source=_PERFORMANCE,
            published=True, better="high", note=note),
        "node_read_rows_per_s": ParamRange(
            low=0.7 * reads, mid=0.9 * reads, high=reads, unit="rows/s per node", source=_PERFORMANCE,
            published=True, better="high", note=note),
        "split_threshold_frac": ParamRange(
            low=0.4, mid=0.5, high=0.6, unit="× node capacity", source="unpublished", better="low",
            note=("unpublished: Bigtable splits busy tablets and moves them between nodes; the trigger is not "
                  "published (the OSDI'06 paper splits by size, 100-200 MB)")),
        "split_delay_s": ParamRange(
            low=30.0, mid=120.0, high=300.0, unit="s", source="unpublished", better="low",
            note=("unpublished: how long a busy tablet takes to split; a guess of the same order as Firestore's "
                  "(moving the pieces to other nodes is placement_delay_s)")),
        "placement_delay_s": ParamRange(
            low=0.0, mid=300.0, high=1200.0, unit="s", source=_SCALING, better="low",
            note=("the upper bound is published: after nodes are added 'it can take up to 20 minutes under load' "
                  "before performance improves while Bigtable rebalances; here the pieces of a split serve from "
                  "their parent's node for that long; 0 and 300 s are guesses")),
        "retry_reoffer": ParamRange(
            low=0.0, mid=0.5, high=0.67, unit="share of throttled requests sent again", source=_CLIENT_DOCS,
            better="low",
            note=("unpublished as a number: an overloaded node queues requests until DEADLINE_EXCEEDED, which "
                  "clients retry; 0: the client gives up; 0.67: the Python data client's defaults (20-s attempts "
                  f"within a 60-s operation: up to 3 attempts; {_CLIENT_RETRY})")),
        "split_fanout": ParamRange(
            low=2.0, mid=2.0, high=4.0, unit="pieces", source="unpublished", better="high",
            note="unpublished: the Bigtable paper splits in two; 2-4 pieces per split is a wide guess"),
        "key_write_ops_per_s": ParamRange(
            low=1000.0, mid=5000.0, high=writes, unit="writes/s per row", source=_SCHEMA, better="high",
            note=("unpublished as a number: Google says not to update a single row key for a value that changes "
                  f"often ({_SCHEMA}, BP-KEY-9); a tablet narrows down to one row at most ({_HOT_TABLETS}: a hot "
                  f"tablet's start and end key can be one row), so one node serves a row and its published "
                  f"{writes:,.0f} write rows/s per node is the upper bound, whatever the cluster's size; one row's "
                  "mutations apply in order (row-level atomicity), so 1,000-5,000 below it is a wide stated guess. "
                  "ReadModifyWriteRow (increments) are writes")),
    })


#: The tablet model's parameters per storage type (the launch forecast's boxes; a tablet is
#: served by one node, so it takes at most one node's rows/s; the cluster takes ``nodes`` of them).
BIGTABLE_TABLETS: Final = TabletModel(boxes={"ssd": _box("ssd", 14_000.0, 17_000.0),
                                             "hdd": _box("hdd", 10_000.0, 500.0)}, default="ssd")

#: What Bigtable answers when a node is overloaded: it queues the request (latency; "Hot tablets")
#: until the client's deadline passes, DEADLINE_EXCEEDED ("Status codes": "a server could delay a
#: successful response long enough for the deadline to expire").
_STATUS_CODES: Final = "https://cloud.google.com/bigtable/docs/status-codes"
_DEADLINE: Final = Throttle(code="DEADLINE_EXCEEDED", message="Deadline Exceeded", source=_STATUS_CODES)
BIGTABLE_PROXY: Final = ProxySpec(
    decoder="keyramp.backends.bigtable._decode:rpcs",
    throttle={cause: _DEADLINE for cause in ("node", "key", "range")},
    deadline=_DEADLINE,
    notes={"latency": _HOT_TABLETS})

BIGTABLE = StoreSpec(
    name="bigtable",
    title="Bigtable",
    drivers={"client": "keyramp.backends.bigtable._client:BigtableBackend",
             "grpc": "keyramp.backends.bigtable._grpc:BigtableGrpcBackend"},
    # The raw-gRPC driver writes one cell per field: it does not flatten maps as the client driver does.
    driver_lacks={"grpc": frozenset({"map"})},
    emulator=EmulatorSpec(
        kind="bigtable", artifact=_BINARY, command=_bigtable_cmd, health=grpc_ready, reset=reset,
        env_var="BIGTABLE_EMULATOR_HOST", compose_port=8086),
    lacks={
        "server_allocated_keys": "Bigtable has no server-allocated row keys",
        "property_queries": "Bigtable has no queries over properties (row-range scans only)",
        "secondary_indexes": "Bigtable has no secondary indexes",
        "ancestor_queries": "Bigtable has no ancestor queries (row keys are flat)",
        "entity_groups": "Bigtable has no entity groups (rows are the unit of atomicity)",
    },
    # A MutateRows request carries at most 100,000 mutations (each field of a row is one).
    batch=BatchLimits(write=100_000, read=None, source="Bigtable limits: 100,000 mutations per MutateRows"),
    keys=KeyRules(max_key_bytes=4096),
    rules=frozenset({"BP-KEY-5", "BP-KEY-6", "BP-KEY-7", "BP-KEY-8", "BP-KEY-9", "BP-SIZE-1", "BP-SIZE-3"}),
    hotspot_fix=("BP-KEY-5", "BP-KEY-7"),
    workload_key=lambda key, namespace: key_text(key).encode(),  # the row key the drivers write
    tablets=BIGTABLE_TABLETS,
    proxy=BIGTABLE_PROXY,
    cloud=CloudSpec(writes_under="Bigtable table", scope="instance", needs_instance=True),
    client_libraries=("google-cloud-bigtable",),
    prices=PriceSheet(name="bigtable", file=Path(__file__).with_name("prices.json")),
    user=WorkloadUserSpec(
        name="BigtableUser", store="bigtable", driver_attributes=("table",),
        doc=("``self.client``: ``google.cloud.bigtable.data.BigtableDataClient``; ``self.table``: the cell's\n"
             "table on it (family ``cf``); ``self.namespace``: the table id.")),
    capture="keyramp.backends.bigtable._capture:decode",
)

SPECS: Final = (BIGTABLE,)
