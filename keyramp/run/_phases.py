"""The phases of one cell, written once: spawn and connect users, warm up (until settled on a
fresh emulator), the measured phase on a 1-second clock, drain, stop.

``CellPhases`` drives them for the single-process runner and for the distributed master
alike; where the users run is behind ``CellLoad`` (``_local.LocalLoad``: a Locust
``LocalRunner`` in this process; ``_master.WorkerLoad``: Locust workers that receive a frozen
plan of the cell and report their intervals). A worker never runs these phases itself; the
measured phase inside each load process, local or worker, is ``_driver.ProcessLoad``.
"""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import gevent
from gevent.event import Event

from keyramp.core import EXIT_INTERRUPTED, KeyrampError, RunFailed
from keyramp.results import warmup_phase
from keyramp.run._exceptions import WarmupFailure, WorkloadFailed

if TYPE_CHECKING:
    from locust.env import Environment

    from keyramp.profile import Cell
    from keyramp.results import LoadCpu, Observers, TimeseriesRow
    from keyramp.targets import RunTarget, Warmup

__all__ = ["DRAIN_S", "CellLoad", "CellPhases", "Interrupted", "PhaseAborted", "SecondCheck", "StopFlag", "users_for",
           "warmup_interval"]

#: Consecutive seconds in which every operation failed as "unreachable" before a cell aborts.
_UNREACHABLE_ABORT_S = 5
_UNREACHABLE = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "CLIENT_ServiceUnavailable", "CLIENT_RetryError"})
#: Users (clients) must be created within this.
USERS_READY_S = 60.0
#: Warm-up on a target that asks to settle (the first cell on each emulator): at most, the
#: window it is judged in, and how close a window's median must come to the previous one.
MAX_WARMUP_S = 30.0
_SETTLE_WINDOW_S = 2.0
_SETTLED_RATIO = 1.1
#: How often the warm-up checks for a workload whose every operation raised (fail fast).
_FAIL_FAST_POLL_S = 0.5
#: How long in-flight operations may finish after the phase ends before users are stopped
#: (every load process's drain, and the master's wait for the last intervals).
DRAIN_S = 2.0


class Interrupted(KeyrampError):
    """Ctrl-C or SIGTERM: what was recorded is kept and the run is marked interrupted."""

    exit_code = EXIT_INTERRUPTED


class PhaseAborted(Exception):
    """Raised by a ``CellLoad`` when its users cannot go on (a worker lost); one-line reason."""


class StopFlag:
    """Ctrl-C / SIGTERM set this; the phases turn it into ``Interrupted``."""

    def __init__(self) -> None:
        self.event = Event()
        self.reason: str | None = None
        self._handlers: list[Any] = []

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._handlers.append(gevent.signal_handler(signum, self._on_signal, signum))

    def _on_signal(self, signum: int) -> None:
        self.reason = f"{signal.Signals(signum).name} received"
        self.event.set()

    def uninstall(self) -> None:
        for handler in self._handlers:
            handler.cancel()
        self._handlers.clear()

    def interrupted(self) -> Interrupted:
        return Interrupted(self.reason or "interrupted")


class CellLoad(Protocol):
    """Where a cell's users run, seen from the phases."""

    #: The Locust environment whose ``RequestStats`` the cell's ``locust/`` CSV files show.
    environment: Environment

    def connect(self) -> int:
        """Wait until the processes that run users are there; returns how many."""

    def spawn(self, users: int, *, warmup_interval: float | None) -> None:
        """Start ``users`` users; with an interval, each warms up until the phase starts."""

    def ready(self) -> int:
        """Users whose client exists."""

    def problem(self) -> str | None:
        """A one-line reason the users cannot go on (a client that could not be created, a
        lost worker), else None."""

    def take_warmup_latencies(self) -> list[float]:
        """Service times (s) of the warm-up operations since the last call."""

    def warmup_failure(self) -> WarmupFailure | None:
        """Every warm-up operation so far raised the workload's own exception (None: not so)."""

    def start(self) -> float:
        """Begin the measured phase now (or a moment from now); returns its ``perf_counter`` start."""

    def seconds(self, stop: Event) -> Iterator[tuple[float, list[TimeseriesRow]]]:
        """Each closed second as ``(elapsed_s, rows)``, until the phase and its drain are over
        or ``stop`` is set; raises ``PhaseAborted`` when the users cannot go on."""

    def finish(self, *, measured: bool, aborted: bool) -> None:
        """Stop the users (after a drain unless ``aborted``); record what is still in flight."""

    def worker_meta(self) -> list[dict[str, Any]] | None:
        """Per-worker figures for the manifest (None: the users ran in this process)."""

    def warmup_inserts(self) -> int | None:
        """Records the warm-up inserted before the measured phase began (None: not reported).
        They are part of the key range the cell runs against (key-space analysis)."""

    def load_cpu(self) -> LoadCpu | None:
        """The load processes' CPU over the measured phase (``run._cpu.load_cpu_summary``), or None."""


def users_for(cell: Cell, *, processes: int = 1) -> int:
    """Users for ``cell`` across ``processes`` load processes."""
    sched = cell.schedule
    if not sched.open_model:
        return int(sched.users)  # type: ignore[attr-defined]
    # The cap bounds one load process's greenlets and channels: it applies per process.
    cap = cell.settings.schedule.max_users * processes
    peak = sched.peak(cell.horizon_s)
    # Little's law with a generous 100 ms per op (a loaded client or a lock wait): enough users
    # in flight that the pacer, not the user count, sets the rate; never above the cap. Every
    # process paces a share of the rate, so each needs a user.
    return max(processes, min(cap, max(4, math.ceil(peak * 0.1))))


def warmup_interval(cell: Cell, users: int) -> float:
    """Seconds between one user's warm-up operations: all users together run at about the
    schedule's starting rate (a closed model, or a zero rate, runs back to back)."""
    rate = cell.schedule.rate(0.0) if cell.schedule.open_model else 0.0
    return users / rate if rate > 0 else 0.001


class SecondCheck:
    """The stop conditions the measured phase checks once a second (merged from all workers
    on a master): the target's own (a cloud cap, an emulator that exited) and a store that
    stopped answering. ``check`` returns a one-line reason to abort, else None."""

    def __init__(self, cell: Cell, target: RunTarget) -> None:
        self.cell = cell
        self.target = target
        self.bad_seconds = 0

    def check(self, total: TimeseriesRow) -> str | None:
        """``total``: the all-operations row of the second that just closed."""
        reason = self.target.check(self.cell, ops_last_second=total.count)
        if reason is not None:
            return reason
        unreachable = sum(n for cls, n in total.error_classes.items() if cls in _UNREACHABLE)
        self.bad_seconds = self.bad_seconds + 1 if total.count and unreachable == total.count else 0
        if self.bad_seconds >= _UNREACHABLE_ABORT_S:
            return (f"store unreachable: every operation failed for {self.bad_seconds} s "
                    f"({', '.join(sorted(total.error_classes))})")
        return None


class CellPhases:
    """One cell's lifecycle, for whichever ``CellLoad`` runs its users."""

    def __init__(self, *, cell: Cell, load: CellLoad, target: RunTarget, warmup: Warmup, stop: StopFlag,
                 observers: Observers, on_start: Callable[[], None]) -> None:
        self.cell = cell
        self.load = load
        self.target = target
        self.warmup = warmup
        self.stop = stop
        self.observers = observers
        #: Called just before the measured phase starts (the run directory opens the cell).
        self.on_start = on_start
        self.users = 0
        #: Unmeasured warm-up this cell actually ran.
        self.warmup_used_s = 0.0
        #: Whether the measured phase started (a summary of what was recorded can be written).
        self.measured = False
        self.start = self.ended = 0.0

    def warmup_seconds(self) -> float:
        seconds = self.cell.settings.schedule.warmup_s
        if seconds > 0 and self.warmup.minimum_s is not None:
            seconds = max(seconds, self.warmup.minimum_s)
        return seconds

    def run(self) -> None:
        """All phases; on failure the users are stopped and what was recorded flushed before
        ``RunFailed``/``Interrupted`` is raised (``measured`` tells whether there is data)."""
        cell, load = self.cell, self.load
        reason: str | None = None
        try:
            processes = load.connect()
            self.users = users_for(cell, processes=processes)
            warmup_s = self.warmup_seconds()
            where = f" on {processes} workers" if processes > 1 else ""
            self.observers.cell_phase(cell, f"spawning {self.users} users{where}")
            # Before the spawn: a user that finds no warm-up interval waits for the phase.
            load.spawn(self.users, warmup_interval=warmup_interval(cell, self.users) if warmup_s > 0 else None)
            self._wait_ready()
            self._warm_up(warmup_s)
            self.on_start()
            self.observers.cell_phase(cell, "measuring")
            self.start = load.start()
            self.measured = True
            try:
                reason = self._follow()
            except PhaseAborted as exc:
                reason = str(exc)
        finally:
            self.ended = time.perf_counter()
            load.finish(measured=self.measured, aborted=reason is not None or not self.measured)
        if reason is not None:
            raise self.stop.interrupted() if self.stop.event.is_set() else RunFailed(f"{cell.id}: {reason}")

    @property
    def duration_s(self) -> float:
        """The measured phase's length: the schedule's, or up to where it was cut short."""
        return max(min(self.ended - self.start, self.cell.duration_s), 1e-9)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + USERS_READY_S
        while self.load.ready() < self.users:
            problem = self.load.problem()
            if problem is not None:
                raise RunFailed(f"{self.cell.id}: {problem}")
            if time.monotonic() > deadline:
                raise RunFailed(f"{self.cell.id}: users did not start within {USERS_READY_S:.0f} s "
                                f"({self.load.ready()}/{self.users})")
            if self.stop.event.wait(timeout=0.02):
                raise self.stop.interrupted()

    def _warm_up(self, seconds: float) -> None:
        """Unmeasured operations at about the starting rate before the measured phase.

        On a target that asks to settle (the first cell on each emulator: a JVM emulator keeps
        JIT-compiling well after its first requests, so whichever cell ran first looked several
        times slower than the rest), after ``seconds`` it runs in windows of
        ``_SETTLE_WINDOW_S`` until a window's median latency is within ``_SETTLED_RATIO`` of
        the previous one, up to ``MAX_WARMUP_S`` in all; the time used goes into the summary
        (``warmup_s``). Workers report their warm-up latencies, so a distributed cell settles
        the same way.
        """
        if seconds <= 0:
            return
        settle = self.warmup.settle
        self.observers.cell_phase(self.cell, warmup_phase(seconds, settle_up_to=MAX_WARMUP_S if settle else None))
        started = time.perf_counter()
        try:
            self._wait_warming(seconds, started)
            previous: float | None = None
            while settle and time.perf_counter() - started < MAX_WARMUP_S:
                self.load.take_warmup_latencies()
                if self.stop.event.wait(timeout=_SETTLE_WINDOW_S):
                    raise self.stop.interrupted()
                problem = self.load.problem()
                if problem is not None:
                    raise RunFailed(f"{self.cell.id}: {problem}")
                window = sorted(self.load.take_warmup_latencies())
                if not window:
                    break  # nothing succeeds: the measured phase will show why
                median = window[len(window) // 2]
                if previous is not None and median <= previous * _SETTLED_RATIO:
                    break
                previous = median
        finally:
            self.warmup_used_s = round(time.perf_counter() - started, 1)
        self._check_workload()

    def _wait_warming(self, seconds: float, started: float) -> None:
        """The first ``seconds`` of warm-up. A workload whose every operation raised its own
        exception stops as soon as the profile's own warm-up is over (fail fast: not after a
        fresh emulator's longer minimum)."""
        own = min(seconds, self.cell.settings.schedule.warmup_s)
        end = started + seconds
        while (left := end - time.perf_counter()) > 0:
            if self.stop.event.wait(timeout=min(left, _FAIL_FAST_POLL_S)):
                raise self.stop.interrupted()
            if time.perf_counter() - started >= own:
                self._check_workload()

    def _check_workload(self) -> None:
        failure = self.load.warmup_failure()
        if failure is not None:  # a broken workload: measuring it would show nothing but its bug
            raise WorkloadFailed(self.cell.id, failure)

    def _follow(self) -> str | None:
        checks = SecondCheck(self.cell, self.target)
        for elapsed, rows in self.load.seconds(self.stop.event):
            self.observers.second(self.cell, rows, elapsed, users=self.users)
            reason = checks.check(rows[-1])
            if reason is not None:
                return reason
        return (self.stop.reason or "interrupted") if self.stop.event.is_set() else None
