"""One load generator in its own process, measuring itself: ``bare``, ``locust``, ``keyramp`` or ``aio``.

``python bench/_contestant.py MODE PROFILE --endpoint HOST:PORT --users N --duration S``
prints one JSON line: operations, measured seconds, process CPU seconds (all threads,
gRPC's C core included) over the measured window, ops/s and CPU µs per operation; with
``--emulator-pid`` also the emulator's CPU and the whole machine's busy cores over the
same window.

All perform the *same* operation code (``keyramp.workload._workload.UserOps`` on the
profile's backend binding, same keys and records), so the differences are the harness:
- ``bare``: N OS threads in a ``while`` loop, no gevent, no Locust, no recording.
- ``locust``: a plain Locust ``User`` (gRPC gevent support on, one client per user,
  ``events.request`` fired by hand), Locust's stats only.
- ``keyramp``: ``keyramp.run_profile`` (closed-model ``users`` schedule), everything recorded;
  the window is the measured phase from the end of its first second to its last whole
  second, marked by a ``keyramp.RunObserver`` (public hooks only: nothing is patched).
  ``--driver``/``--executor`` pick the driver (the profile's ``driver``) and, for
  ``grpc``, how calls wait (``aio`` or ``gevent``).
- ``aio``: the practical limit of raw gRPC in Python: N asyncio tasks on one
  ``grpc.aio`` loop, no gevent, no Locust; each request is built by the ``grpc`` driver's
  own code (its channel swapped for one that hands the request back), then awaited.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class Window:
    """Wall time, this process's CPU, the emulator's CPU and the machine's busy CPU, between two marks."""

    def __init__(self, emulator_pid: int | None) -> None:
        import psutil

        self._emu = None
        if emulator_pid:
            root = psutil.Process(emulator_pid)
            self._emu = [root, *root.children(recursive=True)]
        self.start = self._mark()

    def _mark(self) -> tuple[float, float, float, float, float]:
        import psutil

        emu = sum(sum(p.cpu_times()[:2]) for p in self._emu) if self._emu else 0.0
        machine = psutil.cpu_times()
        idle = machine.idle + getattr(machine, "iowait", 0.0)
        return time.perf_counter(), time.process_time(), emu, sum(machine) - idle, idle

    def stop(self, mark: tuple[float, float, float, float, float] | None = None) -> dict[str, Any]:
        t1, c1, e1, b1, _ = mark or self._mark()
        t0, c0, e0, b0, _ = self.start
        extra = {"emulator_cpu_s": round(e1 - e0, 4)} if self._emu else {}
        return {"seconds": t1 - t0, "cpu": c1 - c0, "machine_busy_cores": round((b1 - b0) / (t1 - t0), 3), **extra}


def _workload(profile_path: str, endpoint: str, driver: str = "client") -> tuple[Any, Any, Any, str]:
    from keyramp.backends import spec_for
    from keyramp.profile._files import load_profile
    from keyramp.workload._workload import CellWorkload

    profile = load_profile(profile_path)
    cell = profile.cells[0]
    wl = CellWorkload(backend=cell.backend, strategy=cell.strategy, settings=profile)
    target = wl.target(project=profile.project, endpoint=endpoint, namespace=f"kb_{uuid.uuid4().hex[:10]}")
    cls = spec_for(cell.backend).driver(driver)
    cls.prepare(target)
    if wl.record_count:
        backend = cls(target)
        try:
            for batch in wl.preload_batches():
                wl.preload(backend, batch)
        finally:
            backend.close()
    return wl, cls, target, wl.ops[0]


def _result(ops: int, window: dict[str, Any], **extra: Any) -> dict[str, Any]:
    seconds, cpu = window.pop("seconds"), window.pop("cpu")
    emulator = window.get("emulator_cpu_s")
    return {"ops": ops, "seconds": round(seconds, 4), "cpu_s": round(cpu, 4),
            "ops_per_s": round(ops / seconds, 1) if seconds else 0.0,
            "cpu_us_per_op": round(cpu / ops * 1e6, 1) if ops else None,
            **({"emulator_us_per_op": round(emulator / ops * 1e6, 1)} if ops and emulator is not None else {}),
            **window, **extra}


def run_bare(args: argparse.Namespace) -> dict[str, Any]:
    import threading

    from keyramp.workload._workload import UserOps

    wl, backend_class, target, _ = _workload(args.profile, args.endpoint, driver=args.driver)
    stop = threading.Event()
    counts = [0] * args.users
    errors = [0] * args.users
    ready = threading.Barrier(args.users + 1)

    def loop(i: int) -> None:
        backend = backend_class(target)
        ops = UserOps(wl, backend, user_index=i)
        try:
            backend.read("keyramp-warmup")  # open the channel outside the window, as keyramp does
        except Exception:  # noqa: BLE001 - a failed op is counted, as keyramp counts it
            pass
        ready.wait()
        n = e = 0
        while not stop.is_set():
            try:
                ops.run(wl.choose_op(ops.rng))
            except Exception:  # noqa: BLE001 - a failed op is counted, as keyramp counts it
                e += 1
            n += 1
        counts[i], errors[i] = n, e
        backend.close()

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(args.users)]
    for t in threads:
        t.start()
    ready.wait()
    window = Window(args.emulator_pid)
    time.sleep(args.duration)
    stop.set()
    measured = window.stop()
    for t in threads:
        t.join(30)
    # Operations finishing just after ``stop`` are counted; at >1,000 ops/s that is < 0.5 %.
    return _result(sum(counts), measured, errors=sum(errors))


def run_locust(args: argparse.Namespace) -> dict[str, Any]:
    import gevent
    import locust  # noqa: F401  (monkey-patches first)
    from locust import User, constant, task
    from locust.env import Environment

    from keyramp.run._gevent import ensure_gevent_grpc
    from keyramp.workload._workload import UserOps

    ensure_gevent_grpc()
    wl, backend_class, target, _ = _workload(args.profile, args.endpoint, driver=args.driver)
    state = {"ready": 0, "seq": 0}

    class PlainUser(User):
        wait_time = constant(0)

        def on_start(self) -> None:
            self.backend = backend_class(target)
            state["seq"] += 1
            self.ops = UserOps(wl, self.backend, user_index=state["seq"])
            try:
                self.backend.read("keyramp-warmup")
            except Exception:  # noqa: BLE001 - a failed op is counted, as keyramp counts it
                pass
            state["ready"] += 1

        def on_stop(self) -> None:
            self.backend.close()

        @task
        def operate(self) -> None:
            op = wl.choose_op(self.ops.rng)
            started = time.perf_counter()
            error = None
            try:
                self.ops.run(op)
            except Exception as exc:  # noqa: BLE001 - a failed op is counted, as keyramp counts it
                error = exc
            self.environment.events.request.fire(
                request_type=backend_class.name, name=op, response_time=(time.perf_counter() - started) * 1000.0,
                response_length=0, exception=error, context={})

    env = Environment(user_classes=[PlainUser])
    runner = env.create_local_runner()
    runner.start(args.users, spawn_rate=args.users * 10)
    while state["ready"] < args.users:
        gevent.sleep(0.02)
    total = env.stats.total
    n0, e0, window = total.num_requests, total.num_failures, Window(args.emulator_pid)
    gevent.sleep(args.duration)
    n1, e1, measured = total.num_requests, total.num_failures, window.stop()
    runner.quit()
    return _result(n1 - n0, measured, errors=e1 - e0)


def run_keyramp(args: argparse.Namespace) -> dict[str, Any]:
    import locust  # noqa: F401  (monkey-patches first, as the CLI does)

    import keyramp

    if args.driver == "grpc":
        from keyramp.backends._rpc import GrpcBackend

        GrpcBackend.executor = args.executor  # how the grpc driver's calls wait (the driver's documented knob)

    class MeasuredWindow(keyramp.RunObserver):
        """The window, from the run's public observer events: it opens when the phase's first second
        closes and ends at its last whole second, so start-up, preload, the heap freeze and ramp-in of
        the first second, the drain and the summary writing are outside it."""

        def __init__(self) -> None:
            self.window: Window | None = None
            self.ticks: list[tuple[tuple[float, float, float, float, float], int, int]] = []

        def second(self, cell: Any, rows: Any, elapsed_s: float, *, users: int) -> None:
            if self.window is None:
                self.window = Window(args.emulator_pid)
                return
            total = rows[-1]
            self.ticks.append((self.window._mark(), total.count, total.errors))

    observer = MeasuredWindow()
    overrides = {"duration": args.duration} if args.duration else None
    outcome = keyramp.run_profile(keyramp.load_profile(args.profile, overrides=overrides),
                                  keyramp.RunOptions(out=Path(args.out) / f"kr-{os.getpid()}", quiet=True,
                                                     observers=[observer]))
    ticks = observer.ticks
    if outcome.exit_code or observer.window is None or not ticks:
        raise SystemExit(f"keyramp run ended {outcome.status} ({outcome.reason}) after {len(ticks)} measured s")
    # The run's own latency figures (intended start and service time), for open-model comparisons.
    total = next(iter(outcome.summary.cells.values())).total
    assert total is not None and total.latency_ms is not None and total.service_ms is not None
    latency = {f"{kind}_{p}": getattr(getattr(total, kind), p)
               for kind in ("latency_ms", "service_ms") for p in ("p50", "p99")}
    return _result(sum(t[1] for t in ticks), observer.window.stop(ticks[-1][0]), errors=sum(t[2] for t in ticks),
                   late=total.late, **latency)


def run_aio(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio

    import grpc.aio

    from keyramp.backends._rpc import CHANNEL_OPTIONS
    from keyramp.workload._workload import UserOps

    wl, cls, target, _ = _workload(args.profile, args.endpoint, driver="grpc")

    class Built(Exception):
        """Carries the request the driver built out of its call."""

    class Capture:
        """A channel that hands back the first request of an operation instead of sending it."""

        def unary(self, method: Any, request: Any, metadata: Any) -> Any:
            raise Built(method, request, metadata)

        stream = unary

    builders = []
    for i in range(args.users):
        backend = type("Building", (cls,), {"executor": "gevent"})(target)  # a lazy channel, never used
        backend.rpc.close()
        backend.rpc = Capture()  # type: ignore[assignment]
        builders.append(UserOps(wl, backend, user_index=i))

    def build(ops: Any) -> tuple[Any, Any, Any]:
        try:
            ops.run(wl.choose_op(ops.rng))
        except Built as built:
            return built.args  # type: ignore[return-value]
        raise RuntimeError("the operation sent no request")

    async def main() -> tuple[int, int, dict[str, Any]]:
        channels = [grpc.aio.insecure_channel(target.endpoint, CHANNEL_OPTIONS) for _ in range(args.users)]
        stubs = [{m.path: (m.stream, (ch.unary_stream if m.stream else ch.unary_unary)(
            m.path, request_serializer=m.request.SerializeToString, response_deserializer=m.response.FromString))
            for m in cls.methods} for ch in channels]
        counts = [0] * args.users
        errors = [0] * args.users
        state = {"stop": False}

        prepared: dict[int, Any] = {}  # the driver's constant metadata, as grpc.aio.Metadata (as kr-grpc sends it)

        async def worker(i: int) -> None:
            ops, table, timeout = builders[i], stubs[i], target.timeout_s
            while not state["stop"]:
                method, request, metadata = build(ops)
                metadata = prepared.get(id(metadata)) or prepared.setdefault(id(metadata), grpc.aio.Metadata(*metadata))
                stream, stub = table[method.path]
                try:
                    if stream:
                        async for _ in stub(request, timeout=timeout, metadata=metadata):
                            pass
                    else:
                        await stub(request, timeout=timeout, metadata=metadata)
                except grpc.aio.AioRpcError:
                    errors[i] += 1
                counts[i] += 1

        tasks = [asyncio.create_task(worker(i)) for i in range(args.users)]
        await asyncio.sleep(1.0)  # connect and warm up outside the window
        n0, e0, window = sum(counts), sum(errors), Window(args.emulator_pid)
        await asyncio.sleep(args.duration)
        n1, e1, measured = sum(counts), sum(errors), window.stop()
        state["stop"] = True
        await asyncio.gather(*tasks)
        for ch in channels:
            await ch.close()
        return n1 - n0, e1 - e0, measured

    ops, errs, measured = asyncio.run(main())
    return _result(ops, measured, errors=errs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=("bare", "locust", "keyramp", "aio"))
    parser.add_argument("profile")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--out", default=str(ROOT / "results"))
    parser.add_argument("--driver", choices=("client", "grpc"), default="client",
                        help="keyramp: must match the profile's driver (recorded with the result)")
    parser.add_argument("--executor", choices=("aio", "gevent"), default="aio", help="keyramp with driver grpc")
    parser.add_argument("--emulator-pid", type=int, default=None, help="also measure this process tree's CPU")
    args = parser.parse_args()
    # KEYRAMP_BENCH_TREE: another checkout's keyramp (bench_drivers.py --base-tree, A/B against a commit)
    sys.path.insert(0, os.environ.get("KEYRAMP_BENCH_TREE") or str(ROOT))
    runner = {"bare": run_bare, "locust": run_locust, "keyramp": run_keyramp, "aio": run_aio}[args.mode]
    result = runner(args)
    print("BENCH " + json.dumps({"mode": args.mode, "users": args.users, "driver": args.driver,
                                 "executor": args.executor, **result}), flush=True)


if __name__ == "__main__":
    main()
