"""Locust master/workers: ``keyramp run --workers N``, ``--master`` and ``--worker``.

Coordination is Locust's own: a ``MasterRunner`` accepts ``WorkerRunner`` connections,
tracks them by heartbeat and dispatches users; keyramp only adds custom messages
(``runner.register_message`` / ``send_message``) on top:

* ``keyramp_hello``    worker → master: handlers registered, ready for cells (host, pid)
* ``keyramp_cell``     master → worker: the resolved profile, the cell, its namespace and
  endpoint, the worker's index and the worker count (a worker needs no profile file)
* ``keyramp_status``   worker → master: users ready / a client that could not be created
* ``keyramp_start``    master → worker: the epoch instant the measured phase starts
* ``keyramp_interval`` worker → master: one closed 1 s interval (encoded HdrHistograms,
  counts, errors by class, late, dropped, key samples); ``final`` marks the last one
* ``keyramp_abort``    master → worker: end the cell now (failure or Ctrl-C)

The master does everything that is not load (emulators, reset, preload, analysis,
thresholds, the run directory). Each worker paces ``1/N`` of the schedule from the same
start instant and records with its own ``Recorder``, whose sink forwards every interval
to the master; the master merges interval *k* of all workers into its own recorder
(``Recorder.absorb``) and ticks it, so the run directory is written exactly as a
single process writes it.
"""

from __future__ import annotations

import locust  # noqa: F401  (monkey-patches the standard library for gevent)

from keyramp.run._gevent import ensure_gevent_grpc

ensure_gevent_grpc()  # workers create gRPC channels; the master may preload

import contextlib  # noqa: E402
import errno  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

import gevent  # noqa: E402
from gevent.event import Event  # noqa: E402
from hdrh.histogram import HdrHistogram  # noqa: E402
from locust import User, constant, task  # noqa: E402
from locust.env import Environment  # noqa: E402
from locust.event import Events  # noqa: E402
from locust.runners import STATE_MISSING  # noqa: E402
from locust.stats import PERCENTILES_TO_REPORT, StatsCSVFileWriter  # noqa: E402

from keyramp.targets._emulators import _log_tail, free_port  # noqa: E402
from keyramp._errors import RunFailed, UsageError  # noqa: E402
from keyramp.run._pacer import Pacer  # noqa: E402
from keyramp.run._recorder import ALL_OPS, Recorder, TimeseriesRow  # noqa: E402
from keyramp.run._runner import (  # noqa: E402
    _DRAIN_S,
    _USERS_READY_S,
    Interrupted,
    SecondCheck,
    drain,
    dropped_since,
    freeze_heap,
    tick_phase,
    warmup_interval,
)
from keyramp.profile._schedules import make_schedule  # noqa: E402
from keyramp.run._user import CellContext, user_class_for  # noqa: E402
from keyramp.run._workload import CellWorkload  # noqa: E402
from keyramp.backends import BACKENDS  # noqa: E402

if TYPE_CHECKING:
    from keyramp.run._runner import _CellRun

__all__ = ["Master", "MasterOptions", "run_worker"]

#: Locust dispatches users by class name: master and workers must agree on it.
USER_CLASS = "KeyrampUser"
MSG_HELLO = "keyramp_hello"
MSG_CELL = "keyramp_cell"
MSG_STATUS = "keyramp_status"
MSG_START = "keyramp_start"
MSG_INTERVAL = "keyramp_interval"
MSG_ABORT = "keyramp_abort"
#: How far ahead of "now" the master puts the phase start, so every worker has the message.
_START_LEAD_S = 0.5
#: Local worker processes must connect within this (imports on a loaded 2-core box are slow).
_LOCAL_CONNECT_S = 90.0
#: After the phase (+ drain) the master waits this long for every worker's last interval.
_FINAL_GRACE_S = 10.0
#: Bounded stop of the workers' users between cells.
_STOP_S = 5.0


def _placeholder_user() -> type[User]:
    """The master never runs users, and a worker has no cell before the first message."""

    def idle(self: User) -> None:
        gevent.sleep(1)

    return type(USER_CLASS, (User,), {"abstract": False, "wait_time": constant(1), "tasks": [task(idle)]})


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# ---------------------------------------------------------------------------------------
# worker side
# ---------------------------------------------------------------------------------------
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
                           "classes": dict(row.error_classes), "latency": latency, "service": service}
        self._send({"second": second, "start_s": self._span[0], "length_s": self._span[1], "dropped": dropped,
                    "ops": ops, "keys": self._keys, "final": self.final})
        self._hists, self._rows, self._keys = {}, (), []


class _WorkerCell:
    """One cell on a worker: its context, user class, pacer share and forwarding recorder."""

    def __init__(self, env: Environment, runner: Any, data: dict[str, Any]) -> None:
        self.env, self.runner = env, runner
        self.token = data["token"]
        profile, spec = data["profile"], data["cell"]
        self.spec = spec
        self.workers = int(data["workers"])
        self.schedule = make_schedule(profile["schedule"], horizon=spec["duration_s"] * spec["time_scale"])
        self.profile = profile
        self.workload = CellWorkload(backend=spec["backend"], strategy=spec["strategy"], profile=profile,
                                     worker_index=int(data["worker_index"]), workers=self.workers)
        # Keys the store allocated during the master's preload (msgpack turned tuples into lists).
        self.workload.allocated = [tuple(k) if isinstance(k, list) else k for k in data.get("allocated") or ()]
        target = self.workload.target(project=profile["project"], endpoint=data["endpoint"],
                                      namespace=data["namespace"], timeout_s=float(data["timeout_s"]))
        if profile["target"] == "cloud":
            from keyramp.targets._cloud import cloud_target

            target = cloud_target(target, profile)
        self.sink = _ForwardingSink(self._send_interval)
        self.recorder = Recorder(cell=spec["id"], ops=self.workload.ops, sink=self.sink,
                                 key_samples_per_s=int(data["key_samples_per_s"]),
                                 on_request=env.events.request.fire, request_type=spec["backend"])
        self.ctx = CellContext(workload=self.workload, backend_class=BACKENDS[spec["backend"]], target=target,
                               recorder=self.recorder, open_model=self.schedule.open_model)
        self.ctx.warmup_interval = data.get("warmup_interval")
        self.aborted = Event()
        env.user_classes = [user_class_for(self.ctx, name=USER_CLASS)]
        self._greenlets = [gevent.spawn(self._report_status)]

    def _send_interval(self, payload: dict[str, Any]) -> None:
        self.runner.send_message(MSG_INTERVAL, {"token": self.token, **payload})

    def _report_status(self) -> None:
        """Tell the master how many users have their client, until the phase starts."""
        last: tuple[int, int] = (-1, -1)
        while not self.ctx.phase_started.is_set() and not self.aborted.is_set():
            now = (self.ctx.users_ready, len(self.ctx.user_errors))
            if now != last:
                error = self.ctx.user_errors[0] if self.ctx.user_errors else None
                self.runner.send_message(MSG_STATUS, {
                    "token": self.token, "ready": now[0],
                    "error": None if error is None else _one_line(f"{error.__class__.__name__}: {error}")})
                last = now
            gevent.sleep(0.05)

    def start(self, start_epoch: float) -> None:
        self._greenlets.append(gevent.spawn(self._phase, start_epoch))

    def abort(self) -> None:
        self.aborted.set()
        self.ctx.phase_ended.set()
        for g in self._greenlets:
            g.kill(block=False)

    def _phase(self, start_epoch: float) -> None:
        ctx, spec = self.ctx, self.spec
        freeze_heap()
        try:
            # perf_counter is per process: convert the master's epoch instant once.
            start = time.perf_counter() + (start_epoch - time.time())
            if start > time.perf_counter():
                gevent.sleep(start - time.perf_counter())
            self.recorder.begin(start)
            if ctx.open_model:
                ctx.pacer = Pacer(rate=self.schedule.rate, start=start, duration_s=spec["duration_s"],
                                  time_scale=spec["time_scale"], share=1.0 / self.workers,
                                  drop_after_s=float(self.profile["schedule"]["drop_after_s"]))
            ctx.phase_started.set()
            ctx.warmup_interval = None
            for _ in tick_phase(ctx, self.recorder, start=start, duration_s=spec["duration_s"], stop=self.aborted):
                pass
            if self.aborted.is_set():
                return
            ctx.phase_ended.set()
            drain(ctx)
            self.sink.final = True
            self.recorder.tick(time.perf_counter(), target_ops_per_s=None,
                               dropped=dropped_since(ctx.pacer, self.recorder))
            # Locust's own stats go to the master every 3 s; send the rest now so its CSVs are whole.
            report: dict[str, Any] = {}
            self.env.events.report_to_master.fire(client_id=self.runner.client_id, data=report)
            self.runner.send_message("stats", report)
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
            self.cell = _WorkerCell(self.env, self.runner, msg.data)
            print(f"keyramp worker: cell {msg.data['token']} (worker {msg.data['worker_index']} of "
                  f"{msg.data['workers']})", file=sys.stderr, flush=True)
        except Exception as exc:  # tell the master why instead of timing out there
            self.runner.send_message(MSG_STATUS, {"token": msg.data.get("token"), "ready": 0,
                                                  "error": _one_line(f"{exc.__class__.__name__}: {exc}")})

    def _on_start(self, environment: Environment, msg: Any, **_: Any) -> None:
        if self.cell is not None and self.cell.token == msg.data["token"]:
            self.cell.start(float(msg.data["start_epoch"]))

    def _on_abort(self, environment: Environment, msg: Any, **_: Any) -> None:
        if self.cell is not None and self.cell.token == msg.data["token"]:
            self.cell.abort()


def run_worker(*, master_host: str, master_port: int, exit_with_parent: bool = False) -> int:
    """``keyramp run --worker``: serve cells for the master until it says quit."""
    env = Environment(user_classes=[_placeholder_user()], events=Events(), stop_timeout=0.0)
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


# ---------------------------------------------------------------------------------------
# master side
# ---------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class MasterOptions:
    bind_host: str = "127.0.0.1"
    #: ``None``: a free port (local workers; the CLI passes its default for ``--master``).
    port: int | None = None
    #: Worker processes to launch on this host (``--workers N``).
    local_workers: int = 0
    #: Workers to wait for before the first cell (at least ``local_workers``).
    expect_workers: int = 1


@dataclass
class _WorkerInfo:
    client_id: str
    host: str
    pid: int


@dataclass
class _CellMerge:
    """Merges interval *k* of every worker into the master's recorder, in order."""

    token: str
    workers: list[str]
    recorder: Recorder
    #: The whole schedule's pacer (share 1), for the merged target rate; None for a closed model.
    pacer: Pacer | None
    ready: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    pending: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)
    finished: dict[str, int] = field(default_factory=dict)
    next: int = 0
    rows: list[list[TimeseriesRow]] = field(default_factory=list)
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    dropped: Counter[str] = field(default_factory=Counter)

    def add(self, client_id: str, data: dict[str, Any]) -> None:
        if client_id not in self.workers or client_id in self.finished:
            return
        second = int(data["second"])
        self.pending.setdefault(second, {})[client_id] = data
        per_op = self.counts.setdefault(client_id, Counter())
        for op, o in data["ops"].items():
            per_op[op] += int(o["count"])
        self.dropped[client_id] += int(data["dropped"])
        if data["final"]:
            self.finished[client_id] = second
        while self.next in self.pending and self._complete(self.next):
            self._merge(self.next)
            self.next += 1

    def _complete(self, second: int) -> bool:
        parts = self.pending[second]
        return all(w in parts or self.finished.get(w, second) < second for w in self.workers)

    def _merge(self, second: int) -> None:
        parts = self.pending.pop(second)
        end_s = max(p["start_s"] + p["length_s"] for p in parts.values())
        keys: list[tuple[float, str, str]] = []
        for p in parts.values():
            for op, o in p["ops"].items():
                self.recorder.absorb(op, latency=HdrHistogram.decode(o["latency"]),
                                     service=HdrHistogram.decode(o["service"]), count=int(o["count"]),
                                     errors=int(o["errors"]), late=int(o["late"]), classes=o["classes"])
            keys.extend((float(t), op, key) for t, op, key in p["keys"])
        keys.sort(key=lambda k: k[0])
        self.recorder.absorb_keys(keys)
        dropped = sum(int(p["dropped"]) for p in parts.values())
        target = self.pacer.target_rate(max(0.0, end_s - 1.0)) if self.pacer else None
        self.rows.append(self.recorder.tick(end_s, target_ops_per_s=target, dropped=dropped))

    @property
    def done(self) -> bool:
        return len(self.finished) == len(self.workers) and not self.pending

    def flush(self) -> None:
        """Merge whatever arrived (a failed or interrupted cell keeps what was recorded)."""
        for second in sorted(self.pending):
            self._merge(second)

    def take_rows(self) -> list[list[TimeseriesRow]]:
        rows, self.rows = self.rows, []
        return rows


class Master:
    """A Locust ``MasterRunner`` for one ``keyramp run``, optionally with local workers."""

    def __init__(self, options: MasterOptions) -> None:
        self.options = options
        self.port = options.port if options.port is not None else free_port(options.bind_host)
        self.expect = max(options.expect_workers, options.local_workers, 1)
        self._check_port(options.bind_host, self.port)
        self.env = Environment(user_classes=[_placeholder_user()], events=Events(), stop_timeout=0.0)
        try:
            self.runner = self.env.create_master_runner(master_bind_host=options.bind_host,
                                                        master_bind_port=self.port)
        except SystemExit:  # Locust exits the process when the port is taken
            raise UsageError(f"--master-port {self.port}: address already in use on {options.bind_host}") from None
        except Exception as exc:
            raise UsageError(f"--master-bind-host {options.bind_host}:{self.port}: cannot listen: {exc}") from None
        self.hello: dict[str, _WorkerInfo] = {}
        self.merge: _CellMerge | None = None
        self.procs: list[subprocess.Popen[bytes]] = []
        self._log_dir: Path | None = None
        self.runner.register_message(MSG_HELLO, self._on_hello)
        self.runner.register_message(MSG_STATUS, self._on_status)
        self.runner.register_message(MSG_INTERVAL, self._on_interval)
        if options.local_workers:
            self._launch(options.local_workers)

    @staticmethod
    def _check_port(host: str, port: int) -> None:
        """A taken port is bad input; Locust itself would log and ``sys.exit(1)``."""
        try:
            with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise UsageError(f"--master-port {port}: address already in use on {host}") from None
            raise UsageError(f"--master-bind-host {host}:{port}: cannot listen: {exc.strerror or exc}") from None

    # -- processes ----------------------------------------------------------------------
    def _launch(self, n: int) -> None:
        self._log_dir = Path(tempfile.mkdtemp(prefix="keyramp-workers-"))
        cmd = [sys.executable, "-m", "keyramp", "run", "--worker", "--master-host", "127.0.0.1",
               "--master-port", str(self.port), "--exit-with-parent"]
        for i in range(n):
            with open(self._log_dir / f"worker{i}.log", "wb") as log:
                # Own session: a terminal's Ctrl-C reaches only the master, which stops them in order.
                self.procs.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                                   start_new_session=True))

    def _dead_local(self, workers: Sequence[str] = ()) -> str | None:
        index = {self.hello[cid].pid: i for i, cid in enumerate(workers) if cid in self.hello}
        for i, proc in enumerate(self.procs):
            code = proc.poll()
            if code is not None:
                tail = _log_tail(self._log_dir / f"worker{i}.log") if self._log_dir else "(no log)"
                who = f"worker {index[proc.pid]}" if proc.pid in index else "worker process"
                return f"{who} (pid {proc.pid}) exited with code {code}: {tail}"
        return None

    def close(self) -> None:
        """Send quit to every worker, then make sure the local ones are gone (by pid)."""
        with contextlib.suppress(Exception):
            quitter = gevent.spawn(self.runner.quit)
            quitter.join(timeout=3.0)
            if not quitter.dead:
                quitter.kill(block=False)
        deadline = time.monotonic() + 5.0
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            if proc.poll() is None:
                proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=3.0)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)

    def __enter__(self) -> Master:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- messages -----------------------------------------------------------------------
    def _on_hello(self, environment: Environment, msg: Any, **_: Any) -> None:
        data = msg.data or {}
        self.hello[msg.node_id] = _WorkerInfo(msg.node_id, str(data.get("host", "?")), int(data.get("pid", 0)))

    def _on_status(self, environment: Environment, msg: Any, **_: Any) -> None:
        merge = self.merge
        if merge is None or msg.data.get("token") != merge.token or msg.node_id not in merge.workers:
            return
        merge.ready[msg.node_id] = int(msg.data.get("ready", 0))
        if msg.data.get("error"):
            merge.errors.append(str(msg.data["error"]))

    def _on_interval(self, environment: Environment, msg: Any, **_: Any) -> None:
        merge = self.merge
        if merge is not None and msg.data.get("token") == merge.token:
            merge.add(msg.node_id, msg.data)

    # -- workers ------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return {"bind": f"{self.options.bind_host}:{self.port}", "expected": self.expect,
                "local": len(self.procs)}

    def _available(self) -> list[str]:
        ready = {c.id for c in self.runner.clients.ready}
        return [cid for cid in self.hello if cid in ready]

    def wait_for_workers(self, stop: Any, say: Callable[[str], None]) -> list[str]:
        """Hello'd workers in Locust's ready state, once at least ``expect`` of them are there."""
        deadline = time.monotonic() + _LOCAL_CONNECT_S if self.procs else None
        said = False
        while True:
            available = self._available()
            if len(available) >= self.expect:
                return available
            dead = self._dead_local()
            if dead is not None:
                raise RunFailed(dead)
            if deadline is not None and time.monotonic() > deadline:
                raise RunFailed(f"only {len(available)} of {self.expect} workers connected within "
                                f"{_LOCAL_CONNECT_S:.0f} s")
            if not said and not self.procs:
                say(f"waiting for {self.expect - len(available)} worker(s) on {self.options.bind_host}:{self.port}")
                said = True
            if stop.event.wait(timeout=0.1):
                raise Interrupted(stop.reason or "interrupted")

    def _lost(self, workers: list[str], merge: _CellMerge | None = None) -> str | None:
        dead = self._dead_local(workers)
        if dead is not None:
            return dead
        for i, cid in enumerate(workers):
            if merge is not None and cid in merge.finished:
                continue
            node = self.runner.clients.get(cid)
            info = self.hello.get(cid)
            who = f"worker {i} ({info.host} pid {info.pid})" if info else f"worker {i} ({cid})"
            if node is None:
                return f"{who} disconnected"
            if node.state == STATE_MISSING:
                return f"{who} stopped sending heartbeats"
        return None

    def _stop_users(self, timeout_s: float = _STOP_S) -> None:
        # Locust waits until the workers report no users; a dead worker never does.
        stopper = gevent.spawn(self.runner.stop)
        stopper.join(timeout=timeout_s)
        if not stopper.dead:
            stopper.kill(block=False)

    # -- one cell -------------------------------------------------------------------------
    def run_cell(self, cr: _CellRun) -> dict[str, Any]:
        """The measured phase of ``cr`` on the workers; returns the cell summary (master side of
        ``_CellRun.execute`` after reset, prepare and preload)."""
        cell, profile = cr.cell, cr.profile.data
        stop = cr.stop
        workers = self.wait_for_workers(stop, lambda text: cr.status.phase(cell, text))
        n = len(workers)
        users = cr._users(processes=n)
        if cell.schedule.open_model:
            users = max(users, n)  # every worker paces a share of the rate: each needs a user
        token = f"{cr.run.run_id}/{cell.id}"
        warmup_s = cr.warmup_seconds()
        # Only its target_rate is used: the workers pace, the master merges.
        pacer = (Pacer(rate=cell.schedule.rate, start=0.0, duration_s=cell.duration_s, time_scale=cell.time_scale)
                 if cell.schedule.open_model else None)
        merge = _CellMerge(token=token, workers=workers, recorder=cr.recorder, pacer=pacer)
        self.merge = merge
        budget = int(profile["workload"]["key_samples_per_s"])
        base = {
            "token": token, "profile": dict(profile), "workers": n, "namespace": cr.target.namespace,
            "endpoint": cr.target.endpoint, "timeout_s": cr.options.timeout_s,
            "key_samples_per_s": math.ceil(budget / n) if budget else 0,
            "warmup_interval": warmup_interval(cell, users) if warmup_s > 0 else None,
            "allocated": list(cr.workload.allocated),
            "cell": {"id": cell.id, "index": cell.index, "backend": cell.backend, "strategy": cell.strategy,
                     "duration_s": cell.duration_s, "time_scale": cell.time_scale},
        }
        for i, cid in enumerate(workers):
            self.runner.send_message(MSG_CELL, {**base, "worker_index": i}, client_id=cid)
        env = self.env
        csv_base = str(cr.run.path / "locust" / cell.id)
        csv_writer = StatsCSVFileWriter(env, PERCENTILES_TO_REPORT, csv_base, full_history=True)
        writer_greenlet = None
        start_perf = None
        reason: str | None = None
        try:
            cr.status.phase(cell, f"spawning {users} users on {n} workers")
            self.runner.start(users, spawn_rate=min(users * 10, 100 * n))
            reason = self._wait_users(merge, users, stop)
            if reason is None and warmup_s > 0:
                cr.status.phase(cell, f"warming up {warmup_s:g}s")
                if stop.event.wait(timeout=warmup_s):
                    reason = stop.reason or "interrupted"
                cr.warmup_used_s = warmup_s  # fixed on workers: their latencies stay there
            if reason is None:
                env.stats.reset_all()
                writer_greenlet = gevent.spawn(csv_writer.stats_writer)
                start_epoch = time.time() + _START_LEAD_S
                start_perf = time.perf_counter() + _START_LEAD_S
                self.runner.send_message(MSG_START, {"token": token, "start_epoch": start_epoch})
                cr.run.begin_cell(cell.id)
                cr.keys_start = cr.run.keys_offset()
                cr.recorder.begin(0.0)
                reason = self._follow(cr, merge, start_perf)
        finally:
            ended = time.perf_counter()
            if reason is not None or not merge.done:
                with contextlib.suppress(Exception):
                    self.runner.send_message(MSG_ABORT, {"token": token})
            self._stop_users(_STOP_S if reason is None else 2.0)
            if writer_greenlet is not None:
                writer_greenlet.kill()
            self.merge = None
            if start_perf is not None:
                merge.flush()
                cr._write_locust_csv(env, csv_base, csv_writer)
                elapsed = ended - start_perf
                duration = cell.duration_s if reason is None else max(min(elapsed, cell.duration_s), 1e-9)
                summary = cr._summary(users=users, duration=duration)
                cr.partial = summary
            else:
                with contextlib.suppress(Exception):
                    csv_writer.close_files()
            cr.worker_meta = [
                {"index": i, "host": self.hello[cid].host if cid in self.hello else None,
                 "pid": self.hello[cid].pid if cid in self.hello else None,
                 "count": sum(merge.counts.get(cid, Counter()).values()),
                 "ops": dict(sorted(merge.counts.get(cid, Counter()).items())),
                 "dropped": merge.dropped.get(cid, 0)}
                for i, cid in enumerate(workers)
            ]
        if reason is not None:
            raise Interrupted(reason) if stop.event.is_set() else RunFailed(f"{cell.id}: {reason}")
        return summary

    def _wait_users(self, merge: _CellMerge, users: int, stop: Any) -> str | None:
        deadline = time.monotonic() + _USERS_READY_S
        while sum(merge.ready.values()) < users:
            if merge.errors:
                return f"could not create a client: {merge.errors[0]}"
            lost = self._lost(merge.workers)
            if lost is not None:
                return lost
            if time.monotonic() > deadline:
                return f"users did not start within {_USERS_READY_S:.0f} s ({sum(merge.ready.values())}/{users})"
            if stop.event.wait(timeout=0.02):
                return stop.reason or "interrupted"
        return None

    def _follow(self, cr: _CellRun, merge: _CellMerge, start_perf: float) -> str | None:
        """Until every worker's last interval is merged: live status and stop conditions."""
        cell, stop = cr.cell, cr.stop
        deadline = start_perf + cell.duration_s + _DRAIN_S + _FINAL_GRACE_S
        checks = SecondCheck(cloud=cr.cloud, emulator_died=cr.emulator_died)
        while not merge.done:
            if stop.event.wait(timeout=0.1):
                return stop.reason or "interrupted"
            for rows in merge.take_rows():
                total = rows[-1]
                cr.status.second(cell, total, min(total.second + 1, cell.duration_s))
                reason = checks.check(total)
                if reason is not None:
                    return reason
            lost = self._lost(merge.workers, merge)
            if lost is not None:
                return lost
            if time.perf_counter() > deadline:
                missing = [str(i) for i, w in enumerate(merge.workers) if w not in merge.finished]
                return f"worker(s) {', '.join(missing)} sent no last interval within {_FINAL_GRACE_S:.0f} s"
        return None
