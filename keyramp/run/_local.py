"""Users in this process: a Locust ``LocalRunner`` for one cell (the ``CellLoad`` of a
single-process run)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from typing import Any

import gevent
from gevent.event import Event
from locust.env import Environment
from locust.event import Events

from keyramp.run._cpu import CpuMeter, CpuSample, load_cpu_summary
from keyramp.run._exceptions import WarmupFailure
from keyramp.run._pacer import Pacer
from keyramp.run._phases import DRAIN_S, drain, final_tick, freeze_heap, tick_phase
from keyramp.run._recorder import TimeseriesRow
from keyramp.run._user import CellContext, user_class_for

__all__ = ["LocalLoad", "stop_runner"]


def stop_runner(runner: Any, *, grace_s: float = DRAIN_S + 3.0) -> None:
    """``runner.quit()``, bounded: a user stuck in a client call that swallows the kill
    (e.g. a Firestore transaction rolling back under a held lock) must not hold the run."""
    stopper = gevent.spawn(runner.quit)
    stopper.join(timeout=grace_s)
    if not stopper.dead:
        runner.user_greenlets.kill(block=False)
        stopper.kill(block=False)


class LocalLoad:
    """One cell's users in this process, sharing one ``CellContext``."""

    def __init__(self, ctx: CellContext, *, rate: Callable[[float], float], duration_s: float, time_scale: float,
                 drop_after_s: float) -> None:
        self.ctx = ctx
        #: The schedule's target rate at schedule time t (ops/s).
        self.rate = rate
        self.duration_s = duration_s
        self.time_scale = time_scale
        self.drop_after_s = drop_after_s
        self.environment = Environment(user_classes=[user_class_for(ctx)], events=Events(),
                                       host=f"emulator://{ctx.target.endpoint}")
        self.runner = self.environment.create_local_runner()
        self._start = 0.0
        self._warmup_inserts: int | None = None
        self._cpu: CpuMeter | None = None
        #: This process's CPU over the measured phase so far, updated each second.
        self._cpu_used: CpuSample | None = None

    def connect(self) -> int:
        return 1

    def spawn(self, users: int, *, warmup_interval: float | None) -> None:
        self.ctx.warmup_interval = warmup_interval
        # Locust warns above 100 users/s; 50 users connect within a second anyway.
        self.runner.start(users, spawn_rate=min(max(users, 1) * 10, 100))

    def ready(self) -> int:
        return self.ctx.users_ready

    def problem(self) -> str | None:
        errors = self.ctx.user_errors
        return f"could not create a client: {errors[0]}" if errors else None

    def warmup_failure(self) -> WarmupFailure | None:
        return self.ctx.warmup.failure()

    def take_warmup_latencies(self) -> list[float]:
        taken, self.ctx.warmup_latencies = self.ctx.warmup_latencies, []
        return taken

    def start(self) -> float:
        ctx = self.ctx
        ctx.warmup_interval = None  # warming users now wait for the phase
        self._warmup_inserts = ctx.workload.inserted
        freeze_heap()
        start = self._start = time.perf_counter()
        self._cpu = CpuMeter()
        assert ctx.recorder is not None
        ctx.recorder.begin(start, duration_s=self.duration_s)
        if ctx.open_model:
            ctx.pacer = Pacer(rate=self.rate, start=start, duration_s=self.duration_s, time_scale=self.time_scale,
                              drop_after_s=self.drop_after_s)
        ctx.phase_started.set()
        return start

    def seconds(self, stop: Event) -> Iterator[tuple[float, list[TimeseriesRow]]]:
        assert self.ctx.recorder is not None
        for now, rows in tick_phase(self.ctx, self.ctx.recorder, start=self._start, duration_s=self.duration_s,
                                    stop=stop):
            if self._cpu is not None:
                self._cpu_used = self._cpu.sample()
            yield now - self._start, rows

    def worker_meta(self) -> None:
        return None

    def warmup_inserts(self) -> int | None:
        return self._warmup_inserts
    def load_cpu(self) -> dict[str, Any] | None:
        return load_cpu_summary([self._cpu_used]) if self._cpu_used else None

    def finish(self, *, measured: bool, aborted: bool) -> None:
        ctx = self.ctx
        ctx.phase_ended.set()
        if measured and not aborted:
            drain(ctx)
        stop_runner(self.runner)
        gc.unfreeze()  # what this cell held (clients, users) may be collected again
        if measured and ctx.recorder is not None:
            final_tick(ctx, ctx.recorder)  # the last second, with what finished during the drain
