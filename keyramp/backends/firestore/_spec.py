"""Firestore (native mode): its spec, and the Firestore emulator command (also used, in
datastore-mode, by Firestore in Datastore mode)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from keyramp.backends._emulator import http_ok, http_reset, java_command
from keyramp.backends._spec import BatchLimits, CloudSpec, EmulatorSpec, KeyRules, StoreSpec
from keyramp.keyspace._tablets import SERVERLESS_TABLETS

__all__ = ["FIRESTORE", "FIRESTORE_JAR", "SPECS", "firestore_emulator_command"]

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


FIRESTORE = StoreSpec(
    name="firestore",
    title="Firestore",
    drivers={"client": "keyramp.backends.firestore._client:FirestoreBackend"},
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
    rules=frozenset({"BP-RATE-2"}),
    hotspot_fix="server_allocated or random ids, or a hashed_prefix",
    tablets=SERVERLESS_TABLETS,
    cloud=CloudSpec(writes_under="Firestore collection"),
    client_libraries=("google-cloud-firestore",),
)

SPECS: Final = (FIRESTORE,)
