"""The Locust user that drives one backend, and the per-cell context its users share.

The same class serves ``keyramp run`` (open model: a shared ``Pacer`` hands out
intended start times) and plain ``locust -f locustfiles/…`` (closed model). Either way the
``Recorder`` measures every operation once; Locust's own statistics are fed from it once
a second (``_locust_stats``), never per request.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import gevent
from gevent.event import Event
from locust import User, constant, task
from locust.user.users import LOCUST_STATE_STOPPING

from keyramp.backends import Backend, Capture, Target
from keyramp.run._exceptions import WarmupTally
from keyramp.run._pacer import Pacer
from keyramp.run._recorder import Recorder
from keyramp.workload import CellWorkload, UserOps

__all__ = ["CellContext", "KeyrampUser", "user_class_for"]

#: How long a user waits once its phase is over (the runner kills it well before).
_PARK_S = 3600.0
#: Operations in a row before a user yields to the hub even if none of them waited.
_YIELD_EVERY = 16


@dataclass(kw_only=True)
class CellContext:
    """What all users of one cell in one process share."""

    workload: CellWorkload
    backend_class: type[Backend]
    target: Target
    recorder: Recorder | None = None
    #: Set by the runner when the measured phase starts; ``None`` = closed model.
    pacer: Pacer | None = None
    open_model: bool = True
    phase_started: Event = field(default_factory=Event)
    phase_ended: Event = field(default_factory=Event)
    users_ready: int = 0
    in_flight: int = 0
    #: Seconds each user waits between unmeasured warm-up operations; ``None`` = no warm-up.
    warmup_interval: float | None = None
    #: Service times (s) of warm-up operations, for the runner to see when the store has settled.
    warmup_latencies: list[float] = field(default_factory=list)
    #: Warm-up operations so far and the workload's own exceptions among them: a workload
    #: that fails every one stops before its measured phase.
    warmup: WarmupTally = field(default_factory=WarmupTally)
    user_errors: list[BaseException] = field(default_factory=list)
    _user_seq: Any = field(default_factory=itertools.count)

    def next_user_index(self) -> int:
        return next(self._user_seq)


class KeyrampUser(User):
    """Performs one operation per task iteration; never measures (the recorder does)."""

    abstract = True
    wait_time = constant(0)
    # Shadows locust's ``User.context()`` request-context hook, which only its HTTP clients call.
    context: ClassVar[CellContext]  # type: ignore[assignment]

    def on_start(self) -> None:
        ctx = self.context
        # A Python workload's client reports the requests its own code sends (what the store sees: the
        # keys, kinds and index entries the recorder samples); keyramp's built-in ops return their keys.
        target = ctx.target
        self._capture = Capture() if ctx.workload.user_spec else None
        if self._capture is not None:
            target = dataclasses.replace(target, capture=self._capture)
        # One client per user, created here (after any fork): each owns its gRPC channel.
        try:
            self.backend = ctx.backend_class(target)
        except Exception as exc:
            ctx.user_errors.append(exc)
            raise
        self.ops = UserOps(ctx.workload, self.backend, user_index=ctx.next_user_index(), caller=self)
        # One throw-away read opens the channel, so connection set-up is not measured.
        try:
            self.backend.read("keyramp-warmup")
        except Exception:  # noqa: BLE001 - the measured phase will show a broken store; nothing to do here
            pass
        ctx.users_ready += 1

    def on_stop(self) -> None:
        backend = getattr(self, "backend", None)
        if backend is not None:
            backend.close()

    @task
    def operate(self) -> None:
        """The measured phase's operations, one after another, until the phase ends (then the
        user parks) or Locust stops this user gracefully (between two operations).

        One task call runs them all: Locust's own task loop would add a hub round trip (its
        ``wait``) and its bookkeeping to every operation (docs/performance.md, "the driver at
        Python's limit"). An operation that did not wait on anything (it failed at once, or a
        Python workload's op does no I/O) would starve the hub: after a failure and every
        ``_YIELD_EVERY`` operations the user yields, as Locust's loop would.
        """
        ctx = self.context
        if not ctx.phase_started.is_set():
            if ctx.warmup_interval is None:
                ctx.phase_started.wait()
            else:
                self._warm_up(ctx.warmup_interval)
                return
        recorder = cast(Recorder, ctx.recorder)
        record, run, choose, rng = recorder.record, self.ops.run, ctx.workload.choose_op, self.ops.rng
        clock, open_model, phase_ended = time.perf_counter, ctx.open_model, ctx.phase_ended
        capture = self._capture  # a Python workload's official client's requests (forecast/_recorded)
        done = 0
        while self._state != LOCUST_STATE_STOPPING:
            if open_model:
                pacer = ctx.pacer
                slot = pacer.next_slot() if pacer is not None else None
                if slot is None:
                    break
                intended = slot
                delay = intended - clock()
                if delay > 0:
                    gevent.sleep(delay)
            elif phase_ended.is_set():
                break
            op = choose(rng)
            started = clock()
            if not open_model:
                intended = started  # closed model: no queueing delay
            if capture is not None:
                capture.take()  # what this user sent before (its warm-up, its first read) is not this op's
            ctx.in_flight += 1
            try:
                key, error = run(op), None
            except Exception as exc:  # noqa: BLE001 - every failure is data for the recorder
                key, error = None, exc
            finally:
                ctx.in_flight -= 1
            ended = clock()
            record(op, key, intended, started, ended, error, None if capture is None else capture.take())
            done += 1
            if error is not None or not done % _YIELD_EVERY:
                gevent.sleep(0)
        else:
            return  # stopping: Locust's own loop ends the user
        self._park()

    def _warm_up(self, interval: float) -> None:
        """One unmeasured operation (JIT, connection pools, caches), then a pause."""
        ctx = self.context
        started = time.perf_counter()
        op = ctx.workload.choose_op(self.ops.rng)
        try:
            self.ops.run(op)
        except Exception as exc:  # noqa: BLE001 - the measured phase shows what is wrong (or fail fast)
            ctx.warmup.failed(op, exc, python_workload=bool(ctx.workload.user_spec))
        else:
            ctx.warmup.ops += 1
            ctx.warmup_latencies.append(time.perf_counter() - started)
        gevent.sleep(interval)

    def _park(self) -> None:
        """The phase is over: block until the runner stops this user.

        Returning at once would make Locust call the task again with ``wait_time`` 0, and a
        few such spinning users starve the hub's timers, including the runner's own.
        """
        gevent.sleep(_PARK_S)


def user_class_for(context: CellContext, *, name: str | None = None) -> type[KeyrampUser]:
    """A concrete user class bound to ``context`` (Locust instantiates classes, not objects).

    For a Python workload the class derives from the workload's own class first, so its
    ``on_start`` chains (``super()``) into ``KeyrampUser.on_start`` and its ops see the
    client; the only task is ``operate`` (pacer + recorder), never the plain-Locust wrappers.
    """
    own = context.workload.user_class
    cls_name = name or (
        own.__name__ if own is not None else f"{context.backend_class.__name__.removesuffix('Backend')}User"
    )
    if own is None:
        return type(cls_name, (KeyrampUser,), {"context": context, "abstract": False})
    cls = cast(
        type[KeyrampUser],
        type(cls_name, (own, KeyrampUser), {"context": context, "abstract": False, "wait_time": constant(0)}),
    )
    cls.tasks = [KeyrampUser.operate]
    return cls
