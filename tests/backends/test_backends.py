"""Every backend operation against its real official emulator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as gexc

from keyramp.backends import Backend, QuerySpec, spec_for
from keyramp.backends._errors import classify
from keyramp.backends.bigtable._client import BigtableBackend, row_key
from keyramp.core._errors import UnsupportedOperation

pytestmark = pytest.mark.emulator

ALL = ["datastore", "firestore-datastore", "firestore", "bigtable"]
DATASTORE_API = ["datastore", "firestore-datastore"]
SERVER_IDS = ["datastore", "firestore-datastore", "firestore"]


def _value(backend: Backend, key: Any, field: str) -> Any:
    """Read one field back through the backend's own client (test-only peek)."""
    if isinstance(backend, BigtableBackend):
        row = backend._table.read_row(row_key(key))
        return int.from_bytes(row.get_cells("cf", field)[0].value, "big", signed=True)
    if backend.name == "firestore":
        return backend._doc(key).get().to_dict()[field]
    return backend._client.get(backend._key(key))[field]


def _fill(backend: Backend, n: int = 10) -> list[str]:
    keys = [f"k{i:02d}" for i in range(n)]
    backend.batch_write([(k, {"payload": b"x" * 32, "n": i, "s": "even" if i % 2 == 0 else "odd"})
                         for i, k in enumerate(keys)])
    return keys


@pytest.mark.parametrize("name", ALL)
def test_insert_read_update_delete(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    assert b.insert("alpha", {"payload": b"\x00\xff", "n": 1, "s": "a", "f": 1.5}) == "alpha"
    assert b.read("alpha") is True
    assert b.read("missing") is False
    b.update("alpha", {"n": 41})
    b.increment("alpha", "n", 1)
    assert _value(b, "alpha", "n") == 42
    b.delete("alpha")
    assert b.read("alpha") is False


@pytest.mark.parametrize("name", DATASTORE_API)
def test_numeric_ids_and_ancestor_paths(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    b.insert(7, {"n": 7})
    b.batch_write([((1, i), {"n": i}) for i in range(1, 4)] + [((2, 1), {"n": 9})])
    assert b.read(7) and b.read((1, 2)) and not b.read((2, 2))
    assert b.query(QuerySpec(ancestor=1)) == 3
    assert b.query(QuerySpec(ancestor=2, keys_only=True)) == 1
    assert b.query(QuerySpec(ancestor=1, field="n", op=">=", value=2)) == 2


@pytest.mark.parametrize("name", ALL)
def test_scan_reads_in_key_order_from_start(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    _fill(b, 20)
    assert b.scan("k05", 5) == 5
    assert b.scan("k18", 5) == 2
    assert b.scan("k99", 5) == 0


@pytest.mark.parametrize("name", ALL)
def test_query_filter_limit_offset(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    _fill(b, 10)
    assert b.query(QuerySpec(field="n", op=">=", value=4, limit=100)) == 6
    assert b.query(QuerySpec(field="n", op="<", value=4, limit=100)) == 4
    assert b.query(QuerySpec(field="s", op="==", value="odd", limit=100)) == 5
    assert b.query(QuerySpec(field="n", op=">=", value=4, limit=3)) == 3
    assert b.query(QuerySpec(limit=5, offset=7)) == 3
    if name != "bigtable":
        assert b.query(QuerySpec(field="n", op=">", value=2, order_by="-n", limit=4)) == 4


@pytest.mark.parametrize("name", ALL)
def test_query_cursor_pages_through_everything(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    _fill(b, 10)
    pages = [b.query(QuerySpec(limit=4))]
    while pages[-1] == 4:
        pages.append(b.query(QuerySpec(limit=4, start_after=b.last_cursor)))  # type: ignore[attr-defined]
    assert pages == [4, 4, 2]


@pytest.mark.parametrize("name", ALL)
def test_query_keys_only_and_projection(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    _fill(b, 6)
    assert b.query(QuerySpec(keys_only=True, limit=100)) == 6
    assert b.query(QuerySpec(projection=("s",), limit=100)) == 6
    assert b.query(QuerySpec(field="s", op="==", value="even", keys_only=True, limit=100)) == 3


@pytest.mark.parametrize("name", DATASTORE_API)
def test_unindexed_fields_are_not_queryable(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name, unindexed=frozenset({"s"}))
    _fill(b, 4)
    assert b.query(QuerySpec(field="s", op="==", value="even")) == 0
    assert b.query(QuerySpec(field="n", op="==", value=2)) == 1


@pytest.mark.parametrize("name", ALL)
def test_batch_write_and_batch_read(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    keys = _fill(b, 8)
    assert b.batch_read([*keys[:5], "nope1", "nope2"]) == 5
    assert b.batch_read(["nope"]) == 0


@pytest.mark.parametrize("name", ALL)
def test_transaction_and_increment(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    b.insert("counter", {"c": 10})
    b.transaction("counter", "c", 5)
    b.increment("counter", "c", 3)
    assert _value(b, "counter", "c") == 18
    # Both create the field when missing.
    b.transaction("fresh", "c", 2)
    b.increment("fresh2", "c", 4)
    assert _value(b, "fresh", "c") == 2
    assert _value(b, "fresh2", "c") == 4


@pytest.mark.parametrize("name", SERVER_IDS)
def test_server_allocated_insert_and_allocate_keys(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    assert spec_for(b.name).has("server_allocated_keys")
    key = b.insert(None, {"n": 1})
    assert key is not None and b.read(key)
    keys = b.allocate_keys(5)
    assert len(set(keys)) == 5 and key not in keys
    b.insert(keys[0], {"n": 2})
    assert b.read(keys[0])


def test_bigtable_has_no_server_keys(backend_factory: Callable[..., Backend]) -> None:
    b = backend_factory("bigtable")
    assert not spec_for(b.name).has("server_allocated_keys")
    with pytest.raises(UnsupportedOperation):
        b.insert(None, {"n": 1})
    with pytest.raises(UnsupportedOperation):
        b.allocate_keys(2)


def test_bigtable_write_to_missing_table_raises_not_found(target_factory: Callable[..., Any]) -> None:
    b = BigtableBackend(target_factory("bigtable"))  # no prepare(): the table does not exist
    try:
        with pytest.raises(gexc.NotFound) as err:
            b.update("row", {"n": 1})
        assert classify(err.value) == "NOT_FOUND"
        with pytest.raises(Exception) as batch_err:
            b.batch_write([("a", {"n": 1}), ("b", {"n": 2})])
        assert classify(batch_err.value) == "NOT_FOUND"
    finally:
        b.close()


@pytest.mark.parametrize("name", ["datastore", "firestore-datastore", "firestore"])
def test_classify_invalid_key_from_emulator(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    with pytest.raises(Exception) as err:
        b.insert("__reserved__", {"n": 1})  # names/ids of the form __.*__ are reserved
    assert classify(err.value) == "INVALID_ARGUMENT"


def test_datastore_endpoints_are_per_client(backend_factory: Callable[..., Backend]) -> None:
    """Datastore and Firestore-in-Datastore-mode clients in one process reach different emulators."""
    ds = backend_factory("datastore", namespace="kr_shared_kind")
    fsd = backend_factory("firestore-datastore", namespace="kr_shared_kind")
    ds.insert("only-in-datastore", {"n": 1})
    assert ds.read("only-in-datastore") and not fsd.read("only-in-datastore")
    # gRPC, not HTTP: the GAPIC client sits on a grpc transport.
    assert type(ds._client._datastore_api).__name__ == "DatastoreClient"  # type: ignore[attr-defined]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ALL)
def test_unreachable_endpoint_fails_without_client_retries(target_factory: Callable[..., Any], name: str) -> None:
    """Default client retries would keep trying for 60-600 s (beyond the test timeout)."""
    import socket

    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    from keyramp.backends import BACKENDS

    b = BACKENDS[name](target_factory(name, endpoint=f"127.0.0.1:{port}", timeout_s=2.0))
    try:
        for _ in range(2):
            with pytest.raises(Exception) as err:
                b.read("k")
            assert classify(err.value) in {"UNAVAILABLE", "DEADLINE_EXCEEDED"}
    finally:
        b.close()


# -- classify on constructed errors (the mapping itself, no store involved) ------------------
class _Rpc(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.RESOURCE_EXHAUSTED


class _Status:
    code = 10  # google.rpc.Code ABORTED, as in a Bigtable row status


def _chained(outer: BaseException, cause: BaseException) -> BaseException:
    try:
        raise outer from cause
    except BaseException as exc:  # noqa: BLE001
        return exc


def test_classify_maps_statuses_and_chains() -> None:
    assert classify(gexc.Aborted("x")) == "ABORTED"
    assert classify(gexc.DeadlineExceeded("x")) == "DEADLINE_EXCEEDED"
    assert classify(gexc.ServiceUnavailable("x")) == "UNAVAILABLE"
    assert classify(gexc.FailedPrecondition("x")) == "FAILED_PRECONDITION"
    assert classify(gexc.AlreadyExists("x")) == "ALREADY_EXISTS"
    assert classify(_Rpc()) == "RESOURCE_EXHAUSTED"
    assert classify(_Status()) == "ABORTED"  # type: ignore[arg-type]
    # Firestore: "Failed to commit transaction in 1 attempts." raised from Aborted.
    assert classify(_chained(ValueError("Failed to commit"), gexc.Aborted("contention"))) == "ABORTED"
    assert classify(ExceptionGroup("bulk", [_chained(RuntimeError("entry"), gexc.NotFound("t"))])) == "NOT_FOUND"
    assert classify(KeyError("k")) == "CLIENT_KeyError"
    assert classify(ValueError("plain")) == "CLIENT_ValueError"


@pytest.mark.parametrize(("name", "expected"), [("datastore", "ABORTED"),
                                                ("firestore-datastore", "DEADLINE_EXCEEDED")])
def test_contention_is_classified(backend_factory: Callable[..., Backend], name: str, expected: str) -> None:
    """A write racing an open transaction: the legacy emulator aborts the commit (optimistic);
    Firestore in Datastore mode locks pessimistically, so the outside write waits out its deadline."""
    a = backend_factory(name)
    b = backend_factory(name, namespace=a.target.namespace, timeout_s=1.0)  # only the racer is short
    a.update("k", {"c": 1})
    client = a._client  # type: ignore[attr-defined]
    txn = client.transaction()
    txn.begin()
    try:
        entity = client.get(a._key("k"), transaction=txn)  # type: ignore[attr-defined]
        entity["c"] += 1
        txn.put(entity)
        with pytest.raises(Exception) as err:
            b.update("k", {"c": 100})
            txn.commit()
        assert classify(err.value) == expected
    finally:
        if txn._status == txn._IN_PROGRESS:
            txn.rollback()
