"""The ``grpc.aio`` executor behind gevent, against the real Bigtable emulator.

The main case runs in a subprocess that imports Locust first (before anything imports
``ssl``; hence the lazy imports here): monkey-patched, gRPC's gevent support on, as
``keyramp run`` does. There ``grpc.aio``'s poller would otherwise become a greenlet and
block the hub (without ``_aio``'s native-thread shim the probe never finishes). Run this file directly to probe:
``python tests/backends/test_aio.py ENDPOINT``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from keyramp.targets._emulators import RunningEmulator

if TYPE_CHECKING:
    from keyramp.backends import Target

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[2]


def _probe(endpoint: str, *, users: int = 20, ops_per_user: int = 40) -> dict[str, Any]:
    import gevent
    import locust  # noqa: F401  - monkey-patches the standard library, as in a real run

    from keyramp.backends import Target
    from keyramp.backends._aio import shared_executor
    from keyramp.backends._errors import classify
    from keyramp.backends.bigtable._grpc import BigtableGrpcBackend
    from keyramp.run._gevent import ensure_gevent_grpc

    ensure_gevent_grpc()
    target = Target(backend="bigtable", project="keyramp-test", endpoint=endpoint,
                    namespace=f"kr_aio_{uuid.uuid4().hex[:8]}", timeout_s=10.0)
    BigtableGrpcBackend.prepare(target)
    backends = [BigtableGrpcBackend(target) for _ in range(users)]
    state = {"in_flight": 0, "max_in_flight": 0, "ticks_while_waiting": 0, "done": False}
    errors: list[str] = []

    def user(i: int) -> int:
        b = backends[i]
        for n in range(ops_per_user):
            state["in_flight"] += 1
            state["max_in_flight"] = max(state["max_in_flight"], state["in_flight"])
            try:
                b.update(f"u{i:02d}-{n:03d}", {"payload": b"x" * 64})
            except Exception as exc:  # noqa: BLE001
                errors.append(classify(exc))
            finally:
                state["in_flight"] -= 1
        return sum(b.read(f"u{i:02d}-{n:03d}") for n in range(ops_per_user))

    def ticker() -> None:  # another greenlet: runs only if the hub is free while calls wait
        while not state["done"]:
            if state["in_flight"]:
                state["ticks_while_waiting"] += 1
            gevent.sleep(0.001)

    tick = gevent.spawn(ticker)
    found = [g.get() for g in gevent.joinall([gevent.spawn(user, i) for i in range(users)], raise_error=True)]
    state["done"] = True
    tick.join()
    # A missing table: the error reaches the caller, classified like the client driver's.
    missing = BigtableGrpcBackend(Target(backend="bigtable", project="keyramp-test", endpoint=endpoint,
                                         namespace="kr_aio_missing", timeout_s=10.0))
    try:
        missing.read("r")
    except Exception as exc:  # noqa: BLE001
        missing_error = classify(exc)
    for b in (*backends, missing):
        b.close()
    shared_executor().close()
    return {"found": sum(found), "errors": errors, "max_in_flight": state["max_in_flight"],
            "ticks_while_waiting": state["ticks_while_waiting"], "missing": missing_error}


def test_greenlets_share_the_loop_thread_without_blocking_the_hub(bigtable_emulator: RunningEmulator) -> None:
    proc = subprocess.run([sys.executable, __file__, bigtable_emulator.endpoint], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["errors"] == []
    assert result["found"] == 20 * 40  # every write landed and reads back
    assert result["max_in_flight"] > 1  # calls overlapped: greenlets waited, not the hub
    assert result["ticks_while_waiting"] > 0  # another greenlet ran while calls were pending
    assert result["missing"] == "NOT_FOUND"


def test_calls_from_plain_threads_and_the_main_greenlet(target_factory: Callable[..., Target]) -> None:
    """Unpatched process: the first caller's thread waits on the hub, other threads block on a future."""
    from keyramp.backends.bigtable._grpc import BigtableGrpcBackend

    target = target_factory("bigtable")
    BigtableGrpcBackend.prepare(target)
    main = BigtableGrpcBackend(target)
    main.update("main", {"n": 1})
    results: dict[int, bool] = {}

    def worker(i: int) -> None:
        b = BigtableGrpcBackend(target)
        try:
            b.update(f"t{i}", {"n": i})
            results[i] = b.read(f"t{i}") and b.read("main")
        finally:
            b.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == {0: True, 1: True, 2: True, 3: True}
    assert main.batch_read(["main", "t0", "t1", "t2", "t3", "none"]) == 5
    main.close()


if __name__ == "__main__":
    print(json.dumps(_probe(sys.argv[1])))


@pytest.mark.parametrize("fast", [True, False])
def test_unary_results_and_errors_with_and_without_grpc_internals(target_factory: Callable[..., Target],
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  fast: bool) -> None:
    """The unary fast path reads private ``grpc.aio`` parts; without them each call is awaited in a
    coroutine. Both return the same responses and raise the same classified errors."""
    from keyramp.backends import _aio
    from keyramp.backends._errors import classify
    from keyramp.backends.bigtable._grpc import BigtableGrpcBackend

    assert _aio._FAST_UNARY  # this grpcio has them (a silent fallback would cost CPU, not correctness)
    monkeypatch.setattr(_aio, "_FAST_UNARY", fast)
    target = target_factory("bigtable")
    missing = BigtableGrpcBackend(target)  # the table is created below: first, NOT_FOUND
    try:
        with pytest.raises(Exception) as err:
            missing.update("r", {"n": 1})
        assert classify(err.value) == "NOT_FOUND"
        BigtableGrpcBackend.prepare(target)
        missing.update("r", {"n": 1})
        missing.increment("r", "n", 2)
        assert missing.read("r")
    finally:
        missing.close()
