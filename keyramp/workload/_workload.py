"""What a cell's operations work on: ``CellWorkload``, shared by all users of a process for one
cell (insert counter, key strategy, records, op mix; its table of operations is built once by
``workload/_ops.py``, where ``UserOps``, one user's view, runs them). Nothing measures: the
recorder does.
"""

from __future__ import annotations

import bisect
import itertools
import random
from pathlib import Path
from typing import Any

from keyramp.backends import Backend, Operation, QuerySpec, Target, spec_for
from keyramp.core import Key
from keyramp.keys import RecordFactory, entity_group_key, make_strategy, parse_shape
from keyramp.profile import QuerySettings, Settings
from keyramp.pyworkload import load_user, operation

__all__ = ["CellWorkload", "query_spec"]


def query_spec(query: QuerySettings, *, limit: int, ancestor: Key | None = None,
               start_after: Any = None, page: int = 0) -> QuerySpec:
    """``[workload.query]`` -> ``QuerySpec``; ``page`` > 0 with offset pagination skips pages."""
    offset = page * limit if query.paginate == "offset" else query.offset
    return QuerySpec(
        field=query.field or None,
        op=query.op,
        value=query.value,
        order_by=query.order_by or None,
        limit=limit,
        offset=offset,
        start_after=start_after,
        keys_only=query.keys_only,
        projection=query.projection,
        ancestor=ancestor,
    )


class CellWorkload:
    """Per-cell, per-process state: which index the next insert gets, how keys look.

    Insert indexes are interleaved across ``workers`` processes (worker w takes
    ``w, w+W, w+2W …`` after the preloaded range), so keys stay unique and deterministic.
    """

    def __init__(
        self,
        *,
        backend: str,
        strategy: str,
        settings: Settings,
        worker_index: int = 0,
        workers: int = 1,
    ) -> None:
        wl = settings.workload
        self.backend_name = backend
        self.seed = settings.seed
        self.strategy = make_strategy(strategy, seed=self.seed, params=settings.keys.params, backend=backend)
        self.records = RecordFactory(
            value_size=wl.value_size,
            indexed_value=wl.indexed_value,
            indexed_fields=wl.indexed_fields,
            seed=self.seed,
            clock=self.strategy.clock,
            shape=parse_shape(wl.document),
        )
        self.ops = list(wl.ops)
        #: A Python workload's ops that create the key they return (``workload.insert_ops``).
        self.insert_ops = tuple(wl.insert_ops)
        #: Op name -> the function that performs it (the store's own where it differs; a Python
        #: workload's methods): built once, on first use (``_ops.cell_table``; key-space analysis
        #: needs only the keys).
        self.table: dict[str, Operation] | None = None
        self._cum = list(itertools.accumulate(wl.ops.values()))
        self.record_count = wl.record_count
        self.batch_size = wl.batch_size
        self.scan_length = wl.scan_length
        self.group_size = wl.entity_group_size
        self.distribution = wl.read_distribution
        self.distribution_params = dict(wl.distribution_params)
        self.query = wl.query
        #: ``"/abs/file.py:Class"`` of a Python workload (its class is imported on first use:
        #: key-space analysis builds a CellWorkload for keys only).
        self.user_spec = wl.user
        self._user_class: type | None = None
        self._workers = workers
        self._next = itertools.count(self.record_count + worker_index, workers)
        self.inserted = 0
        #: Keys the store allocated (server_allocated strategy), in insert order.
        self.allocated: list[Key] = []

    # -- Python workloads ----------------------------------------------------------------
    @property
    def user_class(self) -> type | None:
        """The Python workload's user class, or ``None`` for the built-in operations."""
        if self.user_spec and self._user_class is None:
            self.user_table()
        return self._user_class

    def user_table(self) -> dict[str, Operation]:
        """A Python workload's operations: its ``@keyramp.op`` methods by name (its class imported now)."""
        loaded = load_user(self.user_spec, base_dir=Path("/"))  # absolute in the resolved profile
        self._user_class = loaded.cls
        return {name: operation(spec) for name, spec in loaded.ops.items()}

    def sample_kinds(self) -> dict[str, str]:
        """What a Python workload's ops do to the key they return, when their requests are not decoded: the
        ops that create their key insert it, the others read it (``Recorder``'s ``kinds``)."""
        if not self.user_spec:
            return {}
        inserts = set(self.insert_ops)
        return {op: "insert" if op in inserts else "read" for op in self.ops}

    def capture(self, namespace: str) -> tuple[Any, str] | None:
        """A Python workload's store decoder of captured requests and the cell's namespace (``Recorder``'s
        ``decode``); None for the built-in operations, whose keys keyramp chose itself."""
        if not self.user_spec:
            return None
        decoder = spec_for(self.backend_name).capture_decoder()
        return None if decoder is None else (decoder, namespace)

    def users_driver(self, driver: str) -> str:
        """The driver the cell's users run: the profile's, but always the official client for a
        Python workload (its ops call ``self.client``; ``driver`` still writes the preload)."""
        return "client" if self.user_spec else driver

    # -- keys ----------------------------------------------------------------------------
    def key_of(self, index: int) -> Key | None:
        if self.strategy.server_allocated:
            return self.allocated[index] if index < len(self.allocated) else None
        key = self.strategy.key(index)
        if self.group_size:
            return entity_group_key(key, index, group_size=self.group_size)
        return key

    def next_insert_index(self) -> int:
        self.inserted += 1
        return next(self._next)

    def existing(self) -> int:
        """How many records exist (as far as this process knows)."""
        if self.strategy.server_allocated:
            return len(self.allocated)
        return self.record_count + self.inserted * self._workers

    def choose_op(self, rng: random.Random) -> str:
        return self.ops[bisect.bisect_left(self._cum, rng.random() * self._cum[-1])]

    def target(self, *, project: str, endpoint: str | None, namespace: str, timeout_s: float = 10.0) -> Target:
        return Target(
            backend=self.backend_name,
            project=project,
            endpoint=endpoint,
            namespace=namespace,
            timeout_s=timeout_s,
            unindexed=frozenset(self.records.unindexed_fields()),
        )

    # -- preload -------------------------------------------------------------------------
    def preload_batches(self) -> list[list[int]]:
        """Index batches that fill the store with ``record_count`` records before the load."""
        size = max(1, min(self.batch_size * 10, 200))
        return [list(range(i, min(i + size, self.record_count))) for i in range(0, self.record_count, size)]

    def preload(self, backend: Backend, indexes: list[int]) -> None:
        if self.strategy.server_allocated:
            for i in indexes:
                self.allocated.append(backend.insert(None, self.records.record(i)))
            return
        backend.batch_write([(self.key_of(i), self.records.record(i)) for i in indexes])  # type: ignore[misc]
