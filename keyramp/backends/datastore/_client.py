"""Cloud Datastore (legacy emulator) and Firestore in Datastore mode, through the Datastore client.

Both use the same code: only the endpoint differs (the Firestore emulator started with
``--database-mode=datastore-mode`` serves the Datastore gRPC API). The endpoint is set per
client, never through ``DATASTORE_EMULATOR_HOST``, because both kinds can live in one process.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import urlparse

import grpc
from google.api_core import retry as retries
from google.auth.credentials import AnonymousCredentials
from google.cloud import datastore
from google.cloud._helpers import make_secure_channel
from google.cloud._http import DEFAULT_USER_AGENT
from google.cloud.datastore.query import PropertyFilter
from google.cloud.datastore_v1.services.datastore.client import DatastoreClient
from google.cloud.datastore_v1.services.datastore.transports.grpc import DatastoreGrpcTransport

from keyramp.backends._base import Backend, QuerySpec, Record, Target
from keyramp.backends.datastore._spec import parent_kind
from keyramp.core import Key, UsageError

__all__ = ["NO_RETRY", "DatastoreBackend", "FirestoreDatastoreBackend", "make_datastore_client"]

#: The Datastore client drops ``retry=None`` and falls back to the GAPIC default policy
#: (retrying UNAVAILABLE/DEADLINE_EXCEEDED for 60 s), so "no retry" needs a policy whose
#: predicate never matches: the first error propagates unchanged.
NO_RETRY = retries.Retry(predicate=lambda exc: False)

_OPS = {"==": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "!=": "!="}
#: Clean-up: one commit holds at most 500 mutations. Clean-up keeps the client's default
#: retries (unlike the measured operations): it must finish, not be measured.
_CLEANUP_PAGE = 500
_CLEANUP_TIMEOUT_S = 60.0


def _close_client(client: datastore.Client) -> None:
    api = client._datastore_api_internal  # created lazily; None if never used
    if api is not None:
        api.transport.close()
        client._datastore_api_internal = None


class _CapturingClient(datastore.Client):
    """The client, its channel reporting every request to ``_capture`` (a Python workload's user:
    ``backends._capture``): the GAPIC layer built as ``google.cloud.datastore._gapic.make_datastore_api``
    builds it, over a channel with the capture on it."""

    _capture: Any = None

    @property
    def _datastore_api(self) -> Any:
        if self._capture is None:
            return super()._datastore_api
        if self._datastore_api_internal is None:
            url = urlparse(self._base_url)
            channel = (make_secure_channel(self._credentials, DEFAULT_USER_AGENT, url.netloc) if url.scheme == "https"
                       else grpc.insecure_channel(url.netloc))
            transport = DatastoreGrpcTransport(channel=self._capture.channel(channel))
            self._datastore_api_internal = DatastoreClient(transport=transport, client_info=self._client_info)
        return self._datastore_api_internal


def make_datastore_client(target: Target) -> datastore.Client:
    """A Datastore client with its own channel to ``target.endpoint`` (gRPC, insecure for emulators; its
    requests captured when ``target.capture`` is set)."""
    if target.endpoint is None:
        # The real service: Application Default Credentials, default endpoint.
        database = None if target.database == "(default)" else target.database
        client = _CapturingClient(project=target.project, database=database, _use_grpc=True)
        client._capture = target.capture
        return client
    # With DATASTORE_EMULATOR_HOST set the client refuses explicit credentials (it uses
    # anonymous ones itself); either way base_url below overrides the env endpoint.
    creds = None if os.environ.get("DATASTORE_EMULATOR_HOST") else AnonymousCredentials()
    client = _CapturingClient(project=target.project, credentials=creds, _use_grpc=True)
    client._capture = target.capture
    # An http:// base URL makes the GAPIC layer build grpc.insecure_channel(host) (see
    # google.cloud.datastore._gapic.make_datastore_api); the channel is created lazily.
    client.base_url = f"http://{target.endpoint}"
    return client


def _kinds(target: Target) -> tuple[str, str]:
    """The cell's kinds: its entities, and their entity-group parents (ancestor keys)."""
    return target.namespace, parent_kind(target.namespace)


def _nested_excludes(unindexed: frozenset[str]) -> dict[str, Any]:
    """``{"a.b", "a.c.d"}`` -> ``{"a": {"b": {}, "c": {"d": {}}}}``: which subfields to exclude."""
    tree: dict[str, Any] = {}
    for path in unindexed:
        if "." in path:
            node = tree
            for part in path.split("."):
                node = node.setdefault(part, {})
    return tree


def _embedded(value: dict[str, Any], nested: dict[str, Any]) -> datastore.Entity:
    """A map as an embedded entity excluding the subfields in ``nested`` (leaves) from indexes."""
    entity = datastore.Entity(exclude_from_indexes=tuple(n for n, sub in nested.items() if not sub))
    entity.update(value)
    for name, sub in nested.items():
        if sub and isinstance(value.get(name), dict):
            entity[name] = _embedded(value[name], sub)
    return entity


class DatastoreBackend(Backend):
    name: ClassVar[str] = "datastore"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._client = make_datastore_client(target)
        self._kind, self._parent_kind = _kinds(target)
        self._exclude = tuple(sorted(n for n in target.unindexed if "." not in n))
        #: ``map.field`` exclusions: those maps are written as embedded entities with their own list.
        self._nested = _nested_excludes(target.unindexed)
        self._kw: dict[str, Any] = {"retry": NO_RETRY, "timeout": target.timeout_s}
        self.call_options = self._kw
        #: Cursor after the last ``query``: pass it back as ``QuerySpec.start_after`` (BP-QRY-2).
        self.last_cursor: bytes | None = None

    def close(self) -> None:
        _close_client(self._client)

    # -- clean-up ----------------------------------------------------------------------------
    @classmethod
    def cleanup(cls, target: Target) -> int:
        """Keys-only pages of the cell's kinds, each deleted in one commit (≤ 500 mutations)."""
        client = make_datastore_client(target)
        deleted = 0
        try:
            for kind in _kinds(target):
                cursor = None
                while True:
                    # A cursor, not a re-query from the start: where queries are eventually
                    # consistent, deleted keys could come back and be counted twice.
                    query = client.query(kind=kind)
                    query.keys_only()
                    it = query.fetch(limit=_CLEANUP_PAGE, start_cursor=cursor, timeout=_CLEANUP_TIMEOUT_S)
                    keys = [entity.key for entity in it]
                    if not keys:
                        break
                    client.delete_multi(keys, timeout=_CLEANUP_TIMEOUT_S)
                    deleted += len(keys)
                    cursor = it.next_page_token
                    if cursor is None:
                        break
        finally:
            _close_client(client)
        return deleted

    @classmethod
    def remaining(cls, target: Target) -> int:
        client = make_datastore_client(target)
        try:
            total = 0
            for kind in _kinds(target):
                query = client.query(kind=kind)
                query.keys_only()
                total += sum(1 for _ in query.fetch(timeout=_CLEANUP_TIMEOUT_S))
            return total
        finally:
            _close_client(client)

    # -- helpers ---------------------------------------------------------------------------
    def _key(self, key: Key) -> datastore.Key:
        if isinstance(key, tuple):
            parent, child = key
            return self._client.key(self._parent_kind, parent, self._kind, child)
        return self._client.key(self._kind, key)

    @staticmethod
    def _from_key(key: datastore.Key) -> Key:
        ident = key.id_or_name
        if key.parent is not None:
            return (key.parent.id_or_name, ident)
        return ident

    def _entity(self, key: datastore.Key | None, record: Record) -> datastore.Entity:
        entity = datastore.Entity(key, exclude_from_indexes=self._exclude)
        entity.update(record)
        for name, nested in self._nested.items():
            value = entity.get(name)
            if isinstance(value, dict):
                entity[name] = _embedded(value, nested)
        return entity

    def _added(self, ds_key: datastore.Key, field: str, amount: int,
               transaction: datastore.Transaction | None = None) -> datastore.Entity:
        """The stored entity (a new one if missing) with ``amount`` added to ``field``."""
        entity = self._client.get(ds_key, transaction=transaction, **self._kw)
        if entity is None:
            entity = self._entity(ds_key, {})
        entity[field] = entity.get(field, 0) + amount
        return entity

    # -- operations --------------------------------------------------------------------------
    def insert(self, key: Key | None, record: Record) -> Key:
        ds_key = self._client.key(self._kind) if key is None else self._key(key)
        entity = self._entity(ds_key, record)
        # put() on an incomplete key lets the commit allocate the id and completes entity.key.
        self._client.put(entity, **self._kw)
        return self._from_key(entity.key) if key is None else key

    def read(self, key: Key) -> bool:
        return self._client.get(self._key(key), **self._kw) is not None

    def update(self, key: Key, record: Record) -> None:
        self._client.put(self._entity(self._key(key), record), **self._kw)

    def delete(self, key: Key) -> None:
        self._client.delete(self._key(key), **self._kw)

    def scan(self, start: Key, limit: int) -> int:
        query = self._client.query(kind=self._kind)
        query.add_filter(filter=PropertyFilter("__key__", ">=", self._key(start)))
        query.order = ["__key__"]
        return sum(1 for _ in query.fetch(limit=limit, **self._kw))

    def query(self, spec: QuerySpec) -> int:
        ancestor = None
        if spec.ancestor is not None:
            ancestor = self._client.key(self._parent_kind, spec.ancestor[0]
                                        if isinstance(spec.ancestor, tuple) else spec.ancestor)
        query = self._client.query(kind=self._kind, ancestor=ancestor)
        if spec.field is not None:
            try:
                op = _OPS[spec.op]
            except KeyError:
                raise UsageError(f"unknown query operator {spec.op!r}") from None
            query.add_filter(filter=PropertyFilter(spec.field, op, spec.value))
        if spec.order_by:
            query.order = [spec.order_by]
        if spec.keys_only:
            query.keys_only()
        elif spec.projection:
            query.projection = list(spec.projection)
        start = spec.start_after
        if start is not None and not isinstance(start, (bytes, str)):
            raise UsageError("datastore QuerySpec.start_after must be a cursor (backend.last_cursor)")
        it = query.fetch(limit=spec.limit, offset=spec.offset, start_cursor=start, **self._kw)
        count = sum(1 for _ in it)
        self.last_cursor = it.next_page_token
        return count

    def batch_write(self, items: Sequence[tuple[Key, Record]]) -> None:
        self._client.put_multi([self._entity(self._key(k), r) for k, r in items], **self._kw)

    def batch_read(self, keys: Sequence[Key]) -> int:
        return len(self._client.get_multi([self._key(k) for k in keys], **self._kw))

    def transaction(self, key: Key, field: str, amount: int) -> None:
        ds_key = self._key(key)
        txn = self._client.transaction()
        txn.begin(**self._kw)
        try:
            txn.put(self._added(ds_key, field, amount, transaction=txn))
            txn.commit(**self._kw)
        except BaseException:
            # Best-effort rollback (BP-API-2) frees the emulator's locks; the original error wins.
            if txn._status == txn._IN_PROGRESS:
                try:
                    txn.rollback(**self._kw)
                except Exception:  # noqa: BLE001 - the first error is what gets recorded
                    pass
            raise

    def increment(self, key: Key, field: str, amount: int) -> None:
        # Datastore has no server-side increment: a plain read + put (racy by design; the
        # transactional variant is ``transaction``).
        self._client.put(self._added(self._key(key), field, amount), **self._kw)

    def allocate_keys(self, n: int) -> list[Key]:
        keys = self._client.allocate_ids(self._client.key(self._kind), n, **self._kw)
        return [k.id for k in keys]


class FirestoreDatastoreBackend(DatastoreBackend):
    """Firestore in Datastore mode: the same Datastore API, served by the Firestore emulator."""

    name: ClassVar[str] = "firestore-datastore"
