"""Operations as a table: what one workload op does, as a function ``op(user) -> key | None``.

``SHARED_OPS`` holds the operations every store shares: the key, the record and the call
are the same everywhere, the store's driver does the store-specific part. A store's spec
may replace one or add its own (``StoreSpec.own_operations``); a Python workload's
``@keyramp.op`` methods make a cell's whole table (``pyworkload.operation``). ``cell_table``
builds a cell's table once, so ``UserOps.run`` (one user's view, below) is one dict lookup and
one call (bench/bench_hotpath.py).

Each function returns the (first) key it touched, for key sampling, or None (queries).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

from keyramp.backends import Backend, Operation, StoreSpec, spec_for
from keyramp.core import Key, UsageError
from keyramp.keys import make_distribution
from keyramp.workload._workload import CellWorkload, query_spec

__all__ = ["COUNTER_FIELD", "SHARED_OPS", "UserOps", "cell_table", "op_table"]

#: The field ``transaction`` and ``increment`` add to.
COUNTER_FIELD: Final = "counter"


def insert(u: UserOps) -> Key | None:
    wl = u.wl
    index = wl.next_insert_index()
    if wl.strategy.server_allocated:  # None: the store allocates the key and returns it
        used = u.backend.insert(None, wl.records.record(index))
        wl.allocated.append(used)
        return used
    return u.backend.insert(wl.key_of(index), wl.records.record(index))


def read(u: UserOps) -> Key | None:
    key = u.existing_key()
    u.backend.read(key)
    return key


def update(u: UserOps) -> Key | None:
    key = u.existing_key()
    u.backend.update(key, u.wl.records.record(u.rng.randrange(1 << 30)))
    return key


def delete(u: UserOps) -> Key | None:
    key = u.existing_key()
    u.backend.delete(key)
    return key


def scan(u: UserOps) -> Key | None:
    key = u.existing_key()
    u.backend.scan(key, u.wl.scan_length)
    return key


def query(u: UserOps) -> Key | None:
    u.configured_query()
    return None


def batch_write(u: UserOps) -> Key | None:
    wl = u.wl
    items = []
    for _ in range(wl.batch_size):
        index = wl.next_insert_index()
        items.append((wl.key_of(index), wl.records.record(index)))
    u.backend.batch_write(items)  # type: ignore[arg-type]  # client-chosen keys: never None here
    return items[0][0]


def batch_read(u: UserOps) -> Key | None:
    keys = [u.existing_key() for _ in range(u.wl.batch_size)]
    u.backend.batch_read(keys)
    return keys[0]


def transaction(u: UserOps) -> Key | None:
    key = u.existing_key()
    u.backend.transaction(key, COUNTER_FIELD, 1)
    return key


def increment(u: UserOps) -> Key | None:
    key = u.existing_key()
    u.backend.increment(key, COUNTER_FIELD, 1)
    return key


#: Operation name -> function, for every store (``keyramp.core._types.OP_NAMES``).
SHARED_OPS: Final[Mapping[str, Operation]] = MappingProxyType({
    fn.__name__: fn
    for fn in (insert, read, update, delete, scan, query, batch_write, batch_read, transaction, increment)
})


def op_table(spec: StoreSpec, names: Iterable[str]) -> dict[str, Operation]:
    """The functions of a cell's op mix on ``spec``'s store: its own where it has one, else
    the shared one. ``UsageError`` for an op the store does not support (profile validation
    refuses those first)."""
    table: dict[str, Operation] = {}
    for name in names:
        fn = spec.own_operations.get(name) or SHARED_OPS.get(name)
        if fn is None or name not in spec.operations:
            raise UsageError(f"{spec.name} does not support operation {name!r}")
        table[name] = fn
    return table


def cell_table(wl: CellWorkload) -> dict[str, Operation]:
    """The cell's table of operations, built on first use and kept on the workload: a Python
    workload's methods, else the store's functions for the cell's op mix (``op_table``)."""
    if wl.table is None:
        wl.table = wl.user_table() if wl.user_spec else op_table(spec_for(wl.backend_name), wl.ops)
    return wl.table


class UserOps:
    """One user's view: its backend client, RNG and read distribution."""

    def __init__(self, workload: CellWorkload, backend: Backend, *, user_index: int, caller: Any = None) -> None:
        self.wl = workload
        self.backend = backend
        #: The Locust user a Python workload's ops are methods of (``None`` for the built-in ops).
        self.caller = caller
        seed = workload.seed * 1_000_003 + user_index
        self.rng = random.Random(seed)
        self.dist = make_distribution(workload.distribution, seed=seed, params=workload.distribution_params)
        self._ops = cell_table(workload)
        #: Cursor of the page before ``query.page`` (cursor pagination): a client that keeps
        #: its cursor pays for one page per request, not for every skipped one.
        self._page_cursor: Any = None

    def run(self, op: str) -> Key | None:
        """Perform ``op`` once; return the (first) key it touched, for key sampling."""
        return self._ops[op](self)

    def configured_query(self) -> None:
        """``[workload.query]``: one query as configured (a cursor walk to ``page`` first, once)."""
        wl, q = self.wl, self.wl.query
        limit = q.limit or wl.scan_length
        ancestor = None
        if q.ancestor:
            ancestor = self.existing_key()
        if q.paginate == "cursor":
            if self._page_cursor is None:
                # First query of this user walks to the page once (recorded as one slow op).
                for _ in range(q.page):
                    self.backend.query(query_spec(q, limit=limit, ancestor=ancestor, start_after=self._page_cursor))
                    self._page_cursor = getattr(self.backend, "last_cursor", None)
            self.backend.query(query_spec(q, limit=limit, ancestor=ancestor, start_after=self._page_cursor))
            return
        self.backend.query(query_spec(q, limit=limit, ancestor=ancestor, page=q.page))

    def existing_key(self) -> Key:
        """The key of an existing record, picked by the user's read distribution."""
        n = self.wl.existing()
        if n <= 0:
            raise LookupError("no records yet: add inserts or set record_count > 0")
        key = self.wl.key_of(self.dist.next_index(n))
        if key is None:  # server-allocated key not known yet (another process inserted it)
            raise LookupError("record not known to this process yet")
        return key
