"""Cloud Datastore (legacy emulator) and Firestore in Datastore mode: one spec each.

Both speak the Datastore API through the same driver; they differ in their emulator
(Firestore in Datastore mode is the Firestore emulator started with
``--database-mode=datastore-mode``), in entity groups (legacy Datastore only) and in
which Firestore-mode rules apply.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from keyramp.backends._emulator import http_ok, http_reset, java_command
from keyramp.backends._fidelity import ProxySpec, Throttle
from keyramp.backends._params import ParamRange, StoreParams, TabletModel
from keyramp.backends._spec import (
    BatchLimits,
    CloudSpec,
    EmulatorSpec,
    KeyRules,
    PriceSheet,
    RecordLimits,
    ResetFn,
    StoreSpec,
    WorkloadUserSpec,
)
from keyramp.backends.firestore._spec import (
    CONTENTION,
    FIRESTORE_JAR,
    FIRESTORE_TABLETS,
    firestore_emulator_command,
)
from keyramp.core import Key

__all__ = ["DATASTORE", "FIRESTORE_DATASTORE", "SPECS", "datastore_key", "parent_kind"]

_DRIVER: Final = "keyramp.backends.datastore._client:"
_GRPC: Final = "keyramp.backends.datastore._grpc:"
_JAR: Final = "platform/cloud-datastore-emulator/CloudDatastore.jar"
#: Both databases refuse '/' in a name and reserve __.*__; numeric ids are 1 .. 2^63-1.
_KEYS: Final = KeyRules(max_key_bytes=1500, int_ids=(1, (1 << 63) - 1), int_ids_text="between 1 and 2^63-1",
                        forbidden_chars=("/",), reserved=re.compile(r"__.*__", re.DOTALL))
_BATCH: Final = BatchLimits(write=500, read=1000,
                            source="Datastore limits: 500 entities per commit, 1,000 keys per lookup")
_LIBRARIES: Final = ("google-cloud-datastore",)
#: Both are billed alike (Datastore mode's pricing page), and one user class serves both.
_PRICES: Final = PriceSheet(name="datastore", file=Path(__file__).with_name("prices.json"))
_USER: Final = WorkloadUserSpec(
    name="DatastoreUser", store="datastore",
    doc=("``self.client``: ``google.cloud.datastore.Client``; ``self.namespace``: the cell's kind.\n"
         "Serves ``backend = \"datastore\"`` and ``\"firestore-datastore\"``."))


def _datastore_cmd(sdk: Path, host: str, port: int, opts: Mapping[str, Any]) -> list[str]:
    base = java_command(sdk, _JAR, "com.google.cloud.datastore.emulator.CloudDatastore")
    consistency = opts.get("consistency")
    return [*base, "start", f"--host={host}", f"--port={port}", "--store_on_disk=false",
            f"--consistency={1.0 if consistency is None else consistency}"]


def parent_kind(kind: str) -> str:
    """The kind of a cell's entity-group parents (ancestor keys): ``<kind>_parent``."""
    return f"{kind}_parent"


def datastore_key(key: Key, kind: str) -> int | str | tuple[str, int | str, str, int | str]:
    """A keyramp key as the Datastore client takes it: an id (int) or a name (str) for
    ``client.key(kind, key)``, an entity-group child as its ancestor path for ``client.key(*path)``."""
    if isinstance(key, tuple):
        parent, child = key
        return (parent_kind(kind), parent, kind, child)
    return key


_RAMP: Final = "https://cloud.google.com/datastore/docs/best-practices#ramping_up_traffic"
_ERRORS: Final = "https://cloud.google.com/datastore/docs/concepts/errors"
_INDEX_HOTSPOT: Final = "https://cloud.google.com/datastore/docs/keyvis-patterns-index"
_GROUPS: Final = "https://cloud.google.com/datastore/docs/concepts/structuring_for_strong_consistency"
_BEST_PRACTICES: Final = "https://cloud.google.com/datastore/docs/best-practices"
_TROUBLESHOOTING: Final = "https://cloud.google.com/datastore/docs/troubleshooting"

#: What one unit sustains, per store: Datastore limits an entity group, Datastore mode an entity.
_KEY_LIMITS: Final = {
    "datastore": ParamRange(
        low=1.0, mid=1.0, high=5.0, unit="writes/s per entity group", source=_GROUPS, published=True, better="high",
        note=("published: 'the write throughput for any single entity group is limited to about one commit per "
              f"second' ({_GROUPS}); a batch or a transaction counts as one write to each group it touches "
              "(BP-RATE-1). The high end is a stated guess ('about')")),
    "firestore-datastore": ParamRange(
        low=1.0, mid=1.0, high=10.0, unit="writes/s per entity", source=_BEST_PRACTICES, published=True,
        better="high",
        note=("published as a rule: Datastore mode limits writes per entity, not per entity group; its best "
              "practices warn that updating one entity too rapidly causes contention (latency, timeouts, ABORTED "
              f"'too much contention': {_TROUBLESHOOTING}), which a load test may not show because one entity's rate "
              f"can exceed one per second ({_BEST_PRACTICES}, entity updates): 1 write/s as Firestore's documents; the "
              "high end is a stated guess")),
}


def _tablets(store: str) -> TabletModel:
    """Firestore's box with Datastore's sources: Datastore mode (and the legacy Datastore, since
    its upgrade) runs on Firestore's storage layer, and Google gives the same 500/50/5 ramp."""
    fs = FIRESTORE_TABLETS.box()
    ranges = dict(fs.ranges)
    for name in ("split_threshold_frac", "split_delay_s"):
        ranges[name] = dataclasses.replace(ranges[name], source=_RAMP)
    ranges["retry_reoffer"] = dataclasses.replace(ranges["retry_reoffer"], source=_ERRORS)
    ranges["key_write_ops_per_s"] = _KEY_LIMITS[store]
    index = ranges["index_append_ops_per_s"]
    ranges["index_append_ops_per_s"] = dataclasses.replace(
        index, note=index.note + f" (a Firestore page; Datastore mode's docs show the same index hotspot without a "
                                 f"number: {_INDEX_HOTSPOT})")
    return TabletModel.single(StoreParams(store=store, kind=fs.kind, ranges=ranges))


def _post_reset(kind: str) -> ResetFn:
    """``POST /reset`` clears every project. The Firestore emulator in datastore-mode answers
    the native DELETE endpoint with 500 ("Delete endpoint not yet supported", SDK 528) but
    supports ``POST /reset`` like the legacy emulator (checked in tests)."""

    def reset(endpoint: str, *, project: str, instance: str, table: str | None, timeout_s: float) -> None:
        http_reset(kind, endpoint, "/reset", method="POST", timeout_s=timeout_s)

    return reset


#: What Datastore answers an operation it throttles (its troubleshooting page): an entity or entity
#: group written too often, and traffic beyond 500/50/5 or on a hotspot, are both ABORTED with
#: "Too much contention on these datastore entities"; a wait past the deadline, DEADLINE_EXCEEDED.


def _proxy(decoder: str) -> ProxySpec:
    contention = Throttle(code="ABORTED", message=CONTENTION, source=_TROUBLESHOOTING)
    return ProxySpec(decoder=f"keyramp.backends.datastore._decode:{decoder}",
                     throttle={"key": contention, "range": contention},
                     deadline=Throttle(code="DEADLINE_EXCEEDED", message="A deadline was exceeded on the server.",
                                       source=_TROUBLESHOOTING))


#: The raw-gRPC driver encodes scalars only (its ``value_pb``); the client driver writes all.
_GRPC_LACKS: Final = {"grpc": frozenset({"timestamp", "array", "map"})}
_RECORDS = RecordLimits(max_bytes=1_048_572, indexed_value_max_bytes=1500,
                        source="Datastore limits: an entity ≤ 1,048,572 bytes, an indexed string or blob ≤ 1,500 bytes")

DATASTORE = StoreSpec(
    name="datastore",
    title="Cloud Datastore",
    drivers={"client": _DRIVER + "DatastoreBackend", "grpc": _GRPC + "DatastoreGrpcBackend"},
    emulator=EmulatorSpec(
        kind="datastore", artifact=_JAR, command=_datastore_cmd, health=http_ok, reset=_post_reset("datastore"),
        env_var="DATASTORE_EMULATOR_HOST", compose_port=8081, needs_java=True, options=frozenset({"consistency"})),
    batch=_BATCH,
    keys=_KEYS,
    records=_RECORDS,
    driver_lacks=_GRPC_LACKS,
    rules=frozenset({"BP-RAMP-1", "BP-KEY-3", "BP-RATE-1"}),
    hotspot_fix=("BP-KEY-2", "BP-KEY-1", "BP-KEY-3"),
    workload_key=datastore_key,
    tablets=_tablets("datastore"),
    proxy=_proxy("rpcs_with_groups"),
    cloud=CloudSpec(writes_under="Datastore kind"),
    client_libraries=_LIBRARIES,
    prices=_PRICES,
    user=_USER,
    capture="keyramp.backends.datastore._capture:decode",
)

FIRESTORE_DATASTORE = StoreSpec(
    name="firestore-datastore",
    title="Firestore in Datastore mode",
    drivers={"client": _DRIVER + "FirestoreDatastoreBackend", "grpc": _GRPC + "FirestoreDatastoreGrpcBackend"},
    emulator=EmulatorSpec(
        kind="firestore-datastore",
        artifact=FIRESTORE_JAR, command=firestore_emulator_command("datastore-mode"), health=http_ok,
        reset=_post_reset("firestore-datastore"), env_var="KEYRAMP_FIRESTORE_DATASTORE_EMULATOR_HOST",
        compose_port=8083, needs_java=True),
    lacks={"entity_groups": "Firestore in Datastore mode limits writes per entity, not per entity group"},
    batch=_BATCH,
    # Document ids '.' and '..' are refused in Datastore mode too.
    keys=dataclasses.replace(_KEYS, forbidden_names=frozenset({".", ".."})),
    records=_RECORDS,
    driver_lacks=_GRPC_LACKS,
    rules=frozenset({"BP-RAMP-1", "BP-KEY-3", "BP-RATE-1", "BP-RATE-2"}),
    hotspot_fix=("BP-KEY-2", "BP-KEY-1", "BP-KEY-3"),
    workload_key=datastore_key,
    tablets=_tablets("firestore-datastore"),
    proxy=_proxy("rpcs_per_entity"),
    cloud=CloudSpec(writes_under="Datastore-mode kind"),
    client_libraries=_LIBRARIES,
    prices=_PRICES,
    user=_USER,
    capture="keyramp.backends.datastore._capture:decode",
)

SPECS: Final = (DATASTORE, FIRESTORE_DATASTORE)
