"""Bigtable: its spec (emulator, limits, key rules, the Bigtable key-design rules, tablet defaults)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from keyramp.backends._emulator import grpc_ready
from keyramp.backends._spec import BatchLimits, CloudSpec, EmulatorSpec, KeyRules, StoreSpec
from keyramp.backends.bigtable._admin import reset
from keyramp.keyspace._tablets import TabletParams

__all__ = ["BIGTABLE", "SPECS"]

_BINARY: Final = "platform/bigtable-emulator/cbtemulator"


def _bigtable_cmd(sdk: Path, host: str, port: int, opts: Mapping[str, Any]) -> list[str]:
    return [str(sdk / _BINARY), "-host", host, "-port", str(port)]


BIGTABLE = StoreSpec(
    name="bigtable",
    title="Bigtable",
    drivers={"client": "keyramp.backends.bigtable._client:BigtableBackend"},
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
    rules=frozenset({"BP-KEY-5", "BP-KEY-6", "BP-KEY-7", "BP-KEY-8", "BP-SIZE-1", "BP-SIZE-3"}),
    hotspot_fix="field_promotion or reversed_id",
    # Sources: docs/keyspace-model.md.
    tablets=TabletParams(
        capacity=10_000.0,
        split_threshold=6_000.0,
        split_delay_s=300.0,
        total_capacity=10_000.0,  # one node
    ),
    cloud=CloudSpec(writes_under="Bigtable table", scope="instance", needs_instance=True),
    client_libraries=("google-cloud-bigtable",),
)

SPECS: Final = (BIGTABLE,)
