"""The ``Backend`` seam: one class per store that *performs* operations and never times them.

Like YCSB's ``DB``: the recorder (``keyramp.run._recorder``) wraps every call exactly once.
One instance per Locust user, created in ``on_start`` (after any fork, so each user owns
its own gRPC channel). ``prepare`` runs once per cell, before the load, in the runner.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from keyramp.core import Key, UnsupportedOperation

__all__ = ["Backend", "QuerySpec", "Record", "Target"]

#: One entity/document/row: field name -> value (bytes payload, ints, strings, floats).
Record = Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where a cell's operations go.

    ``endpoint`` is ``host:port`` of an emulator, or ``None`` for the real service
    (only reachable through the explicit cloud opt-in). ``namespace`` is unique per run
    and cell: the Datastore kind, Firestore collection, or Bigtable table id.
    """

    backend: str
    project: str
    endpoint: str | None
    namespace: str
    instance: str = "keyramp"
    #: Firestore / Datastore-mode database id on the real service (emulators ignore it).
    database: str = "(default)"
    #: Per-operation deadline in seconds; backends pass explicit retry=None/timeout so
    #: the load test sees every transient error instead of a 60 s client retry loop.
    timeout_s: float = 10.0
    #: Fields that must not be indexed (Datastore ``exclude_from_indexes``); backends
    #: without per-write index control ignore it.
    unindexed: frozenset[str] = frozenset()
    #: A Python workload user's ``backends._capture.Capture``: its client's channel reports every request
    #: to it (what the workload's own code really sent); None: nothing captured.
    capture: Any = field(default=None, compare=False)


@dataclass(frozen=True, kw_only=True)
class QuerySpec:
    """A query over the cell's kind/collection.

    ``field``/``op``/``value``: one filter (``op`` in ``< <= == >= >``) or none.
    ``order_by``: field name, ``-field`` for descending. ``keys_only``/``projection``
    for BP-QRY-1; ``offset`` vs ``start_after`` cursor for BP-QRY-2; ``ancestor`` for
    strongly consistent Datastore ancestor queries.
    """

    field: str | None = None
    op: str = "=="
    value: Any = None
    order_by: str | None = None
    limit: int = 20
    offset: int = 0
    start_after: Any = None
    keys_only: bool = False
    projection: tuple[str, ...] = ()
    ancestor: Key | None = None


class Backend(ABC):
    """Operations on one store. Subclasses set ``name`` and implement the abstract methods.

    Every method raises on failure (the original client exception, or a ``grpc``-status
    carrying exception) so the recorder can classify the error; none retries on its own.
    """

    name: ClassVar[str]
    #: Where the last ``query`` stopped, for ``QuerySpec.start_after`` (store-specific; set by
    #: the backends that page with cursors).
    last_cursor: Any

    def __init__(self, target: Target) -> None:
        self.target = target

    #: Keyword arguments for a call on the official client that keyramp measures: no
    #: client retries, the cell's deadline (Python workloads pass them on: ``self.no_retry``).
    call_options: Mapping[str, Any] = {}

    @property
    def client(self) -> Any:
        """The official client this backend drives (Python workloads use it directly)."""
        return self._client  # type: ignore[attr-defined]

    # -- lifecycle ---------------------------------------------------------------------
    @classmethod
    def prepare(cls, target: Target) -> None:
        """Once per cell before the load: create the table / nothing for schemaless stores."""

    def close(self) -> None:
        """Release the client's channels."""

    # -- clean-up (cloud runs delete what each cell wrote, then verify) -------------------
    @classmethod
    def cleanup(cls, target: Target) -> int:
        """Delete everything the cell wrote under ``target.namespace``; returns how many
        entities/documents/rows were deleted. Other namespaces are never touched."""
        raise UnsupportedOperation(f"{cls.name} has no clean-up")

    @classmethod
    def remaining(cls, target: Target) -> int:
        """How many entities/documents/rows are left under ``target.namespace`` (0 = gone)."""
        raise UnsupportedOperation(f"{cls.name} has no clean-up")

    # -- operations --------------------------------------------------------------------
    @abstractmethod
    def insert(self, key: Key | None, record: Record) -> Key:
        """Create one entity; ``key=None`` asks the store for an id. Returns the key used."""

    @abstractmethod
    def read(self, key: Key) -> bool:
        """Read one entity by key. Returns whether it exists."""

    @abstractmethod
    def update(self, key: Key, record: Record) -> None:
        """Overwrite/upsert one entity."""

    @abstractmethod
    def delete(self, key: Key) -> None:
        """Delete one entity."""

    @abstractmethod
    def scan(self, start: Key, limit: int) -> int:
        """Read up to ``limit`` entities in key order from ``start``. Returns how many."""

    @abstractmethod
    def query(self, spec: QuerySpec) -> int:
        """Run a query. Returns the number of results."""

    @abstractmethod
    def batch_write(self, items: Sequence[tuple[Key, Record]]) -> None:
        """Write several entities in one request (one commit / one MutateRows)."""

    @abstractmethod
    def batch_read(self, keys: Sequence[Key]) -> int:
        """Read several entities in one request. Returns how many were found."""

    @abstractmethod
    def transaction(self, key: Key, field: str, amount: int) -> None:
        """Read-modify-write of one entity in a transaction (Bigtable: ReadModifyWriteRow)."""

    @abstractmethod
    def increment(self, key: Key, field: str, amount: int) -> None:
        """Add ``amount`` to a counter field (blind where the store allows it)."""

    def allocate_keys(self, n: int) -> list[Key]:
        """Ask the store for ``n`` ids (server-allocated key strategy)."""
        raise UnsupportedOperation(f"{self.name} has no server-allocated keys")
