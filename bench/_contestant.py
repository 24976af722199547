"""One load generator in its own process, measuring itself: ``bare``, ``locust`` or ``keyramp``.

``python bench/_contestant.py MODE PROFILE --endpoint HOST:PORT --users N --duration S``
prints one JSON line: operations, measured seconds, process CPU seconds (all threads,
gRPC's C core included) over the measured window, ops/s and CPU µs per operation.

All three perform the *same* operation code (``keyramp.run._workload.UserOps`` on the
profile's backend binding, same keys and records), so the differences are the harness:
- ``bare``: N OS threads in a ``while`` loop, no gevent, no Locust, no recording.
- ``locust``: a plain Locust ``User`` (gRPC gevent support on, one client per user,
  ``events.request`` fired by hand), Locust's stats only.
- ``keyramp``: ``keyramp run`` (closed-model ``users`` schedule), everything recorded;
  the window is the measured phase (``Recorder.begin`` .. the last whole-second tick).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _workload(profile_path: str, endpoint: str) -> tuple[Any, Any, Any, str]:
    from keyramp.profile._profile import load_profile
    from keyramp.run._workload import CellWorkload
    from keyramp.backends import BACKENDS

    profile = load_profile(profile_path)
    cell = profile.cells[0]
    wl = CellWorkload(backend=cell.backend, strategy=cell.strategy, settings=profile)
    target = wl.target(project=profile.project, endpoint=endpoint, namespace=f"kb_{uuid.uuid4().hex[:10]}")
    backend_class = BACKENDS[cell.backend]
    backend_class.prepare(target)
    if wl.record_count:
        backend = backend_class(target)
        try:
            for batch in wl.preload_batches():
                wl.preload(backend, batch)
        finally:
            backend.close()
    return wl, backend_class, target, wl.ops[0]


def _result(ops: int, seconds: float, cpu: float, **extra: Any) -> dict[str, Any]:
    return {"ops": ops, "seconds": round(seconds, 4), "cpu_s": round(cpu, 4),
            "ops_per_s": round(ops / seconds, 1) if seconds else 0.0,
            "cpu_us_per_op": round(cpu / ops * 1e6, 1) if ops else None, **extra}


def run_bare(args: argparse.Namespace) -> dict[str, Any]:
    import threading

    from keyramp.run._workload import UserOps

    wl, backend_class, target, _ = _workload(args.profile, args.endpoint)
    stop = threading.Event()
    counts = [0] * args.users
    errors = [0] * args.users
    ready = threading.Barrier(args.users + 1)

    def loop(i: int) -> None:
        backend = backend_class(target)
        ops = UserOps(wl, backend, user_index=i)
        try:
            backend.read("keyramp-warmup")  # open the channel outside the window, as keyramp does
        except Exception:
            pass
        ready.wait()
        n = e = 0
        while not stop.is_set():
            try:
                ops.run(wl.choose_op(ops.rng))
            except Exception:
                e += 1
            n += 1
        counts[i], errors[i] = n, e
        backend.close()

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(args.users)]
    for t in threads:
        t.start()
    ready.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    time.sleep(args.duration)
    stop.set()
    t1, c1 = time.perf_counter(), time.process_time()
    for t in threads:
        t.join(30)
    # Operations finishing just after ``stop`` are counted; at >1,000 ops/s that is < 0.5 %.
    return _result(sum(counts), t1 - t0, c1 - c0, errors=sum(errors))


def run_locust(args: argparse.Namespace) -> dict[str, Any]:
    import gevent
    import locust  # noqa: F401  (monkey-patches first)
    from locust import User, constant, task
    from locust.env import Environment

    from keyramp.run._gevent import ensure_gevent_grpc
    from keyramp.run._workload import UserOps

    ensure_gevent_grpc()
    wl, backend_class, target, _ = _workload(args.profile, args.endpoint)
    state = {"ready": 0, "seq": 0}

    class PlainUser(User):
        wait_time = constant(0)

        def on_start(self) -> None:
            self.backend = backend_class(target)
            state["seq"] += 1
            self.ops = UserOps(wl, self.backend, user_index=state["seq"])
            try:
                self.backend.read("keyramp-warmup")
            except Exception:
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
            except Exception as exc:
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
    n0, e0, t0, c0 = total.num_requests, total.num_failures, time.perf_counter(), time.process_time()
    gevent.sleep(args.duration)
    n1, e1, t1, c1 = total.num_requests, total.num_failures, time.perf_counter(), time.process_time()
    runner.quit()
    return _result(n1 - n0, t1 - t0, c1 - c0, errors=e1 - e0)


def run_keyramp(args: argparse.Namespace) -> dict[str, Any]:
    import locust  # noqa: F401  (monkey-patches first, as the CLI does)

    from keyramp.run import _recorder
    from keyramp.cli._main import main

    window: dict[str, Any] = {"ticks": []}
    begin, tick = _recorder.Recorder.begin, _recorder.Recorder.tick

    def timed_begin(self: Any, start: float) -> None:
        window["t0"], window["c0"] = time.perf_counter(), time.process_time()
        begin(self, start)

    def timed_tick(self: Any, now: float, **kw: Any) -> Any:
        rows = tick(self, now, **kw)
        total = rows[-1]
        window["ticks"].append((time.perf_counter(), time.process_time(), total.count, total.errors))
        return rows

    # A bench-only wrapper: reads the clock at each 1 s tick of the measured phase, so the
    # window excludes start-up, preload, drain and the final CSV/summary writing.
    _recorder.Recorder.begin = timed_begin  # type: ignore[method-assign]
    _recorder.Recorder.tick = timed_tick  # type: ignore[method-assign]
    argv = ["run", args.profile, "--out", args.out, "--quiet"]
    if args.duration:
        argv += ["--duration", f"{args.duration}s"]
    code = main(argv)
    ticks = window["ticks"][:-1]  # the last one is the final (partial) tick after the drain
    if code or not ticks:
        raise SystemExit(f"keyramp run failed with exit code {code}")
    t1, c1 = ticks[-1][0], ticks[-1][1]
    return _result(sum(t[2] for t in ticks), t1 - window["t0"], c1 - window["c0"], errors=sum(t[3] for t in ticks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=("bare", "locust", "keyramp"))
    parser.add_argument("profile")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--out", default=str(ROOT / "results"))
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    runner = {"bare": run_bare, "locust": run_locust, "keyramp": run_keyramp}[args.mode]
    result = runner(args)
    print("BENCH " + json.dumps({"mode": args.mode, "users": args.users, **result}), flush=True)


if __name__ == "__main__":
    main()
