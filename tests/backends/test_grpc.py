"""The ``grpc`` drivers against the real emulators, op by op, beside the client driver.

One scripted session per store runs every operation through both drivers (each on its own
namespace, same data): the RPCs each sends are captured (the client's at gRPC's
multi-callables, the grpc driver's at its channel) and must be the same methods with the
same request messages and routing metadata; the results must be equal; and what one
driver wrote the other reads. Error classes are compared on real failures.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from google.protobuf import text_format

from keyramp.backends import BACKENDS, Backend, QuerySpec, Target, spec_for
from keyramp.backends._errors import classify
from keyramp.backends._rpc import GrpcBackend
from keyramp.backends.bigtable._grpc import BigtableGrpcBackend
from keyramp.backends.datastore._grpc import DatastoreGrpcBackend, FirestoreDatastoreGrpcBackend
from keyramp.backends.firestore._grpc import FirestoreGrpcBackend

pytestmark = pytest.mark.emulator

GRPC: dict[str, type[GrpcBackend]] = {
    "datastore": DatastoreGrpcBackend,
    "firestore-datastore": FirestoreDatastoreGrpcBackend,
    "firestore": FirestoreGrpcBackend,
    "bigtable": BigtableGrpcBackend,
}
assert all(spec_for(name).driver("grpc") is cls for name, cls in GRPC.items())
ALL = list(GRPC)
#: Metadata both drivers must send alike (routing, the emulator's credentials).
_COMPARED_METADATA = {"x-goog-request-params", "google-cloud-resource-prefix", "authorization"}


def _rec(i: int) -> dict[str, Any]:
    return {"payload": bytes([i]) * 16, "n": i, "s": "even" if i % 2 == 0 else "odd"}


def _script(name: str) -> list[tuple[str, Callable[[Backend], Any]]]:
    """Every operation and its variants; each step returns what the test compares."""
    keys = [f"k{i:02d}" for i in range(10)]
    steps: list[tuple[str, Callable[[Backend], Any]]] = [
        ("insert", lambda b: b.insert("a1", {**_rec(1), "f": 1.5, "t": True})),
        ("read", lambda b: b.read("a1")),
        ("read missing", lambda b: b.read("zz")),
        ("update", lambda b: b.update("a1", _rec(3))),
        ("batch_write", lambda b: b.batch_write([(k, _rec(i)) for i, k in enumerate(keys)])),
        ("batch_read", lambda b: b.batch_read([*keys[:4], "zz"])),
        ("scan", lambda b: b.scan("k02", 5)),
        ("scan to end", lambda b: b.scan("k08", 5)),
        ("query filter", lambda b: b.query(QuerySpec(field="n", op=">=", value=4, limit=3))),
        ("query next page", lambda b: b.query(QuerySpec(field="n", op=">=", value=4, limit=3,
                                                        start_after=b.last_cursor))),  # type: ignore[attr-defined]
        ("query offset", lambda b: b.query(QuerySpec(limit=5, offset=7))),
        ("query keys only", lambda b: b.query(QuerySpec(field="s", op="==", value="even", keys_only=True, limit=100))),
        ("query projection", lambda b: b.query(QuerySpec(projection=("s",), limit=100))),
        ("query pages", lambda b: _pages(b)),
        ("transaction", lambda b: b.transaction("a1", "counter", 2)),
        ("transaction new", lambda b: b.transaction("fresh", "counter", 1)),
        ("increment", lambda b: b.increment("a1", "counter", 3)),
        ("delete", lambda b: b.delete("k01")),
        ("read deleted", lambda b: b.read("k01")),
    ]
    if name != "bigtable":
        steps += [
            ("query order", lambda b: b.query(QuerySpec(field="n", op=">", value=2, order_by="-n", limit=4))),
            ("query order next", lambda b: b.query(QuerySpec(field="n", op=">", value=2, order_by="-n", limit=4,
                                                             start_after=b.last_cursor))),  # type: ignore[attr-defined]
        ]
    if name in ("datastore", "firestore-datastore"):
        steps += [
            ("numeric id", lambda b: b.insert(7, _rec(7))),
            ("ancestors", lambda b: b.batch_write([((1, i), _rec(i)) for i in range(1, 4)] + [((2, 1), _rec(9))])),
            ("read child", lambda b: (b.read((1, 2)), b.read((2, 2)))),
            ("query ancestor", lambda b: b.query(QuerySpec(ancestor=1, field="n", op=">=", value=2))),
            ("query ancestor keys", lambda b: b.query(QuerySpec(ancestor=2, keys_only=True))),
        ]
    return steps


def _pages(b: Backend) -> list[int]:
    pages = [b.query(QuerySpec(limit=4))]
    while pages[-1] == 4:
        pages.append(b.query(QuerySpec(limit=4, start_after=b.last_cursor)))  # type: ignore[attr-defined]
    return pages


# -- capturing what each driver sends -----------------------------------------------------------
def _normal(text: str, namespace: str) -> str:
    text = text.replace(namespace, "NS")
    text = re.sub(r"timestamp_micros: \d+", "timestamp_micros: T", text)  # client-side clocks
    return re.sub(r'transaction: "(?:[^"\\]|\\.)*"', 'transaction: "TXN"', text)  # per-transaction ids


def _entry(path: Any, request: Any, metadata: Any, namespace: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    pb = type(request).pb(request) if hasattr(type(request), "pb") else request
    md = tuple(sorted((k, _normal(v, namespace)) for k, v in (metadata or ()) if k in _COMPARED_METADATA))
    path = path.decode() if isinstance(path, bytes) else str(path)
    return path, _normal(text_format.MessageToString(pb, as_one_line=True), namespace), md


@pytest.fixture
def client_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any, Any]]:
    """Every request the official clients send through gRPC's synchronous multi-callables."""
    calls: list[tuple[Any, Any, Any]] = []
    from grpc import _channel

    for cls, attrs in ((_channel._UnaryUnaryMultiCallable, ("__call__", "with_call")),
                       (_channel._UnaryStreamMultiCallable, ("__call__",))):
        for attr in attrs:
            original = getattr(cls, attr)

            def spy(self: Any, request: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                metadata = kwargs.get("metadata") or ()
                if not any(v.find(" keyramp/") > 0 for k, v in metadata if k == "x-goog-api-client"):
                    calls.append((self._method, request, metadata))  # not the grpc driver's own calls
                return _original(self, request, *args, **kwargs)

            monkeypatch.setattr(cls, attr, spy)
    return calls


def _spy_channel(backend: GrpcBackend) -> list[tuple[Any, Any, Any]]:
    calls: list[tuple[Any, Any, Any]] = []
    unary, stream = backend.rpc.unary, backend.rpc.stream

    def spy_unary(method: Any, request: Any, metadata: Any) -> Any:
        calls.append((method.path, request, metadata))
        return unary(method, request, metadata)

    def spy_stream(method: Any, request: Any, metadata: Any) -> Any:
        calls.append((method.path, request, metadata))
        return stream(method, request, metadata)

    backend.rpc.unary, backend.rpc.stream = spy_unary, spy_stream  # type: ignore[method-assign]
    return calls


@pytest.fixture
def pair(target_factory: Callable[..., Target]) -> Iterator[Callable[..., Any]]:
    """``pair(name, executor=...)`` -> (client backend, grpc backend), each on a fresh namespace."""
    made: list[Backend] = []

    def make(name: str, *, executor: str = "aio", **fields: Any) -> tuple[Backend, GrpcBackend]:
        fields.setdefault("unindexed", frozenset({"payload"}))
        client_target = target_factory(name, **fields)
        grpc_target = target_factory(name, **fields)
        BACKENDS[name].prepare(client_target)
        GRPC[name].prepare(grpc_target)
        client = BACKENDS[name](client_target)
        driver = type(f"{GRPC[name].__name__}_{executor}", (GRPC[name],), {"executor": executor})(grpc_target)
        made.extend((client, driver))
        return client, driver

    yield make
    for backend in made:
        backend.close()


@pytest.mark.parametrize("executor", ["aio", "gevent"])
@pytest.mark.parametrize("name", ALL)
def test_same_rpcs_same_results_and_cross_reads(pair: Callable[..., Any], client_calls: list[Any], name: str,
                                                executor: str) -> None:
    client, driver = pair(name, executor=executor)
    driver_calls = _spy_channel(driver)
    for step, run in _script(name):
        before_c, before_d = len(client_calls), len(driver_calls)
        expected, got = run(client), run(driver)
        assert got == expected, step
        sent_c = [_entry(*c, client.target.namespace) for c in client_calls[before_c:]]
        sent_d = [_entry(*c, driver.target.namespace) for c in driver_calls[before_d:]]
        assert sent_d == sent_c, step
    # Cross reads: what one driver wrote, the other reads (keys, counters, deletions).
    other_c = type(client)(driver.target)
    other_d = type(driver)(client.target)
    try:
        for reader, writer in ((other_c, driver), (other_d, client)):
            assert reader.read("a1") and reader.read("fresh") and not reader.read("k01")
            assert reader.batch_read([f"k{i:02d}" for i in range(10)]) == 9
            spec = QuerySpec(field="n", op="==", value=3, limit=10)
            assert reader.query(spec) == writer.query(spec) >= 2  # a1 and k03 (and a child)
            assert reader.scan("k00", 100) == writer.scan("k00", 100) >= 9
    finally:
        other_c.close()
        other_d.close()


@pytest.mark.parametrize("name", ["datastore", "firestore-datastore", "firestore"])
def test_server_allocated_keys_read_across_drivers(pair: Callable[..., Any], name: str) -> None:
    client, driver = pair(name)
    key = driver.insert(None, {"n": 1})
    assert key is not None and driver.read(key)
    keys = driver.allocate_keys(5)
    assert len(set(keys)) == 5 and key not in keys
    driver.insert(keys[0], {"n": 2})
    reader = type(client)(driver.target)
    try:
        assert reader.read(key) and reader.read(keys[0])
    finally:
        reader.close()


def test_counters_agree_across_drivers(pair: Callable[..., Any]) -> None:
    """Transactions and increments by both drivers on one Bigtable row add up (8-byte counters)."""
    client, driver = pair("bigtable")
    shared = type(driver)(client.target)
    try:
        for _ in range(3):
            client.increment("c", "counter", 1)
            shared.transaction("c", "counter", 10)
            shared.increment("c", "counter", 100)
        row = client._table.read_row(b"c")  # type: ignore[attr-defined]
        assert int.from_bytes(row.get_cells("cf", b"counter")[0].value, "big", signed=True) == 333
    finally:
        shared.close()


# -- error classes --------------------------------------------------------------------------------
def _error(fn: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as err:
        fn()
    return classify(err.value)


def test_bigtable_missing_table_and_failed_entries_classify_alike(target_factory: Callable[..., Target]) -> None:
    from keyramp.backends.bigtable._admin import admin_client

    target = target_factory("bigtable")  # no prepare(): the table does not exist
    client, driver = BACKENDS["bigtable"](target), BigtableGrpcBackend(target)
    try:
        for op in (lambda b: b.update("r", {"n": 1}), lambda b: b.read("r"),
                   lambda b: b.batch_write([("a", {"n": 1})]), lambda b: b.increment("r", "c", 1)):
            assert _error(lambda: op(driver)) == _error(lambda: op(client)) == "NOT_FOUND"  # noqa: B023 - called at once
        # A table without family "cf": MutateRows fails entry by entry (statuses inside the response).
        with admin_client(target.endpoint) as admin:
            admin.create_table(parent=f"projects/{target.project}/instances/{target.instance}",
                               table_id=target.namespace, table={"column_families": {"other": {}}})
        batch = [("a", {"n": 1}), ("b", {"n": 2})]
        assert _error(lambda: driver.batch_write(batch)) == _error(lambda: client.batch_write(batch)) == "INTERNAL"
    finally:
        client.close()
        driver.close()


@pytest.mark.parametrize("name", ["datastore", "firestore-datastore", "firestore"])
def test_invalid_key_classifies_alike(pair: Callable[..., Any], name: str) -> None:
    client, driver = pair(name)
    assert _error(lambda: driver.insert("__reserved__", {"n": 1})) == "INVALID_ARGUMENT"
    assert _error(lambda: client.insert("__reserved__", {"n": 1})) == "INVALID_ARGUMENT"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ALL)
def test_unreachable_endpoint_fails_at_once_without_retries(target_factory: Callable[..., Target], name: str) -> None:
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    driver = GRPC[name](target_factory(name, endpoint=f"127.0.0.1:{port}", timeout_s=2.0))
    try:
        for _ in range(2):
            assert _error(lambda: driver.read("k")) in {"UNAVAILABLE", "DEADLINE_EXCEEDED"}
    finally:
        driver.close()


def test_already_exists_from_a_raw_insert_is_classified(pair: Callable[..., Any]) -> None:
    """The drivers upsert (as the client's put); an insert mutation of an existing key is refused."""
    from keyramp.backends.datastore import _grpc as ds

    _, driver = pair("datastore")
    driver.insert("dup", {"n": 1})
    entity = driver._entity(driver._key("dup"), {"n": 2})  # type: ignore[attr-defined]
    assert _error(lambda: driver._commit([ds._Mutation(insert=entity)])) == "ALREADY_EXISTS"  # type: ignore[attr-defined]


def _commit_after(driver: GrpcBackend, method_suffix: str, before: Callable[[], Any]) -> None:
    """Run ``before`` just before the driver's next ``method_suffix`` call (a deterministic race)."""
    unary = driver.rpc.unary

    def racing(method: Any, request: Any, metadata: Any) -> Any:
        if method.path.endswith(method_suffix):
            driver.rpc.unary = unary  # type: ignore[method-assign]
            before()
        return unary(method, request, metadata)

    driver.rpc.unary = racing  # type: ignore[method-assign]


@pytest.mark.parametrize(("name", "expected"), [("datastore", "ABORTED"), ("firestore", "ABORTED")])
def test_contention_aborts_the_transaction(pair: Callable[..., Any], name: str, expected: str) -> None:
    """Another transaction commits the same entity between the driver's read and its commit."""
    _client, driver = pair(name)
    racer = type(driver)(driver.target)
    try:
        driver.update("k", {"counter": 1})
        _commit_after(driver, "/Commit", lambda: racer.update("k", {"counter": 100}))
        assert _error(lambda: driver.transaction("k", "counter", 1)) == expected
        assert racer.read("k")
    finally:
        racer.close()


def test_unknown_executor_is_refused(target_factory: Callable[..., Target]) -> None:
    from keyramp.backends._rpc import open_channel
    from keyramp.backends.bigtable._grpc import SERVICE

    with pytest.raises(ValueError, match="unknown gRPC executor 'threads'"):
        open_channel(target_factory("bigtable"), SERVICE, (), executor="threads")
