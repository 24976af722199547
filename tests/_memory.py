"""A dict-backed store declared entirely in the tests: a ``Backend`` and its ``StoreSpec``.

It stands for "a fifth store": nothing in ``keyramp/`` knows it. ``memory_spec(store)``
returns a spec whose driver reads and writes ``store`` (one ``MemoryStore`` per test), with
no emulator process: its ``in_process`` part names its endpoint and clears it; its price sheet
(``_memory_prices.json``) and its Python-workload user class (``keyramp.MemoryUser``) come with
it, as a built-in store's do from its package. Register it with
``keyramp.backends.registered(spec)`` for the length of a test.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from keyramp.backends import (
    Backend,
    BatchLimits,
    InProcessSpec,
    KeyRules,
    ParamRange,
    PriceSheet,
    QuerySpec,
    Record,
    StoreParams,
    StoreSpec,
    TabletModel,
    Target,
    WorkloadUserSpec,
)
from keyramp.core._errors import UsageError
from keyramp.core._types import OP_NAMES, Key, key_sort_text

__all__ = ["PRICES", "MemoryStore", "memory_spec"]

PRICES = Path(__file__).with_name("_memory_prices.json")

_COMPARE = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


class MemoryStore:
    """Namespaces of records by key text; one lock (probes write from threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.data: dict[str, dict[str, dict[str, Any]]] = {}
        self.resets = 0
        self.calls: dict[str, int] = {}

    def clear(self) -> None:
        with self.lock:
            self.data.clear()
            self.resets += 1

    def table(self, namespace: str) -> dict[str, dict[str, Any]]:
        return self.data.setdefault(namespace, {})


class _MemoryBackend(Backend):
    store: ClassVar[MemoryStore]

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._client = self.store  # what a Python workload's ``self.client`` is
        self._rows = self.rows = self.store.table(target.namespace)

    def _count(self, op: str) -> None:
        self.store.calls[op] = self.store.calls.get(op, 0) + 1

    def insert(self, key: Key | None, record: Record) -> Key:
        if key is None:
            raise UsageError("memory store has no id allocator")
        self._count("insert")
        with self.store.lock:
            self._rows[key_sort_text(key)] = dict(record)
        return key

    def read(self, key: Key) -> bool:
        self._count("read")
        return key_sort_text(key) in self._rows

    def update(self, key: Key, record: Record) -> None:
        self._count("update")
        with self.store.lock:
            self._rows[key_sort_text(key)] = dict(record)

    def delete(self, key: Key) -> None:
        self._count("delete")
        with self.store.lock:
            self._rows.pop(key_sort_text(key), None)

    def scan(self, start: Key, limit: int) -> int:
        self._count("scan")
        first = key_sort_text(start)
        return min(limit, sum(1 for k in self._rows if k >= first))

    def query(self, spec: QuerySpec) -> int:
        self._count("query")
        rows = list(self._rows.values())
        if spec.field is not None:
            rows = [r for r in rows if spec.field in r and _COMPARE[spec.op](r[spec.field], spec.value)]
        return len(rows[spec.offset:spec.offset + spec.limit])

    def batch_write(self, items: Sequence[tuple[Key, Record]]) -> None:
        self._count("batch_write")
        with self.store.lock:
            for key, record in items:
                self._rows[key_sort_text(key)] = dict(record)

    def batch_read(self, keys: Sequence[Key]) -> int:
        self._count("batch_read")
        return sum(1 for k in keys if key_sort_text(k) in self._rows)

    def increment(self, key: Key, field: str, amount: int) -> None:
        self._count("increment")
        with self.store.lock:
            row = self._rows.setdefault(key_sort_text(key), {})
            row[field] = row.get(field, 0) + amount

    def transaction(self, key: Key, field: str, amount: int) -> None:
        raise UsageError("memory store has no transactions")  # not in the spec's operations

    @classmethod
    def cleanup(cls, target: Target) -> int:
        with cls.store.lock:
            return len(cls.store.data.pop(target.namespace, {}))

    @classmethod
    def remaining(cls, target: Target) -> int:
        return len(cls.store.data.get(target.namespace, {}))


def _made_up(low: float, mid: float, high: float, unit: str, *, better: str = "high") -> ParamRange:
    return ParamRange(low=low, mid=mid, high=high, unit=unit, source="unpublished", note="a test store's own numbers",
                      better=better)  # type: ignore[arg-type]


def memory_spec(store: MemoryStore, *, name: str = "memory") -> StoreSpec:
    """The spec of an in-memory store backed by ``store``: no emulator, no transactions, short
    keys (32 bytes), batches of at most 50, and a deliberately small tablet model."""
    driver = type("MemoryBackend", (_MemoryBackend,), {"name": name, "store": store})

    def reset(endpoint: str, *, project: str, instance: str, table: str | None, timeout_s: float) -> None:
        store.clear()

    return StoreSpec(
        name=name,
        title="In-memory test store",
        drivers={"client": driver},
        emulator=None,
        in_process=InProcessSpec(endpoint=f"memory://{name}", reset=reset),
        lacks={
            "server_allocated_keys": "the memory store has no id allocator",
            "secondary_indexes": "the memory store indexes nothing",
            "ancestor_queries": "the memory store has flat keys",
            "entity_groups": "the memory store has flat keys",
        },
        operations=frozenset(OP_NAMES) - {"transaction"},
        batch=BatchLimits(write=50, read=50, source="tests/_memory.py"),
        keys=KeyRules(max_key_bytes=32, forbidden_chars=("/",)),
        rules=frozenset({"BP-KEY-7"}),
        hotspot_fix=("BP-KEY-3",),
        # Small on purpose: 40 ops/s per tablet, so a short run can overload one.
        tablets=TabletModel.single(StoreParams(store=name, kind="ranges", ranges={
            "tablet_ops_per_s": _made_up(30.0, 40.0, 50.0, "ops/s"),
            "split_threshold_frac": _made_up(0.5, 0.6, 0.7, "× tablet capacity"),
            "split_delay_s": _made_up(30.0, 60.0, 90.0, "s", better="low"),
            "split_fanout": _made_up(2.0, 2.0, 2.0, "pieces"),
        })),
        cloud=None,
        prices=PriceSheet(name=name, file=PRICES),
        user=WorkloadUserSpec(name="MemoryUser", store=name, driver_attributes=("rows",),
                              doc="``self.client``: the MemoryStore; ``self.rows``: the cell's records by key."),
    )
