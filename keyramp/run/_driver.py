"""The measured phase in one load process, written once: the single-process run's users and
each worker's users go through the same ``ProcessLoad``.

A load process sets up one ``CellContext`` for its users (workload, driver, address,
recorder), lets them warm up, then at the phase's start instant freezes the heap, begins
the recorder and the CPU meter, paces its share of the schedule, ticks the recorder once a
second, and at the end drains what is in flight and closes the last second. A worker is a
local load whose recorder's sink forwards each closed interval to the master
(``_worker``); which process decides the phases is ``_phases.CellPhases``'s business, not
this module's.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import gevent
from gevent.event import Event

from keyramp.run._cpu import CpuMeter, CpuSample, load_cpu_summary
from keyramp.run._exceptions import WarmupFailure, WarmupTally
from keyramp.run._pacer import Pacer, Pacing
from keyramp.run._phases import DRAIN_S
from keyramp.run._user import CellContext, KeyrampUser, user_class_for

if TYPE_CHECKING:
    from keyramp.backends import Backend, Target
    from keyramp.results import LoadCpu, TimeseriesRow
    from keyramp.run._recorder import Recorder
    from keyramp.workload import CellWorkload

__all__ = ["PHASE_GC_THRESHOLD", "ProcessLoad", "drain", "dropped_since", "final_tick", "freeze_heap", "thaw_heap",
           "tick_phase"]

#: The garbage collector's young-generation threshold during a measured phase (``freeze_heap``).
PHASE_GC_THRESHOLD = 10_000


class ProcessLoad:
    """One cell's users in this process and their measured phase.

    ``user_class`` is what Locust spawns here (the local runner, or a worker runner that
    the master dispatches users to). ``start`` → ``seconds`` → ``finish`` is the measured
    phase; ``stop_users`` (if given) stops this process's users before the last second
    closes (a worker's users are stopped by the master instead).
    """

    def __init__(self, *, workload: CellWorkload, backend_class: type[Backend], target: Target, recorder: Recorder,
                 pacing: Pacing, user_class_name: str | None = None,
                 stop_users: Callable[[], None] | None = None) -> None:
        self.ctx = CellContext(workload=workload, backend_class=backend_class, target=target, recorder=recorder,
                               open_model=pacing.schedule.open_model)
        self.recorder = recorder
        self.pacing = pacing
        self.user_class: type[KeyrampUser] = user_class_for(self.ctx, name=user_class_name)
        self._stop_users = stop_users
        self._start = 0.0
        self._warmup_inserts: int | None = None
        self._cpu: CpuMeter | None = None
        #: This process's CPU over the measured phase so far, sampled each second.
        self._cpu_used: CpuSample | None = None
        #: The collector's thresholds before the phase (``freeze_heap``), restored after it.
        self._gc_thresholds: tuple[int, int, int] | None = None

    # -- before the phase -----------------------------------------------------------------
    def warm_up(self, interval: float | None) -> None:
        """Seconds between one user's warm-up operations until the phase starts (None: none)."""
        self.ctx.warmup_interval = interval

    def ready(self) -> int:
        """Users whose client exists."""
        return self.ctx.users_ready

    def user_errors(self) -> list[BaseException]:
        return self.ctx.user_errors

    def take_warmup_latencies(self) -> list[float]:
        taken, self.ctx.warmup_latencies = self.ctx.warmup_latencies, []
        return taken

    def warmup_tally(self) -> WarmupTally:
        """A copy of the warm-up so far: operations, the workload's own exceptions among them."""
        return replace(self.ctx.warmup)

    def warmup_failure(self) -> WarmupFailure | None:
        """Every warm-up operation so far raised the workload's own exception (None: not so)."""
        return self.ctx.warmup.failure()

    # -- the measured phase ---------------------------------------------------------------
    def start(self, at: float | None = None) -> float:
        """Begin the measured phase at ``at`` (a ``perf_counter`` instant; None: now); returns it."""
        ctx = self.ctx
        self._gc_thresholds = freeze_heap()
        if at is not None:
            gevent.sleep(max(0.0, at - time.perf_counter()))
        start = self._start = at if at is not None else time.perf_counter()
        ctx.warmup_interval = None  # warming users now wait for the phase
        # What the warm-up inserted is part of the key range the cell runs against.
        self._warmup_inserts = ctx.workload.inserted
        self.recorder.begin(start, duration_s=self.pacing.duration_s)
        self._cpu = CpuMeter()
        ctx.pacer = self.pacing.pacer(start)
        ctx.phase_started.set()
        return start

    def seconds(self, stop: Event) -> Iterator[tuple[float, list[TimeseriesRow]]]:
        """Each closed second of the phase as ``(elapsed_s, rows)`` until it ends or ``stop`` is set."""
        for now, rows in tick_phase(self.ctx, self.recorder, start=self._start, duration_s=self.pacing.duration_s,
                                    stop=stop):
            self._cpu_used = self.cpu_sample()
            yield now - self._start, rows

    def finish(self, *, measured: bool, aborted: bool) -> None:
        """End the phase: drain (unless ``aborted``), stop the users, close the last second (if
        ``measured``); safe in any state, also before the phase began."""
        ctx = self.ctx
        ctx.phase_ended.set()
        if measured and not aborted:
            drain(ctx)
        if self._stop_users is not None:
            self._stop_users()
        if self._gc_thresholds is not None:  # what this cell held (clients, users) may be collected again
            thaw_heap(self._gc_thresholds)
            self._gc_thresholds = None
        if measured:
            final_tick(ctx, self.recorder)  # the last second, with what finished during the drain

    # -- figures --------------------------------------------------------------------------
    def cpu_sample(self) -> CpuSample | None:
        """This process's CPU since the phase started (None before it)."""
        return self._cpu.sample() if self._cpu is not None else None

    def warmup_inserts(self) -> int | None:
        return self._warmup_inserts

    def load_cpu(self) -> LoadCpu | None:
        return load_cpu_summary([self._cpu_used]) if self._cpu_used else None


def dropped_since(pacer: Pacer | None, recorder: Recorder) -> int:
    """Slots ``pacer`` dropped that no ``recorder.tick`` has been told of yet."""
    return max(0, pacer.dropped - recorder.dropped_total) if pacer else 0


def tick_phase(ctx: CellContext, recorder: Recorder, *, start: float, duration_s: float,
               stop: Event) -> Iterator[tuple[float, list[TimeseriesRow]]]:
    """The measured phase's 1-second clock in one load process.

    Closes one recorder interval per second, with the pacer's target rate and the slots it
    dropped since the last second, and yields ``(now, rows)``. Ends with the phase or as
    soon as ``stop`` is set (the caller tells which by ``stop.is_set()``).

    The phase's last second is left open: ``final_tick`` closes it after the drain, so it
    holds its in-flight operations instead of being followed by a drain-only second (which
    showed as 0 % achieved at the end of every cell). A remainder under half a second joins
    the last whole second.
    """
    end = start + duration_s
    for k in range(1, max(1, round(duration_s))):
        if stop.wait(timeout=max(0.0, start + k - time.perf_counter())):
            return
        now = time.perf_counter()
        pacer = ctx.pacer
        target = pacer.target_rate(k - 1.0) if pacer else None
        yield now, recorder.tick(now, target_ops_per_s=target, dropped=dropped_since(pacer, recorder))
    stop.wait(timeout=max(0.0, end - time.perf_counter()))


def final_tick(ctx: CellContext, recorder: Recorder) -> list[TimeseriesRow]:
    """Close the phase's last second (after the drain), at the target rate of its start."""
    pacer = ctx.pacer
    target = pacer.target_rate(recorder.interval_start_s) if pacer else None
    return recorder.tick(time.perf_counter(), target_ops_per_s=target, dropped=dropped_since(pacer, recorder))


def freeze_heap() -> tuple[int, int, int]:
    """Before a measured phase: move every object alive now (imports, clients, preload
    leftovers) out of the garbage collector's view, so the phase's collections scan only
    what the phase allocates. keyramp's process holds more long-lived objects than a
    plain Locust User's, and full collections over them showed up as CPU per operation:
    A/B on Datastore inserts, keyramp ÷ plain Locust ×0.90 → ×0.96 (bench/bench_overhead.py).

    The young generation's threshold rises to ``PHASE_GC_THRESHOLD`` for the phase: the
    operations in flight (their calls, tasks, greenlet frames) kept tripping CPython's 700
    (50-90 collections a second at 4,000 ops/s, none of which found garbage: ~2 % of a
    ``grpc`` driver's CPU per operation). Returns the thresholds to restore (``thaw_heap``)."""
    gc.collect()
    gc.freeze()
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], PHASE_GC_THRESHOLD), *before[1:])
    return before


def thaw_heap(thresholds: tuple[int, int, int]) -> None:
    """After the phase: what it held may be collected again, at the thresholds of before."""
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def drain(ctx: CellContext) -> None:
    """Give in-flight operations a moment to finish so they are recorded, not killed."""
    deadline = time.perf_counter() + DRAIN_S
    while ctx.in_flight and time.perf_counter() < deadline:
        gevent.sleep(0.005)
