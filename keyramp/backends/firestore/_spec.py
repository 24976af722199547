"""Firestore (native mode): its spec, and the Firestore emulator command (also used, in
datastore-mode, by Firestore in Datastore mode)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
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
    StoreSpec,
    WorkloadUserSpec,
)
from keyramp.core import key_text

__all__ = [
    "CONTENTION",
    "COUNTERS",
    "DEADLINE",
    "FIRESTORE",
    "FIRESTORE_ERRORS",
    "FIRESTORE_JAR",
    "FIRESTORE_TABLETS",
    "SHARD_TIMESTAMP",
    "SPECS",
    "firestore_emulator_command",
]

FIRESTORE_JAR: Final = "platform/cloud-firestore-emulator/cloud-firestore-emulator.jar"


def firestore_emulator_command(mode: str | None) -> Callable[[Path, str, int, Mapping[str, Any]], list[str]]:
    """The Firestore emulator's command line, in ``mode`` (``--database-mode``) if given."""

    def command(sdk: Path, host: str, port: int, opts: Mapping[str, Any]) -> list[str]:
        base = java_command(sdk, FIRESTORE_JAR, "com.google.cloud.datastore.emulator.firestore.CloudFirestore")
        cmd = [*base, "--host", host, "--port", str(port)]
        return [*cmd, f"--database-mode={mode}"] if mode else cmd

    return command


def _reset(endpoint: str, *, project: str, instance: str, table: str | None, timeout_s: float) -> None:
    """Delete every document of the project's default database (the emulator's own endpoint)."""
    http_reset("firestore", endpoint, f"/emulator/v1/projects/{project}/databases/(default)/documents",
               method="DELETE", timeout_s=timeout_s)


#: The one per-range figure Google publishes: a sequential indexed field takes 500 writes/s.
SHARD_TIMESTAMP: Final = "https://firebase.google.com/docs/firestore/solutions/shard-timestamp"
_RAMP: Final = "https://cloud.google.com/firestore/docs/best-practices#ramping_up_traffic"
_ERRORS: Final = "https://cloud.google.com/firestore/docs/understand-error-codes"
_CLIENT_RETRY: Final = "https://github.com/googleapis/python-firestore/blob/main/google/cloud/firestore_v1/"
#: One document's sustained write rate: the distributed-counters solution and its extension's page.
COUNTERS: Final = "https://firebase.google.com/docs/firestore/solutions/counters"
_COUNTER_EXTENSION: Final = "https://firebase.google.com/products/extensions/firestore-counter"
_BEST_PRACTICES: Final = "https://cloud.google.com/firestore/docs/best-practices"

#: The tablet model's parameters (the launch forecast's box; docs/keyspace-model.md): each a
#: range, each bound with its source. What Google does not publish is a stated, wide guess.
FIRESTORE_TABLETS: Final = TabletModel.single(StoreParams(store="firestore", kind="ranges", ranges={
    "tablet_ops_per_s": ParamRange(
        low=500.0, mid=1000.0, high=2000.0, unit="ops/s", source=SHARD_TIMESTAMP, better="high",
        note=("unpublished: the only per-range figure Google gives is the 500 writes/s of one sequential "
              "index range, so 500 is the floor; 1,000-2,000 is a stated guess")),
    "index_append_ops_per_s": ParamRange(
        low=500.0, mid=500.0, high=500.0, unit="writes/s", source=SHARD_TIMESTAMP, published=True, better="high",
        note="published limit: a collection with a sequential indexed field takes 500 writes/s, 500·n with n shards"),
    "key_write_ops_per_s": ParamRange(
        low=1.0, mid=1.0, high=10.0, unit="writes/s per document", source=COUNTERS, published=True, better="high",
        note=("published: 'Cloud Firestore has a limit of one sustained write per second, per document' "
              f"({_COUNTER_EXTENSION}); a distributed counter with n shards takes n times the writes ({COUNTERS}). "
              "The high end is a stated guess: Google now says the rate one document sustains depends on the "
              f"write rate, contention and the indexes a write touches, and asks for a load test ({_BEST_PRACTICES}, "
              "'Updates to a single document'; BP-RATE-3). Field transforms (increments) are writes")),
    "split_threshold_frac": ParamRange(
        low=0.4, mid=0.5, high=0.6, unit="× tablet capacity", source=_RAMP, better="low",
        note=("unpublished: load-based splits are documented, their trigger is not; below 1/1.5 of capacity "
              "(with a margin for uneven splits) so that a range under the trigger stays under capacity "
              "after a +50 % step (500/50/5)")),
    "split_delay_s": ParamRange(
        low=30.0, mid=120.0, high=240.0, unit="s", source=_RAMP, better="low",
        note=("unpublished: +50 % every 5 minutes (500/50/5) implies a hot range splits well within 5 "
              "minutes; 30 s is a guess (splits are 'not instantaneous')")),
    "split_fanout": ParamRange(
        low=2.0, mid=2.0, high=4.0, unit="pieces", source="unpublished", better="high",
        note="unpublished: the Bigtable paper splits in two; 2-4 pieces per split is a wide guess"),
    "retry_reoffer": ParamRange(
        low=0.0, mid=0.5, high=0.8, unit="share of throttled requests sent again", source=_ERRORS, better="low",
        note=("unpublished as a number: an overloaded range answers ABORTED (traffic beyond 500/50/5, hotspots), "
              "RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED, and Google asks clients to retry with exponential backoff; "
              "0: the client gives up (keyramp's own runs, no_retry); 0.8: up to 5 attempts, the Python client's "
              f"transaction default for ABORTED ({_CLIENT_RETRY}base_transaction.py MAX_ATTEMPTS); a request "
              "sent again lands in the next 10-s step")),
}))

#: What Firestore answers an operation it throttles ("Understand error codes"): too many writes to
#: one document -> ABORTED, contention; a range whose traffic outgrew the ramp -> RESOURCE_EXHAUSTED,
#: "the ramp up limit for writes"; a wait past the deadline -> DEADLINE_EXCEEDED.
FIRESTORE_ERRORS: Final = "https://cloud.google.com/firestore/native/docs/understand-error-codes"
CONTENTION: Final = "Too much contention on these datastore entities. Please try again."
DEADLINE: Final = Throttle(code="DEADLINE_EXCEEDED", message="A deadline was exceeded on the server.",
                           source=FIRESTORE_ERRORS)
FIRESTORE_PROXY: Final = ProxySpec(
    decoder="keyramp.backends.firestore._decode:rpcs",
    throttle={
        "key": Throttle(code="ABORTED", message=CONTENTION, source=FIRESTORE_ERRORS),
        "range": Throttle(code="RESOURCE_EXHAUSTED",
                          message=("This database has exceeded their daily quota or the ramp up limit for writes, "
                                   "please retry with exponential backoff."), source=FIRESTORE_ERRORS),
    },
    deadline=DEADLINE)

FIRESTORE = StoreSpec(
    name="firestore",
    title="Firestore",
    drivers={"client": "keyramp.backends.firestore._client:FirestoreBackend",
             "grpc": "keyramp.backends.firestore._grpc:FirestoreGrpcBackend"},
    emulator=EmulatorSpec(
        kind="firestore", artifact=FIRESTORE_JAR, command=firestore_emulator_command(None), health=http_ok,
        reset=_reset, env_var="FIRESTORE_EMULATOR_HOST", compose_port=8082, needs_java=True),
    # Auto ids are generated client-side (20 random chars), scattered over the key space:
    # server_allocated_keys is not in ``lacks``.
    lacks={
        "ancestor_queries": "firestore has no ancestor queries (use a subcollection)",
        "entity_groups": "Firestore has no entity groups (documents are the unit of write rate)",
    },
    batch=BatchLimits(write=500, read=None, source="Firestore limits: 500 writes per commit"),
    keys=KeyRules(max_key_bytes=1500, forbidden_chars=("/",), forbidden_names=frozenset({".", ".."}),
                  reserved=re.compile(r"__.*__", re.DOTALL)),
    # The raw-gRPC driver encodes scalars only (its ``value_pb``); the client driver writes all.
    driver_lacks={"grpc": frozenset({"timestamp", "array", "map"})},
    records=RecordLimits(max_bytes=1_048_576, index_entries_max=40_000,
                         source="Firestore limits: a document ≤ 1 MiB, ≤ 40,000 index entries"),
    rules=frozenset({"BP-RAMP-1", "BP-KEY-3", "BP-RATE-2", "BP-RATE-3"}),
    hotspot_fix=("BP-KEY-2", "BP-KEY-1", "BP-KEY-3"),
    workload_key=lambda key, namespace: key_text(key),  # the document id the drivers write
    tablets=FIRESTORE_TABLETS,
    proxy=FIRESTORE_PROXY,
    # Listing what the clean-up deletes bills a read per document (a projection query).
    cloud=CloudSpec(writes_under="Firestore collection", listing_reads_per_record=1.0),
    client_libraries=("google-cloud-firestore",),
    prices=PriceSheet(name="firestore", file=Path(__file__).with_name("prices.json")),
    user=WorkloadUserSpec(
        name="FirestoreUser", store="firestore",
        doc="``self.client``: ``google.cloud.firestore.Client``; ``self.namespace``: the cell's collection."),
    capture="keyramp.backends.firestore._capture:decode",
)

SPECS: Final = (FIRESTORE,)
