"""A Locust worker of a distributed run (``keyramp run --worker`` or ``--workers N``).

A worker needs no profile: the master sends each cell as a frozen ``CellShare``. It is a
local load (``_driver.ProcessLoad``, the same object a single-process run drives) whose
recorder's sink forwards: its users are the ones Locust dispatches to it, they warm up
(the worker reports their warm-up latencies so the master can tell when the store has
settled), then it paces ``1/N`` of the schedule from the master's start instant and
forwards every closed 1-second interval. It decides nothing about phases: the master's
``CellPhases`` does (see ``_phases``, ``_master``).
"""

from __future__ import annotations

import locust  # noqa: F401  (monkey-patches the standard library before anything imports ssl)

# isort: split
import contextlib
import os
import signal
import socket
import sys
import time
from typing import Any

import gevent
from gevent.event import Event
from locust import User, constant, task
from locust.env import Environment
from locust.event import Events

from keyramp.backends import spec_for
from keyramp.core import RunFailed
from keyramp.run._driver import ProcessLoad
from keyramp.run._gevent import ensure_gevent_grpc
from keyramp.run._interval import ClosedInterval, IntervalCollector
from keyramp.run._messages import (
    Abort,
    Hello,
    IntervalReport,
    Start,
    Status,
    WarmupReport,
    one_line,
    receive,
    send,
)
from keyramp.run._recorder import Recorder
from keyramp.run._share import USER_CLASS, CellShare
from keyramp.targets import target_class
from keyramp.workload import CellWorkload

__all__ = ["placeholder_user", "run_worker", "worker_command"]

#: How often a warming worker sends its warm-up latencies, and at most how many at a time.
_WARMUP_REPORT_S = 0.25
_WARMUP_SAMPLES = 200


def placeholder_user() -> type[User]:
    """The master never runs users, and a worker has no cell before the first message."""

    def idle(self: User) -> None:
        gevent.sleep(1)

    return type(USER_CLASS, (User,), {"abstract": False, "wait_time": constant(1), "tasks": [task(idle)]})


def _error_line(exc: BaseException) -> str:
    return one_line(f"{exc.__class__.__name__}: {exc}")


class _WorkerCell:
    """One cell on a worker: its ``ProcessLoad`` at a 1/N share, forwarding each closed interval."""

    def __init__(self, env: Environment, runner: Any, plan: CellShare) -> None:
        self.runner, self.plan = runner, plan
        target_class(plan.target_kind).check_host(os.environ)  # the master's checks ran on its own host
        settings = plan.settings
        workload = CellWorkload(backend=plan.backend, strategy=plan.strategy, settings=settings,
                                worker_index=plan.worker_index, workers=plan.workers)
        workload.allocated = list(plan.allocated)
        self.sink = IntervalCollector(self._forward)
        recorder = Recorder(cell=plan.cell_id, ops=workload.ops, sink=self.sink,
                            key_samples_per_s=plan.key_samples_per_s, capture_exceptions=bool(workload.user_spec),
                            kinds=workload.sample_kinds(), decode=workload.capture(plan.address.namespace))
        # A store's client library loads on first use: seconds of imports on a busy box. In a
        # native thread, so this process's heartbeats go on (Locust drops a worker silent for 3 s).
        # A Python workload's users run the official client whatever the profile's driver.
        driver = gevent.get_hub().threadpool.apply(spec_for(plan.backend).driver,
                                                   (workload.users_driver(settings.driver),))
        self.load = ProcessLoad(workload=workload, backend_class=driver, target=plan.address, recorder=recorder,
                                pacing=plan.pacing(), user_class_name=USER_CLASS)
        self.load.warm_up(plan.warmup_interval)
        self.aborted = Event()
        env.user_classes = [self.load.user_class]
        self._greenlets: list[gevent.Greenlet[..., None]] = [gevent.spawn(self._report_status)]

    def _send(self, message: Status | WarmupReport | IntervalReport) -> None:
        send(self.runner, message)

    def _forward(self, interval: ClosedInterval) -> None:
        self._send(IntervalReport(token=self.plan.token, interval=interval, cpu=self.load.cpu_sample()))

    def _report_status(self) -> None:
        """Until the phase starts: how many users have their client; the warm-up latencies and tally."""
        load, token = self.load, self.plan.token
        last: tuple[int, int] = (-1, -1)
        reported_ops = 0
        next_warmup = time.monotonic() + _WARMUP_REPORT_S
        while not load.ctx.phase_started.is_set() and not self.aborted.is_set():
            errors = load.user_errors()
            now = (load.ready(), len(errors))
            if now != last:
                self._send(Status(token=token, ready=now[0], error=_error_line(errors[0]) if errors else None))
                last = now
            if time.monotonic() >= next_warmup and (tally := load.warmup_tally()).ops != reported_ops:
                taken = load.take_warmup_latencies()
                step = max(1, len(taken) // _WARMUP_SAMPLES)  # an even thinning keeps the median
                # With the tally so far (every warm-up operation counts, a failed one too): the
                # master stops a cell whose every warm-up operation raised the workload's own exception.
                self._send(WarmupReport(token=token, latencies=taken[::step], tally=tally))
                reported_ops = tally.ops
                next_warmup = time.monotonic() + _WARMUP_REPORT_S
            gevent.sleep(0.05)

    def start(self, start_epoch: float) -> None:
        self._greenlets.append(gevent.spawn(self._phase, start_epoch))

    def abort(self) -> None:
        self.aborted.set()
        self.load.ctx.phase_ended.set()
        for g in self._greenlets:
            g.kill(block=False)

    def _phase(self, start_epoch: float) -> None:
        load, completed = self.load, False
        try:
            # perf_counter is per process: convert the master's epoch instant once.
            load.start(at=time.perf_counter() + (start_epoch - time.time()))
            # What this worker's warm-up inserted: the master adds them to the cell's key range.
            self._send(Status(token=self.plan.token, ready=load.ready(), warmup_inserts=load.warmup_inserts()))
            for _ in load.seconds(self.aborted):
                pass
            completed = not self.aborted.is_set()
        finally:
            # Aborted (or killed by ``abort``): no drain, no last interval; the master has what arrived.
            self.sink.final = completed
            load.finish(measured=completed, aborted=not completed)


class _WorkerAgent:
    def __init__(self, env: Environment, runner: Any) -> None:
        self.env, self.runner = env, runner
        self.cell: _WorkerCell | None = None
        # The plan is decoded in the handler: a plan this worker cannot set up is reported, not raised.
        runner.register_message(CellShare.kind, self._on_cell)
        receive(runner, Start, self._on_start)
        receive(runner, Abort, self._on_abort)
        send(runner, Hello(host=socket.gethostname(), pid=os.getpid()))

    def _on_cell(self, environment: Environment, msg: Any, **_: Any) -> None:
        if self.cell is not None:
            self.cell.abort()
            self.cell = None
        try:
            plan = CellShare.from_wire(msg.data)
            self.cell = _WorkerCell(self.env, self.runner, plan)
            print(f"keyramp worker: cell {plan.token} (worker {plan.worker_index} of {plan.workers})",
                  file=sys.stderr, flush=True)
        except Exception as exc:  # noqa: BLE001 - tell the master why instead of timing out there
            send(self.runner, Status(token=str(msg.data.get("token")), ready=0, error=_error_line(exc)))

    def _cell_for(self, token: str) -> _WorkerCell | None:
        return self.cell if self.cell is not None and self.cell.plan.token == token else None

    def _on_start(self, sender: str, message: Start) -> None:
        if (cell := self._cell_for(message.token)) is not None:
            cell.start(message.start_epoch)

    def _on_abort(self, sender: str, message: Abort) -> None:
        if (cell := self._cell_for(message.token)) is not None:
            cell.abort()


def worker_command(master_host: str, master_port: int, *, exit_with_parent: bool = False) -> list[str]:
    """The command line of a worker process for the master at ``master_host:master_port``: the run
    layer's own entry point (``python -m keyramp.run.worker``), never the CLI above it."""
    return [sys.executable, "-m", "keyramp.run.worker", "--master-host", master_host, "--master-port",
            str(master_port), *(["--exit-with-parent"] if exit_with_parent else [])]


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
