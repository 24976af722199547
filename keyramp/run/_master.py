"""The Locust master of a distributed run: ``keyramp run --workers N`` and ``--master``.

The master does everything that is not load (target, reset, preload, analysis,
thresholds, the run directory) and drives each cell's phases (``_phases.CellPhases``)
through ``WorkerLoad``: the workers receive a frozen ``CellShare``, pace ``1/N`` of the
schedule from the same start instant and forward every closed interval; the master
merges interval *k* of all workers into the cell's recorder (``_merge.CellMerge``) and
ticks it, so the run directory is written exactly as a single process writes it.
"""

from __future__ import annotations

import locust  # noqa: F401  (monkey-patches the standard library before anything imports ssl)

# isort: split
import contextlib
import errno
import shutil
import socket
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gevent
from gevent.event import Event
from locust.env import Environment
from locust.event import Events
from locust.runners import STATE_MISSING

from keyramp.core import RunFailed, UsageError, fmt
from keyramp.results import LoadCpu, TimeseriesRow
from keyramp.run._cpu import load_cpu_summary
from keyramp.run._exceptions import WarmupFailure, WarmupTally
from keyramp.run._gevent import ensure_gevent_grpc
from keyramp.run._merge import CellMerge
from keyramp.run._messages import Abort, Hello, IntervalReport, Start, Status, WarmupReport, receive, send
from keyramp.run._pacer import Pacer
from keyramp.run._phases import DRAIN_S, PhaseAborted, StopFlag
from keyramp.run._recorder import Recorder
from keyramp.run._share import CellShare
from keyramp.run._worker import placeholder_user, worker_command
from keyramp.targets import free_port, log_tail

__all__ = ["Master", "MasterOptions", "WorkerLoad"]

#: How far ahead of "now" the master puts the phase start, so every worker has the message.
_START_LEAD_S = 0.5
#: Local worker processes must connect within this (imports on a loaded 2-core box are slow).
_LOCAL_CONNECT_S = 90.0
#: After the phase (+ drain) the master waits this long for every worker's last interval.
_FINAL_GRACE_S = 10.0
#: Bounded stop of the workers' users between cells.
_STOP_S = 5.0


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


class Master:
    """A Locust ``MasterRunner`` for one ``keyramp run``, optionally with local workers."""

    def __init__(self, options: MasterOptions) -> None:
        ensure_gevent_grpc()  # the master preloads through gRPC clients too
        self.options = options
        self.port = options.port if options.port is not None else free_port(options.bind_host)
        self.expect = max(options.expect_workers, options.local_workers, 1)
        self._check_port(options.bind_host, self.port)
        self.env = Environment(user_classes=[placeholder_user()], events=Events(), stop_timeout=0.0)
        try:
            self.runner = self.env.create_master_runner(master_bind_host=options.bind_host,
                                                        master_bind_port=self.port)
        except SystemExit:  # Locust exits the process when the port is taken
            raise UsageError(f"--master-port {self.port}: address already in use on {options.bind_host}") from None
        except Exception as exc:  # noqa: BLE001 - any bind failure is a usage problem, said in one line
            raise UsageError(f"--master-bind-host {options.bind_host}:{self.port}: cannot listen: {exc}") from None
        self.hello: dict[str, _WorkerInfo] = {}
        self.merge: CellMerge | None = None
        self.procs: list[subprocess.Popen[bytes]] = []
        self._log_dir: Path | None = None
        receive(self.runner, Hello, self._on_hello)
        receive(self.runner, Status, self._on_status)
        receive(self.runner, WarmupReport, self._on_warmup)
        receive(self.runner, IntervalReport, self._on_interval)
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
        cmd = worker_command("127.0.0.1", self.port, exit_with_parent=True)  # python -m keyramp.run.worker
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
                tail = log_tail(self._log_dir / f"worker{i}.log") if self._log_dir else "(no log)"
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
    def _merge_for(self, sender: str, token: str) -> CellMerge | None:
        """The cell a worker's message belongs to (None: an earlier cell's, or not a worker of this one)."""
        merge = self.merge
        if merge is None or token != merge.token or sender not in merge.workers:
            return None
        return merge

    def _on_hello(self, sender: str, hello: Hello) -> None:
        self.hello[sender] = _WorkerInfo(sender, hello.host, hello.pid)

    def _on_status(self, sender: str, status: Status) -> None:
        merge = self._merge_for(sender, status.token)
        if merge is None:
            return
        merge.ready[sender] = status.ready
        if status.warmup_inserts is not None:
            merge.warmup_inserts[sender] = status.warmup_inserts
        if status.error:
            merge.errors.append(status.error)

    def _on_warmup(self, sender: str, warmup: WarmupReport) -> None:
        merge = self._merge_for(sender, warmup.token)
        if merge is not None:
            merge.warmup.extend(warmup.latencies)
            merge.warmup_tally[sender] = warmup.tally

    def _on_interval(self, sender: str, report: IntervalReport) -> None:
        merge = self._merge_for(sender, report.token)
        if merge is not None:
            merge.add(sender, report)

    # -- workers ------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return {"bind": f"{self.options.bind_host}:{self.port}", "expected": self.expect,
                "local": len(self.procs)}

    def _available(self) -> list[str]:
        ready = {c.id for c in self.runner.clients.ready}
        return [cid for cid in self.hello if cid in ready]

    def wait_for_workers(self, stop: StopFlag, say: Callable[[str], None]) -> list[str]:
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
                say(f"waiting for {fmt.plural(self.expect - len(available), 'worker')} on "
                    f"{self.options.bind_host}:{self.port}")
                said = True
            if stop.event.wait(timeout=0.1):
                raise stop.interrupted()

    def lost(self, workers: list[str], merge: CellMerge | None = None) -> str | None:
        dead = self._dead_local(workers)
        if dead is not None:
            return dead
        for i, cid in enumerate(workers):
            if merge is not None and cid in merge.finished:
                continue
            why = self._node_gone(cid)
            if why is not None:
                info = self.hello.get(cid)
                return (f"worker {i} ({info.host} pid {info.pid})" if info else f"worker {i} ({cid})") + f" {why}"
        return None

    def _node_gone(self, cid: str) -> str | None:
        """Why the master no longer hears worker ``cid`` (None: it does)."""
        node = self.runner.clients.get(cid)
        if node is None:
            return "disconnected"
        return "stopped sending heartbeats" if node.state == STATE_MISSING else None

    def lost_ids(self, workers: list[str]) -> set[str]:
        """Which of ``workers`` are gone: a local process that exited, a disconnected or silent node."""
        pids = {proc.pid for proc in self.procs if proc.poll() is not None}
        exited = {cid for cid in workers if (info := self.hello.get(cid)) is not None and info.pid in pids}
        return exited | {cid for cid in workers if self._node_gone(cid) is not None}

    def stop_users(self, timeout_s: float = _STOP_S) -> None:
        # Locust waits until the workers report no users; a dead worker never does.
        stopper = gevent.spawn(self.runner.stop)
        stopper.join(timeout=timeout_s)
        if not stopper.dead:
            stopper.kill(block=False)


class WorkerLoad:
    """The ``CellLoad`` of a distributed cell: its users run on the master's workers."""

    def __init__(self, master: Master, *, plan: Callable[[int, int, float | None], CellShare], recorder: Recorder,
                 pacer: Pacer | None, duration_s: float, stop: StopFlag, say: Callable[[str], None]) -> None:
        self.master = master
        self.environment = master.env
        #: ``plan(worker_index, workers, warmup_interval)``: the frozen plan one worker receives.
        self._plan = plan
        self.recorder = recorder
        #: Only its ``target_rate`` is used: the workers pace, the master merges.
        self._pacer = pacer
        self.duration_s = duration_s
        self.stop = stop
        self.say = say
        self.workers: list[str] = []
        self.merge: CellMerge | None = None
        self.token = ""
        self._start = 0.0
        #: Workers found lost when the phase aborted (their records end at their last interval).
        self.lost: set[str] = set()

    def connect(self) -> int:
        self.workers = self.master.wait_for_workers(self.stop, self.say)
        return len(self.workers)

    def spawn(self, users: int, *, warmup_interval: float | None) -> None:
        n = len(self.workers)
        plans = [self._plan(i, n, warmup_interval) for i in range(n)]
        self.token = plans[0].token
        self.merge = self.master.merge = CellMerge(token=self.token, workers=self.workers, recorder=self.recorder,
                                                    pacer=self._pacer)
        for cid, plan in zip(self.workers, plans, strict=True):
            send(self.master.runner, plan, to=cid)
        self.master.runner.start(users, spawn_rate=min(users * 10, 100 * n))

    def ready(self) -> int:
        assert self.merge is not None
        return sum(self.merge.ready.values())

    def problem(self) -> str | None:
        assert self.merge is not None
        if self.merge.errors:
            return f"could not create a client: {self.merge.errors[0]}"
        return self.master.lost(self.workers)

    def warmup_failure(self) -> WarmupFailure | None:
        assert self.merge is not None
        return WarmupTally.merged(self.merge.warmup_tally.values()).failure()

    def take_warmup_latencies(self) -> list[float]:
        assert self.merge is not None
        taken, self.merge.warmup = self.merge.warmup, []
        return taken

    def start(self) -> float:
        start_epoch = time.time() + _START_LEAD_S
        self._start = time.perf_counter() + _START_LEAD_S
        send(self.master.runner, Start(token=self.token, start_epoch=start_epoch))
        self.recorder.begin(0.0, duration_s=self.duration_s)  # merged intervals carry seconds since the phase start
        return self._start

    def seconds(self, stop: Event) -> Iterator[tuple[float, list[TimeseriesRow]]]:
        """Until every worker's last interval is merged (the phase, their drain, their last
        partial interval)."""
        merge = self.merge
        assert merge is not None
        deadline = self._start + self.duration_s + DRAIN_S + _FINAL_GRACE_S
        while not merge.done:
            if stop.wait(timeout=0.1):
                return
            for rows in merge.take_rows():
                yield min(rows[-1].second + 1, self.duration_s), rows
            lost = self.master.lost(merge.workers, merge)
            if lost is not None:
                self.lost = self.master.lost_ids([w for w in merge.workers if w not in merge.finished])
                raise PhaseAborted(lost)
            if time.perf_counter() > deadline:
                missing = [str(i) for i, w in enumerate(merge.workers) if w not in merge.finished]
                raise PhaseAborted(f"{'worker' if len(missing) == 1 else 'workers'} {', '.join(missing)} sent no last "
                                   "interval within "
                                   f"{_FINAL_GRACE_S:.0f} s")
        for rows in merge.take_rows():
            yield min(rows[-1].second + 1, self.duration_s), rows

    def finish(self, *, measured: bool, aborted: bool) -> None:
        merge = self.merge
        if merge is not None and (aborted or not merge.done):
            with contextlib.suppress(Exception):
                send(self.master.runner, Abort(token=self.token))
        self.master.stop_users(2.0 if aborted else _STOP_S)
        self.master.merge = None
        if merge is not None and measured:
            merge.flush()

    def warmup_inserts(self) -> int | None:
        merge = self.merge
        if merge is None or set(merge.warmup_inserts) != set(self.workers):
            return None  # a worker did not report: estimated from the warm-up's length instead
        return sum(merge.warmup_inserts.values())

    def load_cpu(self) -> LoadCpu | None:
        return load_cpu_summary(list(self.merge.cpu.values())) if self.merge is not None else None

    def worker_meta(self) -> list[dict[str, Any]]:
        """Per-worker figures for the manifest."""
        merge, hello = self.merge, self.master.hello
        counts = merge.counts if merge is not None else {}
        dropped = merge.dropped if merge is not None else Counter()
        last = merge.last_second if merge is not None else {}
        return [{"index": i, "host": hello[cid].host if cid in hello else None,
                 "pid": hello[cid].pid if cid in hello else None,
                 "count": sum(counts.get(cid, Counter()).values()),
                 "ops": dict(sorted(counts.get(cid, Counter()).items())), "dropped": dropped.get(cid, 0),
                 "last_second": last.get(cid), **({"lost": True} if cid in self.lost else {})}
                for i, cid in enumerate(self.workers)]

