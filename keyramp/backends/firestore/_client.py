"""Firestore (native mode) through ``google.cloud.firestore``: one collection per cell."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from google.auth.credentials import AnonymousCredentials
from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter

from keyramp.backends._base import Backend, QuerySpec, Record, Target
from keyramp.core import Key, UnsupportedOperation, UsageError, key_text

__all__ = ["FirestoreBackend", "make_firestore_client"]

_OPS = {"==": "==", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "!=": "!="}
_DOC_ID = "__name__"
#: Clean-up: a write batch holds at most 500 writes; default client retries (it must finish).
_CLEANUP_PAGE = 500
_CLEANUP_TIMEOUT_S = 60.0


class _CapturingClient(firestore.Client):
    """The client, its channel reporting every request to ``_capture`` (a Python workload's user:
    ``backends._capture``). The base class builds its channel lazily, in ``_firestore_api_helper``:
    from ``_emulator_channel`` for an emulator, else from the transport's ``create_channel``."""

    _capture: Any = None

    def _emulator_channel(self, transport: Any) -> Any:
        channel = super()._emulator_channel(transport)
        return channel if self._capture is None else self._capture.channel(channel)

    def _firestore_api_helper(self, transport: Any, client_class: Any, client_module: Any) -> Any:
        capture = self._capture
        if capture is None:
            return super()._firestore_api_helper(transport, client_class, client_module)

        class Transport(transport):
            @classmethod
            def create_channel(cls, *args: Any, **kwargs: Any) -> Any:
                return capture.channel(transport.create_channel(*args, **kwargs))

        return super()._firestore_api_helper(Transport, client_class, client_module)


def make_firestore_client(target: Target) -> firestore.Client:
    """A Firestore client with its own insecure channel to ``target.endpoint`` (its requests captured when
    ``target.capture`` is set)."""
    if target.endpoint is None:
        client = _CapturingClient(project=target.project, database=target.database)
        client._capture = target.capture
        return client
    client = _CapturingClient(project=target.project, credentials=AnonymousCredentials())
    client._capture = target.capture
    # The client reads FIRESTORE_EMULATOR_HOST once into _emulator_host and builds its channel
    # lazily from it (insecure channel + the emulator's "Bearer owner" metadata). Setting it
    # per instance gives each client its own endpoint without touching os.environ.
    client._emulator_host = target.endpoint
    return client


class FirestoreBackend(Backend):
    name: ClassVar[str] = "firestore"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._client = make_firestore_client(target)
        self._coll = self._client.collection(target.namespace)
        # retry=None reaches the GAPIC call as "no retry" (the Firestore client passes it on).
        self._kw: dict[str, Any] = {"retry": None, "timeout": target.timeout_s}
        self.call_options = self._kw
        #: Last document of the last ``query``: pass it back as ``QuerySpec.start_after`` (BP-QRY-2).
        self.last_cursor: Any = None

    def close(self) -> None:
        self._client.close()

    # -- clean-up ----------------------------------------------------------------------------
    @classmethod
    def cleanup(cls, target: Target) -> int:
        """Pages of document names in id order, each page deleted in one write batch."""
        client = make_firestore_client(target)
        coll = client.collection(target.namespace)
        deleted = 0
        last = None
        try:
            while True:
                query = coll.order_by(_DOC_ID).select([_DOC_ID]).limit(_CLEANUP_PAGE)
                if last is not None:
                    query = query.start_after(last)
                page = list(query.stream(timeout=_CLEANUP_TIMEOUT_S))
                if not page:
                    break
                batch = client.batch()
                for snap in page:
                    batch.delete(snap.reference)
                batch.commit(timeout=_CLEANUP_TIMEOUT_S)
                deleted += len(page)
                last = page[-1]
        finally:
            client.close()
        return deleted

    @classmethod
    def remaining(cls, target: Target) -> int:
        client = make_firestore_client(target)
        try:
            query = client.collection(target.namespace).select([_DOC_ID])
            return sum(1 for _ in query.stream(timeout=_CLEANUP_TIMEOUT_S))
        finally:
            client.close()

    def _doc(self, key: Key) -> Any:
        return self._coll.document(key_text(key))

    # -- operations ------------------------------------------------------------------------
    def insert(self, key: Key | None, record: Record) -> Key:
        doc = self._coll.document() if key is None else self._doc(key)
        doc.set(dict(record), **self._kw)
        return doc.id if key is None else key

    def read(self, key: Key) -> bool:
        return bool(self._doc(key).get(**self._kw).exists)

    def update(self, key: Key, record: Record) -> None:
        self._doc(key).set(dict(record), **self._kw)

    def delete(self, key: Key) -> None:
        self._doc(key).delete(**self._kw)

    def scan(self, start: Key, limit: int) -> int:
        query = self._coll.order_by(_DOC_ID).start_at({_DOC_ID: self._doc(start)}).limit(limit)
        return sum(1 for _ in query.stream(**self._kw))

    def query(self, spec: QuerySpec) -> int:
        if spec.ancestor is not None:
            raise UnsupportedOperation("firestore has no ancestor queries (use a subcollection)")
        query: Any = self._coll
        if spec.field is not None:
            if spec.op not in _OPS:
                raise UsageError(f"unknown query operator {spec.op!r}")
            query = query.where(filter=FieldFilter(spec.field, _OPS[spec.op], spec.value))
        order_field = None
        if spec.order_by:
            desc = spec.order_by.startswith("-")
            order_field = spec.order_by.lstrip("-")
            query = query.order_by(order_field, direction=firestore.Query.DESCENDING if desc
                                   else firestore.Query.ASCENDING)
        if spec.keys_only:
            query = query.select([_DOC_ID])
        elif spec.projection:
            query = query.select(list(spec.projection))
        if spec.offset:
            query = query.offset(spec.offset)
        if spec.start_after is not None:
            cursor = spec.start_after
            if not isinstance(cursor, (dict, firestore.DocumentSnapshot)):
                # A bare value continues after that value of the ordered field (or doc id).
                cursor = {order_field or _DOC_ID: self._doc(cursor) if order_field is None else cursor}
                if order_field is None:
                    query = query.order_by(_DOC_ID)
            query = query.start_after(cursor)
        count = 0
        last = None
        for last in query.limit(spec.limit).stream(**self._kw):  # noqa: B007 - the last one is the next page's cursor
            count += 1
        self.last_cursor = last
        return count

    def batch_write(self, items: Sequence[tuple[Key, Record]]) -> None:
        batch = self._client.batch()
        for key, record in items:
            batch.set(self._doc(key), dict(record))
        batch.commit(**self._kw)

    def batch_read(self, keys: Sequence[Key]) -> int:
        docs = self._client.get_all([self._doc(k) for k in keys], **self._kw)
        return sum(1 for snap in docs if snap.exists)

    def transaction(self, key: Key, field: str, amount: int) -> None:
        doc = self._doc(key)
        kw = self._kw

        # max_attempts=1: an ABORTED commit surfaces (as ValueError from Aborted) instead of
        # being retried silently; the recorder counts it (BP-API-2, BP-RATE-3).
        @firestore.transactional
        def rmw(txn: Any) -> None:
            snap = doc.get(transaction=txn, **kw)
            value = (snap.to_dict() or {}).get(field) or 0  # to_dict() is None if missing
            txn.set(doc, {field: value + amount}, merge=True)

        rmw(self._client.transaction(max_attempts=1))

    def increment(self, key: Key, field: str, amount: int) -> None:
        self._doc(key).set({field: firestore.Increment(amount)}, merge=True, **self._kw)

    def allocate_keys(self, n: int) -> list[Key]:
        # Firestore auto ids are random and made client-side: no round trip.
        return [self._coll.document().id for _ in range(n)]
