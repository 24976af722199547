"""Datastore requests (Cloud Datastore and Firestore in Datastore mode) as store-model
operations (the store proxy reads a copy; docs/fidelity.md).

* **Entities.** An entity's key is its namespace, then each path element (kind, then an id
  as 8 big-endian bytes or a name), NUL-separated: ids sort before names, as in Datastore. A
  key the store completes (an ``insert`` without id or name) gets a random id, as Datastore's
  scattered ids land. Each entity a commit writes is one access to the ``documents`` space.
* **Units** (the per-key write limit): the entity group, i.e. the root ancestor's key, on a
  store with entity groups (legacy Datastore); the entity itself on Firestore in Datastore mode.
* **Index entries.** Every property not ``exclude_from_indexes`` adds one entry to
  ``index:<kind>.<property>`` (its value in Datastore's order, then the entity key); an
  embedded entity adds its indexed subproperties, an array one entry per indexed element.
  The built-in descending entry mirrors the ascending one and is not offered twice; property
  transforms index their property at the server's value (``REQUEST_TIME``: the proxy's clock)
  or at the entity's place.
* **Reads**: each key of a ``Lookup``.

Queries, transaction bookkeeping, id allocation and admin calls pass through.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, Final

from google.cloud.datastore_v1.types import datastore as _ds

from keyramp.backends._fidelity import DecodeOptions, ModelTypes, Rpc, RpcTable, timestamp_order, value_order

__all__ = ["entity_key", "rpcs"]

_P: Final = "/google.datastore.v1.Datastore/"
_Commit: Final = _ds.CommitRequest.pb()
_Lookup: Final = _ds.LookupRequest.pb()
_REQUEST_TIME: Final = int(_ds.PropertyTransform.ServerValue.REQUEST_TIME)
_DOCS: Final = "documents"


def _element(element: Any, draw: Callable[[], int]) -> bytes:
    kind = element.kind.encode()
    id_type = element.WhichOneof("id_type")
    if id_type == "name":
        return kind + b"\0\x02" + element.name.encode()
    ident = element.id if id_type == "id" else draw()  # incomplete: the store allocates a scattered id
    return kind + b"\0\x01" + ident.to_bytes(8, "big")


def entity_key(key: Any, draw: Callable[[], int], *, group: bool = False) -> bytes:
    """An entity ``Key`` in Datastore's order; ``group``: its entity group (the root ancestor)."""
    path = key.path[:1] if group else key.path
    return key.partition_id.namespace_id.encode() + b"\0" + b"\0".join(_element(e, draw) for e in path)


def _value_key(value: Any, draw: Callable[[], int]) -> bytes:
    return value_order(value, bytes_field="blob_value", ref_field="key_value", ref_key=lambda k: entity_key(k, draw))


class _Mutations:
    """The accesses, units and kind of a commit's mutations."""

    def __init__(self, access: Callable[..., Any], *, groups: bool, seed: int) -> None:
        self._access = access
        self._groups = groups
        rng = random.Random(seed)
        self._draw = lambda: rng.getrandbits(62) + 1

    def _indexed(self, path: str, value: Any, out: list[tuple[str, bytes]]) -> None:
        if value.exclude_from_indexes:
            return
        kind = value.WhichOneof("value_type")
        if kind == "entity_value":
            for name, sub in value.entity_value.properties.items():
                self._indexed(f"{path}.{name}", sub, out)
        elif kind == "array_value":
            out.extend((path, _value_key(v, self._draw)) for v in value.array_value.values
                       if not v.exclude_from_indexes)
        else:
            out.append((path, _value_key(value, self._draw)))

    def add(self, mutation: Any, accesses: list[Any], units: list[bytes]) -> str:
        operation = mutation.WhichOneof("operation")
        access, draw = self._access, self._draw
        key_pb = mutation.delete if operation == "delete" else getattr(mutation, operation).key
        key = entity_key(key_pb, draw)
        accesses.append(access(_DOCS, key, True))
        units.append(entity_key(key_pb, draw, group=True) if self._groups and len(key_pb.path) > 1 else key)
        if operation == "delete":
            return "delete"
        entity = getattr(mutation, operation)
        kind = key_pb.path[-1].kind if key_pb.path else ""
        values: list[tuple[str, bytes]] = []
        masked = set(mutation.property_mask.paths) if mutation.HasField("property_mask") else None
        for name, value in entity.properties.items():
            if masked is None or name in masked:
                self._indexed(name, value, values)
        for transform in mutation.property_transforms:
            if transform.WhichOneof("transform_type") == "set_to_server_value" and \
                    transform.set_to_server_value == _REQUEST_TIME:
                ns = time.time_ns()
                values.append((transform.property, timestamp_order(ns // 1_000_000_000, ns % 1_000_000_000)))
            else:
                values.append((transform.property, b"\x00" + key))
        for path, value_key in values:
            accesses.append(access(f"index:{kind}.{path}", value_key + b"\0" + key, True))
        return "transform" if mutation.property_transforms and not entity.properties else "write"


def rpcs(options: DecodeOptions, types: ModelTypes, *, groups: bool) -> RpcTable:
    """The Datastore API; ``groups``: the store limits writes per entity group (legacy Datastore)."""
    access, op = types.access, types.op
    mutations = _Mutations(access, groups=groups, seed=options.seed)

    def commit(data: bytes) -> Any:
        accesses: list[Any] = []
        units: list[bytes] = []
        kinds = {mutations.add(m, accesses, units) for m in _Commit.FromString(data).mutations}
        if not accesses:  # a read-only transaction's commit
            return None
        return op(tuple(accesses), tuple(dict.fromkeys(units)), kinds.pop() if len(kinds) == 1 else "write")

    def lookup(data: bytes) -> Any:
        draw = mutations._draw
        return op(tuple(access(_DOCS, entity_key(k, draw), False) for k in _Lookup.FromString(data).keys), (),
                  "read")

    table = [
        Rpc(path=_P + "Commit", what="write", decode=commit),
        Rpc(path=_P + "Lookup", what="read", decode=lookup),
        Rpc(path=_P + "BeginTransaction", what="transaction"),
        Rpc(path=_P + "Rollback", what="transaction"),
        Rpc(path=_P + "RunQuery", what="query"),
        Rpc(path=_P + "RunAggregationQuery", what="query"),
        Rpc(path=_P + "AllocateIds", what="admin"),
        Rpc(path=_P + "ReserveIds", what="admin"),
    ]
    return {rpc.path: rpc for rpc in table}


def rpcs_with_groups(options: DecodeOptions, types: ModelTypes) -> RpcTable:
    """Legacy Datastore: the entity group is the unit of the per-key write limit."""
    return rpcs(options, types, groups=True)


def rpcs_per_entity(options: DecodeOptions, types: ModelTypes) -> RpcTable:
    """Firestore in Datastore mode: each entity is the unit."""
    return rpcs(options, types, groups=False)
