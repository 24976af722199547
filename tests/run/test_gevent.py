"""gRPC under gevent: with ``ensure_gevent_grpc()`` 20 greenlets beat 1 (ratio, same process).

Without it the probe does not finish at all (the hub blocks inside gRPC; checked by hand
with ``--no-init``), so these tests guard the integration.

The probe runs in a subprocess because importing Locust monkey-patches the whole
interpreter, which must not leak into the pytest process. Run this file directly to probe:
``python tests/run/test_gevent.py BACKEND ENDPOINT SECONDS [--no-init]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from keyramp.targets._emulators import RunningEmulator

ROOT = Path(__file__).resolve().parents[2]
PROBE_SECONDS = 2.5
#: Throughput gain asserted per backend. Bigtable's Go emulator answers in ~0.2 ms, so on 2 cores
#: one user already keeps the Python client near its CPU ceiling (0.4-0.8 ms CPU per op): x1.1-2.2
#: measured, and under 1 on a busy machine — only its overlap (``max_inflight``) is asserted.
MIN_RATIO = {"datastore": 1.3, "bigtable": None}


def _probe(backend: str, endpoint: str, seconds: float, init: bool) -> dict[str, float]:
    import gevent
    import locust  # noqa: F401  - monkey-patches the standard library, as in a real run

    from keyramp.backends import BACKENDS, Target
    from keyramp.run._gevent import ensure_gevent_grpc, gevent_grpc_active

    if init:
        ensure_gevent_grpc()
        ensure_gevent_grpc()  # idempotent
        assert gevent_grpc_active()
    cls = BACKENDS[backend]
    result: dict[str, float] = {}
    target = Target(backend=backend, project="keyramp-test", endpoint=endpoint,
                    namespace="kr_gevent", timeout_s=10.0)
    cls.prepare(target)
    # Two alternating rounds, best of each: other processes on a small machine make single
    # rounds noisy, and alternating keeps JIT warm-up of the emulator from favouring one side.
    for users in (1, 20, 1, 20):
        backends = [cls(target) for _ in range(users)]
        gevent.joinall([gevent.spawn(b.read, "warm-up") for b in backends])  # connect first
        counts = [0] * users
        errors: list[str] = []
        inflight = [0, 0]  # now, max: >1 only if greenlets overlap inside gRPC calls

        def user(i: int, deadline: float, backends=backends, counts=counts, errors=errors, inflight=inflight) -> None:
            b = backends[i]
            n = 0
            while gevent.get_hub().loop.now() < deadline:
                key = f"u{i:02d}-{n % 50:02d}"
                inflight[0] += 1
                inflight[1] = max(inflight)
                try:
                    if n % 2 == 0:
                        b.update(key, {"payload": b"x" * 64, "n": n})
                    else:
                        b.read(key)
                except Exception as exc:  # noqa: BLE001 - reported, then the test fails
                    errors.append(repr(exc))
                    return
                finally:
                    inflight[0] -= 1
                n += 1
                counts[i] = n

        gevent.get_hub().loop.update_now()
        start = gevent.get_hub().loop.now()
        gevent.joinall([gevent.spawn(user, i, start + seconds) for i in range(users)])
        gevent.get_hub().loop.update_now()
        elapsed = gevent.get_hub().loop.now() - start
        for b in backends:
            b.close()
        if errors:
            raise SystemExit(f"errors with {users} users: {errors[:3]}")
        name = f"ops_per_s_{users}"
        result[name] = max(result.get(name, 0.0), sum(counts) / elapsed)
        result[f"max_inflight_{users}"] = max(result.get(f"max_inflight_{users}", 0), inflight[1])
    return result


def _run_probe(backend: str, endpoint: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, backend, endpoint, str(PROBE_SECONDS)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.emulator
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["datastore", "bigtable"])
def test_twenty_greenlets_beat_one(backend: str, request: pytest.FixtureRequest) -> None:
    emulator: RunningEmulator = request.getfixturevalue(f"{backend}_emulator")
    ratios = []
    for _ in range(2):  # a ratio on a shared 2-core box: one stall must not decide it
        numbers = _run_probe(backend, emulator.endpoint)
        one, twenty = numbers["ops_per_s_1"], numbers["ops_per_s_20"]
        print(f"\n{backend}: 1 user {one:.0f} ops/s, 20 users {twenty:.0f} ops/s, x{twenty / one:.2f}, "
              f"max in flight {numbers['max_inflight_20']:.0f}")
        # Deterministic part: calls overlap (without init_gevent a call blocks the hub: max 1).
        assert numbers["max_inflight_20"] >= 10
        ratios.append(twenty / one)
        minimum = MIN_RATIO[backend]
        if minimum is None or ratios[-1] > minimum:
            break
    # Throughput part: Datastore (Java emulator, ms per call) gains x1.5-8 here.
    if minimum is not None:
        assert max(ratios) > minimum, ratios


def test_ensure_gevent_grpc_requires_monkey_patching() -> None:
    code = "from keyramp.run._gevent import ensure_gevent_grpc; ensure_gevent_grpc()"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "patch_all() must run first" in out.stderr


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    name, ep, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    print(json.dumps(_probe(name, ep, secs, init="--no-init" not in sys.argv)))
