"""Real clients through the store proxy on the official emulators: the official client libraries
of the three emulators and keyramp's raw-gRPC driver for Bigtable (Firestore's with ``extended``),
directly and through a proxy, with the same workload — large
documents and rows (100 KiB values), batches, reads of more than 1 MiB (Firestore's
``BatchGetDocuments`` and Bigtable's ``ReadRows`` streams, ``MutateRows``), 64 operations in
flight on one channel — and a model that decides by key:

* **admitting all** (each write held 0.25 s, so that the proxy holds them all at once): every
  answer and everything the emulator stores is what it is directly; every request counted once;
* **throttling a share** (a quarter of the keys; others delayed): each throttled operation gets
  its store's documented status, and never reaches the emulator (what the emulator stores is the
  direct run's less exactly those writes, each counter incremented exactly once: nothing dropped,
  nothing duplicated); nothing hangs (every operation has the driver's deadline).

One proxy per store, in this process on a loop thread of its own (the relay is the code under
test; its process wrapper is tests/targets/test_proxy_emulators.py's), shared by the module.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud.bigtable.data import ReadRowsQuery

from keyramp.backends import EMULATOR_FOR, Backend, Target, spec_for
from keyramp.storemodel import Decision, StoreOp
from keyramp.targets._proxy import StoreProxy
from keyramp.targets._proxy_model import MODEL_TYPES
from keyramp.targets._proxy_stats import ProxyConfig
from tests._poll import wait_for

pytestmark = pytest.mark.emulator

BLOB = b"\xa5" * (100 * 1024)
N_DOCS, N_COUNTERS, N_LARGE, N_BATCHES = 40, 20, 12, 4


def _name(op: StoreOp) -> str:
    """The document, entity or row an operation names first (its key's last segment)."""
    return op.accesses[0].key.rpartition(b"\0")[2].lstrip(b"\x01\x02").decode("utf-8", "replace")


def throttled(name: str) -> bool:
    return zlib.crc32(name.encode()) % 4 == 0


class ByKey:
    """A model deciding by key. ``admit``: everything; the writes offered in its first ``gate_s``
    are all held until then (the proxy holds them at once), later ones 20 ms. Else a quarter of the
    keys throttled (cause ``key`` or ``range``, after 5 ms), a quarter admitted after 20 ms. Records
    when each hold began and ended."""

    def __init__(self, *, admit: bool, gate_s: float = 0.6) -> None:
        self.admit, self.gate_s = admit, gate_s
        self.t0: float | None = None
        self.spans: list[tuple[float, float]] = []
        self.throttled: list[str] = []

    def offer(self, op: StoreOp, now: float) -> Decision:
        name = _name(op)
        crc = zlib.crc32(name.encode())
        if self.admit:
            self.t0 = now if self.t0 is None else self.t0
            delay = 0.0 if op.kind == "read" else max(self.t0 + self.gate_s - now, 0.02)
            decision = Decision(True, delay, None)
        elif throttled(name):
            self.throttled.append(name)
            decision = Decision(False, 0.005, "key" if crc % 8 == 0 else "range")
        else:
            decision = Decision(True, 0.02 if crc % 4 == 1 else 0.0, None)
        self.spans.append((now, now + decision.delay_s))
        return decision

    def most_held_at_once(self) -> int:
        events = sorted([(e, -1) for s, e in self.spans if e > s] + [(s, 1) for s, e in self.spans if e > s])
        held = most = 0
        for _, step in events:
            held += step
            most = max(most, held)
        return most


class ThreadedProxy:
    """A ``StoreProxy`` serving on its own event-loop thread; ``use(model)`` swaps the model."""

    def __init__(self, store: str, upstream: str) -> None:
        self.model: Any = None
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.proxy = StoreProxy(spec=spec_for(store), upstream=upstream, make_model=lambda s, c: self.model,
                                types=MODEL_TYPES, config=ProxyConfig(mode="off"))
        port = self._call(self.proxy.start("127.0.0.1:0"))
        self.endpoint = f"127.0.0.1:{port}"

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def use(self, model: Any) -> None:
        async def configure() -> None:
            self.model = model
            self.proxy.configure(ProxyConfig(mode="store" if model is not None else "off"))
        self._call(configure())

    def stats(self) -> dict[str, Any]:
        async def stats() -> dict[str, Any]:
            return self.proxy.stats()
        result: dict[str, Any] = self._call(stats())
        return result

    def stop(self) -> None:
        self._call(self.proxy.stop(0))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class Proxies:
    """One proxy per store in front of its session emulator, started on first use; fresh targets."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.request = request
        self.started: dict[str, ThreadedProxy] = {}
        self.emulators: dict[str, str] = {}

    def __call__(self, store: str) -> ThreadedProxy:
        if store not in self.started:
            kind = EMULATOR_FOR[store]
            self.emulators[store] = self.request.getfixturevalue(f"{kind.replace('-', '_')}_emulator").endpoint
            self.started[store] = ThreadedProxy(store, self.emulators[store])
        return self.started[store]

    def target(self, store: str, *, through: bool) -> Target:
        """A fresh namespace on ``store``'s emulator, addressed directly or through its proxy."""
        proxy = self(store)
        return Target(backend=store, project="keyramp-test", namespace=f"kr_{uuid.uuid4().hex[:12]}",
                      endpoint=proxy.endpoint if through else self.emulators[store], timeout_s=10.0,
                      unindexed=frozenset({"blob"}))


@pytest.fixture(scope="module")
def proxies(request: pytest.FixtureRequest) -> Iterator[Proxies]:
    made = Proxies(request)
    yield made
    for proxy in made.started.values():
        proxy.stop()


# -- the workload -------------------------------------------------------------------------------

def _writes() -> list[list[tuple[str, str, tuple[Any, ...]]]]:
    """Two waves of (op, first key, arguments): 60 small writes (documents and counters), then the
    large ones (documents and batches, a 100-KiB value in each)."""
    small: list[tuple[str, str, tuple[Any, ...]]] = [
        ("insert", f"k{i:03d}", (f"k{i:03d}", {"n": i, "s": f"v{i}"})) for i in range(N_DOCS)]
    small += [("increment", f"c{i:02d}", (f"c{i:02d}", "n", 1)) for i in range(N_COUNTERS)]
    large: list[tuple[str, str, tuple[Any, ...]]] = [
        ("insert", f"g{i:02d}", (f"g{i:02d}", {"n": i, "blob": BLOB})) for i in range(N_LARGE)]
    for j in range(N_BATCHES):
        items = [(f"b{j}{i}", {"n": i, "blob": BLOB if i == 0 else b"small"}) for i in range(8)]
        large.append(("batch_write", items[0][0], (items,)))
    return [small, large]


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return ("ok", call())
    except gexc.GoogleAPICallError as exc:
        return ("error", exc.grpc_status_code.name if exc.grpc_status_code else type(exc).__name__)
    except Exception as exc:  # noqa: BLE001 - a raw-gRPC driver's status error
        code = getattr(exc, "code", None)
        return ("error", code().name if callable(code) else getattr(code, "name", type(exc).__name__))


def _wave(backend: Backend, writes: list[tuple[str, str, tuple[Any, ...]]]) -> list[tuple[str, Any]]:
    """``writes`` all at once, each on a thread of its own, on one client (one channel)."""
    start = threading.Barrier(len(writes))

    def one(write: tuple[str, str, tuple[Any, ...]]) -> tuple[str, Any]:
        start.wait(30)
        return _outcome(lambda: getattr(backend, write[0])(*write[2]))

    with ThreadPoolExecutor(len(writes)) as pool:
        return list(pool.map(one, writes))


def _run(backend: Backend) -> dict[str, Any]:
    """The two waves of writes, then reads of everything (more than 1 MiB)."""
    outcomes = {w[1]: o for wave in _writes() for w, o in zip(wave, _wave(backend, wave), strict=True)}
    keys = sorted(k for k in outcomes if not k.startswith("c")) + [f"b{j}{i}" for j in range(N_BATCHES)
                                                                   for i in range(1, 8)]
    reads = {"batch_read": _outcome(lambda: backend.batch_read(keys)),
             "scan": _outcome(lambda: backend.scan("a", 200)),
             "read": _outcome(lambda: backend.read("k001"))}
    return {"writes": outcomes, "reads": reads}


def _stored(store: str, target: Target) -> dict[str, Any]:
    """Everything in the target's namespace, read with the official client (``target``: the emulator)."""
    backend = spec_for(store).driver("client")(target)
    try:
        if store == "bigtable":
            return {row.row_key.decode(): sorted((c.qualifier, c.value) for c in row.cells)
                    for row in backend.table.read_rows(ReadRowsQuery())}  # type: ignore[attr-defined]
        if store == "firestore":
            client = backend._client  # type: ignore[attr-defined]
            return {d.id: d.to_dict() for d in client.collection(target.namespace).stream()}
        client = backend._client  # type: ignore[attr-defined]
        return {e.key.name: dict(e) for e in client.query(kind=backend._kind).fetch()}  # type: ignore[attr-defined]
    finally:
        backend.close()


#: Each store through its official client, and Bigtable through keyramp's raw-gRPC driver (its own
#: framing, one channel for everything); Firestore's raw-gRPC driver with ``extended`` (the store-fidelity
#: run in test_proxy_emulators.py drives it through a proxy on every commit).
COMBOS = [("firestore", "client"), ("bigtable", "client"), ("datastore", "client"), ("bigtable", "grpc"),
          pytest.param("firestore", "grpc", marks=pytest.mark.extended)]


def _passes(proxies: Proxies, store: str, driver: str) -> dict[str, Any]:
    """The workload directly, through an admitting proxy, through a throttling one."""
    proxy = proxies(store)
    found: dict[str, Any] = {}
    for way, model in (("direct", None), ("admit", ByKey(admit=True)), ("throttle", ByKey(admit=False))):
        target = proxies.target(store, through=model is not None)
        spec_for(store).driver(driver).prepare(target)
        proxy.use(model)
        backend = spec_for(store).driver(driver)(target)
        try:
            result = _run(backend)
        finally:
            backend.close()
        stored = _stored(store, replace(target, endpoint=proxies.emulators[store]))
        found[way] = {**result, "stored": stored, "model": model, "stats": proxy.stats() if model is not None else None}
        proxy.use(None)
    return found


@pytest.fixture(scope="module")
def passes(proxies: Proxies) -> Callable[[str, str], dict[str, Any]]:
    """``passes(store, driver)``: ``_passes``, once per module for each."""
    done: dict[tuple[str, str], dict[str, Any]] = {}

    def get(store: str, driver: str) -> dict[str, Any]:
        if (store, driver) not in done:
            done[(store, driver)] = _passes(proxies, store, driver)
        return done[(store, driver)]
    return get


@pytest.mark.parametrize(("store", "driver"), COMBOS)
def test_through_an_admitting_proxy_every_answer_and_all_that_is_stored_is_as_directly(
        passes: Callable[[str, str], dict[str, Any]], store: str, driver: str) -> None:
    direct, admit = passes(store, driver)["direct"], passes(store, driver)["admit"]
    assert all(outcome == ("ok", outcome[1]) for outcome in direct["writes"].values()), direct["writes"]
    assert admit["writes"] == direct["writes"] and admit["reads"] == direct["reads"]
    assert admit["stored"] == direct["stored"]
    assert len(direct["stored"]) == N_DOCS + N_COUNTERS + N_LARGE + 8 * N_BATCHES
    assert admit["model"].most_held_at_once() >= 50  # the proxy held 50 or more requests at once
    totals = admit["stats"]["totals"]
    assert totals["throttled"] == 0 and totals["undecodable"] == 0
    assert totals["modelled"] + totals["not_modelled"] == totals["requests"]
    assert totals["modelled"] >= N_DOCS + N_COUNTERS + 2  # the small writes, the batch read and the read


@pytest.mark.parametrize(("store", "driver"), COMBOS)
def test_through_a_throttling_proxy_each_throttled_write_gets_the_stores_status_and_never_lands(
        passes: Callable[[str, str], dict[str, Any]], store: str, driver: str) -> None:
    direct, throttle = passes(store, driver)["direct"], passes(store, driver)["throttle"]
    statuses = {t.code for t in spec_for(store).proxy.throttle.values()}  # type: ignore[union-attr]
    lost: set[str] = set()
    small, large = _writes()
    for op, key, args in small + large:
        kind, value = throttle["writes"][key]
        if kind == "error":
            assert throttled(key) and value in statuses, (key, value)
            lost |= {k for k, _ in args[0]} if op == "batch_write" else {key}
        else:  # admitted; or too large to hold within the client's credit, forwarded unmodelled
            assert (kind, value) == direct["writes"][key] and (not throttled(key) or (op, key, args) in large), key
    assert lost
    expected = {k: v for k, v in direct["stored"].items() if k not in lost}
    assert throttle["stored"] == expected  # nothing dropped, nothing duplicated (each counter once)
    assert throttle["stats"]["totals"]["throttled"] == len(throttle["model"].throttled)


def test_firestore_listen_streams_through_the_proxy(proxies: Proxies) -> None:
    """``Listen`` (a bidirectional stream) is relayed as it is: a listener sees a write made directly."""
    proxy = proxies("firestore")
    target = proxies.target("firestore", through=True)
    proxy.use(ByKey(admit=True, gate_s=0.0))
    through = spec_for("firestore").driver("client")(target)
    direct = spec_for("firestore").driver("client")(replace(target, endpoint=proxies.emulators["firestore"]))
    seen: list[Any] = []
    watch = through._client.collection(target.namespace).on_snapshot(  # type: ignore[attr-defined]
        lambda docs, changes, at: seen.extend(d.id for d in docs))
    try:
        direct.insert("listened", {"n": 1})
        wait_for(lambda: "listened" in seen, "the listener to see the write", timeout=30)
        methods = proxy.stats()["methods"]  # before the model is swapped (that zeroes the counts)
    finally:
        watch.unsubscribe()
        through.close()
        direct.close()
        proxy.use(None)
    assert methods["/google.firestore.v1.Firestore/Listen"]["not_modelled"] >= 1
