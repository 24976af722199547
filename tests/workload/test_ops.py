"""The request path with a fake store: ``UserOps.run`` dispatches through the cell's op table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _memory import MemoryStore, memory_spec

from keyramp.backends import registered, spec_for
from keyramp.core._errors import UsageError
from keyramp.core._types import OP_NAMES
from keyramp.keys import make_distribution
from keyramp.profile import Profile
from keyramp.profile._profile import parse_profile
from keyramp.workload import CellWorkload, UserOps
from keyramp.workload._ops import SHARED_OPS, cell_table, op_table

_OPS = {op: 1 / 9 for op in OP_NAMES if op != "transaction"}


def _profile(ops: dict[str, float], *, backend: str = "memory", **workload: Any) -> Profile:
    return parse_profile({
        "name": "ops", "backend": backend, "seed": 7, "keys": {"strategy": "sequential"},
        "workload": {"value_size": 16, "indexed_fields": 1, "ops": ops, "record_count": 20, "batch_size": 3,
                     "scan_length": 5, "read_distribution": "uniform", **workload},
    })


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    memory = MemoryStore()
    with registered(memory_spec(memory)):
        yield memory


def _user(ops: dict[str, float], **workload: Any) -> tuple[CellWorkload, UserOps]:
    wl = CellWorkload(backend="memory", strategy="sequential", settings=_profile(ops, **workload))
    backend = spec_for("memory").driver()(wl.target(project="p-test", endpoint="memory://", namespace="ns"))
    for batch in wl.preload_batches():
        wl.preload(backend, batch)
    return wl, UserOps(wl, backend, user_index=0)


def test_shared_table_covers_every_profile_operation() -> None:
    # Design constraint: one function per op name a profile may use.
    assert set(SHARED_OPS) == set(OP_NAMES)


def test_each_op_calls_its_backend_method_once_and_returns_the_key(store: MemoryStore) -> None:
    wl, user = _user(_OPS)
    expected = make_distribution("uniform", seed=7 * 1_000_003, params={})  # the user's own stream
    store.calls.clear()
    for op in _OPS:
        before = dict(store.calls)
        key = user.run(op)
        assert store.calls.get(op, 0) == before.get(op, 0) + 1, op
        assert sum(store.calls.values()) == sum(before.values()) + 1, f"{op} made more than one call"
        if op == "insert":
            assert key == 21  # sequential: the first index after the 20 preloaded records
        elif op == "batch_write":
            assert key == 22  # three fresh indexes, the first key returned
        elif op == "query":
            assert key is None
        else:
            assert isinstance(key, int) and 1 <= key <= wl.existing(), (op, key)
    # Reads follow the user's distribution: replaying it gives the same first read key.
    wl2, user2 = _user({"read": 1.0})
    assert user2.run("read") == wl2.key_of(expected.next_index(wl2.existing()))


def test_a_store_that_lacks_an_op_has_no_table_entry(store: MemoryStore) -> None:
    with pytest.raises(UsageError, match="memory does not support operation 'transaction'"):
        op_table(spec_for("memory"), ["read", "transaction"])
    assert set(op_table(spec_for("memory"), ["read", "scan"])) == {"read", "scan"}


def test_a_store_operation_replaces_the_shared_one() -> None:
    import dataclasses

    seen: list[Any] = []

    def read_twice(u: UserOps) -> Any:
        key = u.existing_key()
        u.backend.read(key)
        u.backend.read(key)
        seen.append(key)
        return key

    memory = MemoryStore()
    spec = dataclasses.replace(memory_spec(memory, name="memory2"), own_operations={"read": read_twice})
    with registered(spec):
        wl = CellWorkload(backend="memory2", strategy="sequential",
                          settings=_profile({"read": 0.5, "insert": 0.5}, backend="memory2"))
        assert cell_table(wl)["read"] is read_twice and cell_table(wl)["insert"] is SHARED_OPS["insert"]
        backend = spec.driver()(wl.target(project="p-test", endpoint="memory://", namespace="ns"))
        key = UserOps(wl, backend, user_index=3).run("read")
    assert seen == [key] and memory.calls == {"read": 2}


def test_server_allocated_insert_keeps_the_key_the_store_returned() -> None:
    class Allocating:
        def insert(self, key: Any, record: Any) -> Any:
            assert key is None
            return "srv-1"

    wl = CellWorkload(backend="datastore", strategy="server_allocated",
                      settings=_profile({"insert": 1.0}, backend="datastore", record_count=0))
    user = UserOps(wl, Allocating(), user_index=0)  # type: ignore[arg-type]
    assert user.run("insert") == "srv-1" and wl.allocated == ["srv-1"]
