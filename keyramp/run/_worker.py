"""A Locust worker of a distributed run (``keyramp run --worker`` or ``--workers N``).

A worker needs no profile: the master sends each cell as a frozen ``WorkerPlan``. It
spawns the users Locust dispatches to it, lets them warm up (reporting warm-up latencies
so the master can tell when the store has settled), paces ``1/N`` of the schedule from
the master's start instant and forwards every closed 1-second interval. It decides
nothing about phases: the master's ``CellPhases`` does (see ``_phases``, ``_master``).
"""

from __future__ import annotations

import locust  # noqa: F401  (monkey-patches the standard library before anything imports ssl)

# isort: split
import contextlib
import gc
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import gevent
from gevent.event import Event
from hdrh.histogram import HdrHistogram
from locust import User, constant, task
from locust.env import Environment
from locust.event import Events

from keyramp._errors import RunFailed
from keyramp.backends import spec_for
from keyramp.profile import Settings
from keyramp.profile._schedules import make_schedule
from keyramp.run._cpu import CpuMeter
from keyramp.run._exceptions import examples_to_json
from keyramp.run._gevent import ensure_gevent_grpc
from keyramp.run._pacer import Pacer
from keyramp.run._phases import drain, final_tick, freeze_heap, tick_phase
from keyramp.run._plan import (
    MSG_ABORT,
    MSG_CELL,
    MSG_HELLO,
    MSG_INTERVAL,
    MSG_START,
    MSG_STATUS,
    MSG_WARMUP,
    USER_CLASS,
    WorkerPlan,
)
from keyramp.run._recorder import ALL_OPS, Recorder, TimeseriesRow
from keyramp.run._user import CellContext, user_class_for
from keyramp.run._workload import CellWorkload
from keyramp.targets import target_class

__all__ = ["one_line", "placeholder_user", "run_worker"]

#: How often a warming worker sends its warm-up latencies, and at most how many at a time.
_WARMUP_REPORT_S = 0.25
_WARMUP_SAMPLES = 200


def placeholder_user() -> type[User]:
    """The master never runs users, and a worker has no cell before the first message."""

    def idle(self: User) -> None:
        gevent.sleep(1)

    return type(USER_CLASS, (User,), {"abstract": False, "wait_time": constant(1), "tasks": [task(idle)]})


def one_line(text: str) -> str:
    return " ".join(str(text).split())


class _ForwardingSink:
    """An ``IntervalSink`` that sends each closed interval to the master instead of disk."""

    def __init__(self, send: Callable[[dict[str, Any]], None]) -> None:
        self._send = send
        self._hists: dict[str, tuple[bytes, bytes]] = {}
        self._rows: Sequence[TimeseriesRow] = ()
        self._keys: list[tuple[float, str, str]] = []
        self._span = (0.0, 0.0)
        self.final = False

    def interval(self, *, cell: str, op: str, start_s: float, length_s: float, latency: HdrHistogram,
                 service: HdrHistogram) -> None:
        if op == ALL_OPS:  # the master rebuilds the merged view from the per-op histograms
            self._span = (start_s, length_s)
        elif latency.get_total_count():
            self._hists[op] = (latency.encode(), service.encode())

    def timeseries(self, rows: Sequence[TimeseriesRow]) -> None:
        self._rows = rows

    def keys(self, cell: str, samples: Sequence[tuple[float, str, str]]) -> None:
        self._keys.extend(samples)

    def flush(self) -> None:
        ops: dict[str, Any] = {}
        dropped = second = 0
        for row in self._rows:
            if row.op == ALL_OPS:
                dropped, second = row.dropped, row.second
                continue
            if not row.count:
                continue
            latency, service = self._hists[row.op]
            ops[row.op] = {"count": row.count, "errors": row.errors, "late": row.late,
                           "classes": dict(row.error_classes), "latency": latency, "service": service,
                           "exceptions": examples_to_json(row.exceptions)}
        self._send({"second": second, "start_s": self._span[0], "length_s": self._span[1], "dropped": dropped,
                    "ops": ops, "keys": self._keys, "final": self.final})
        self._hists, self._rows, self._keys = {}, (), []


class _WorkerCell:
    """One cell on a worker: its context, user class, pacer share and forwarding recorder."""

    def __init__(self, env: Environment, runner: Any, plan: WorkerPlan) -> None:
        self.env, self.runner, self.plan = env, runner, plan
        target_class(plan.target_kind).check_host(os.environ)  # the master's checks ran on its own host
        settings = Settings.from_data(plan.profile)
        self.schedule = make_schedule(settings.schedule.table, horizon=plan.duration_s * plan.time_scale)
        self.drop_after_s = settings.schedule.drop_after_s
        workload = CellWorkload(backend=plan.backend, strategy=plan.strategy, settings=settings,
                                worker_index=plan.worker_index, workers=plan.workers)
        workload.allocated = list(plan.allocated)
        self.sink = _ForwardingSink(self._send_interval)
        self.recorder = Recorder(cell=plan.cell_id, ops=workload.ops, sink=self.sink,
                                 key_samples_per_s=plan.key_samples_per_s, capture_exceptions=bool(workload.user_spec))
        backend_class = spec_for(plan.backend).driver(workload.users_driver(settings.driver))
        self.ctx = CellContext(workload=workload, backend_class=backend_class, target=plan.address,
                               recorder=self.recorder, open_model=self.schedule.open_model)
        self.ctx.warmup_interval = plan.warmup_interval
        self.aborted = Event()
        self._cpu: CpuMeter | None = None
        env.user_classes = [user_class_for(self.ctx, name=USER_CLASS)]
        self._greenlets: list[gevent.Greenlet[..., None]] = [gevent.spawn(self._report_status)]

    def _send_interval(self, payload: dict[str, Any]) -> None:
        # Each interval carries this process's CPU since the phase started: a worker lost later
        # still counts for what it used until its last interval.
        cpu = list(self._cpu.sample()) if self._cpu is not None else None
        self.runner.send_message(MSG_INTERVAL, {"token": self.plan.token, **payload, "cpu": cpu})

    def _report_status(self) -> None:
        """Until the phase starts: how many users have their client, and the warm-up latencies."""
        ctx, token = self.ctx, self.plan.token
        last: tuple[int, int] = (-1, -1)
        reported_ops = 0
        next_warmup = time.monotonic() + _WARMUP_REPORT_S
        while not ctx.phase_started.is_set() and not self.aborted.is_set():
            now = (ctx.users_ready, len(ctx.user_errors))
            if now != last:
                error = ctx.user_errors[0] if ctx.user_errors else None
                self.runner.send_message(MSG_STATUS, {
                    "token": token, "ready": now[0],
                    "error": None if error is None else one_line(f"{error.__class__.__name__}: {error}")})
                last = now
            if time.monotonic() >= next_warmup and (ctx.warmup_latencies or ctx.warmup.ops != reported_ops):
                taken, ctx.warmup_latencies = ctx.warmup_latencies, []
                step = max(1, len(taken) // _WARMUP_SAMPLES)  # an even thinning keeps the median
                # With the tally so far: the master stops a cell whose every warm-up operation
                # raised the workload's own exception.
                self.runner.send_message(MSG_WARMUP, {"token": token, "latencies": taken[::step],
                                                      **ctx.warmup.to_wire()})
                reported_ops = ctx.warmup.ops
                next_warmup = time.monotonic() + _WARMUP_REPORT_S
            gevent.sleep(0.05)

    def start(self, start_epoch: float) -> None:
        self._greenlets.append(gevent.spawn(self._phase, start_epoch))

    def abort(self) -> None:
        self.aborted.set()
        self.ctx.phase_ended.set()
        for g in self._greenlets:
            g.kill(block=False)

    def _phase(self, start_epoch: float) -> None:
        ctx, plan = self.ctx, self.plan
        freeze_heap()
        try:
            # perf_counter is per process: convert the master's epoch instant once.
            start = time.perf_counter() + (start_epoch - time.time())
            if start > time.perf_counter():
                gevent.sleep(start - time.perf_counter())
            self.recorder.begin(start)
            self._cpu = CpuMeter()
            ctx.warmup_interval = None
            # What this worker's warm-up inserted: the master adds them to the cell's key range.
            self.runner.send_message(MSG_STATUS, {"token": plan.token, "ready": ctx.users_ready,
                                                  "warmup_inserts": ctx.workload.inserted})
            if ctx.open_model:
                ctx.pacer = Pacer(rate=self.schedule.rate, start=start, duration_s=plan.duration_s,
                                  time_scale=plan.time_scale, share=1.0 / plan.workers,
                                  drop_after_s=self.drop_after_s)
            ctx.phase_started.set()
            for _ in tick_phase(ctx, self.recorder, start=start, duration_s=plan.duration_s, stop=self.aborted):
                pass
            if self.aborted.is_set():
                return
            ctx.phase_ended.set()
            drain(ctx)
            self.sink.final = True
            final_tick(ctx, self.recorder)
        finally:
            gc.unfreeze()  # the next cell freezes what is alive then


class _WorkerAgent:
    def __init__(self, env: Environment, runner: Any) -> None:
        self.env, self.runner = env, runner
        self.cell: _WorkerCell | None = None
        runner.register_message(MSG_CELL, self._on_cell)
        runner.register_message(MSG_START, self._on_start)
        runner.register_message(MSG_ABORT, self._on_abort)
        runner.send_message(MSG_HELLO, {"host": socket.gethostname(), "pid": os.getpid()})

    def _on_cell(self, environment: Environment, msg: Any, **_: Any) -> None:
        if self.cell is not None:
            self.cell.abort()
            self.cell = None
        try:
            plan = WorkerPlan.from_wire(msg.data)
            self.cell = _WorkerCell(self.env, self.runner, plan)
            print(f"keyramp worker: cell {plan.token} (worker {plan.worker_index} of {plan.workers})",
                  file=sys.stderr, flush=True)
        except Exception as exc:  # noqa: BLE001 - tell the master why instead of timing out there
            self.runner.send_message(MSG_STATUS, {"token": msg.data.get("token"), "ready": 0,
                                                  "error": one_line(f"{exc.__class__.__name__}: {exc}")})

    def _on_start(self, environment: Environment, msg: Any, **_: Any) -> None:
        if self.cell is not None and self.cell.plan.token == msg.data["token"]:
            self.cell.start(float(msg.data["start_epoch"]))

    def _on_abort(self, environment: Environment, msg: Any, **_: Any) -> None:
        if self.cell is not None and self.cell.plan.token == msg.data["token"]:
            self.cell.abort()


def run_worker(*, master_host: str, master_port: int, exit_with_parent: bool = False) -> int:
    """``keyramp run --worker``: serve cells for the master until it says quit."""
    ensure_gevent_grpc()  # before the first channel
    env = Environment(user_classes=[placeholder_user()], events=Events(), stop_timeout=0.0)
    try:
        runner = env.create_worker_runner(master_host, master_port)
    except ConnectionError:
        raise RunFailed(f"--master-host {master_host}:{master_port}: no keyramp master answered") from None
    _WorkerAgent(env, runner)
    print(f"keyramp worker: connected to the master at {master_host}:{master_port}", file=sys.stderr, flush=True)

    def leave(*_: Any) -> None:
        # Tell the master (it fails the run with a reason), then stop.
        with contextlib.suppress(Exception):
            runner.send_message("quit", None)
        runner.quit()

    handlers = [gevent.signal_handler(s, leave) for s in (signal.SIGINT, signal.SIGTERM)]
    if exit_with_parent:  # a local worker must not outlive a master that was killed hard
        parent = os.getppid()

        def watch() -> None:
            while os.getppid() == parent:
                gevent.sleep(1.0)
            runner.quit()

        runner.greenlet.spawn(watch)
    try:
        runner.greenlet.join()
    finally:
        for h in handlers:
            h.cancel()
    return 0
