"""``grpc.aio`` for gevent greenlets: an asyncio event loop run by a greenlet on the hub's thread.

Why: under gevent, every blocking wait of gRPC's synchronous API is handed to gevent's
thread pool (``grpc.experimental.gevent``); that hand-off costs more CPU than the call
itself. ``grpc.aio`` drives all calls from one completion-queue poller and one event loop.
Here that loop runs in a greenlet of its own beside the Locust users, on the hub's thread:

- a user's greenlet starts its call on the loop directly (the loop's task queue; no
  thread hand-off), parks on a ``gevent.hub.Waiter`` and is resumed by a hub callback when
  the call's invocation task finishes;
- when the loop has nothing ready it does not block in ``epoll_wait``: its selector parks
  the loop's greenlet, and the hub resumes it when the loop's epoll descriptor becomes
  readable (a gevent watcher on that descriptor: gRPC's poller thread wrote a completion),
  when a caller queued a call, or when the loop's next timer is due.

No thread hand-off, no GIL ping-pong and no wake-up system call per batch of calls: the
loop, the users, the pacer and the recorder take turns on one thread, as the tasks of a
plain ``grpc.aio`` program do (docs/performance.md, "The driver at Python's limit": 1.12x raw
``grpc.aio``'s CPU per operation, where the loop on a native thread took 1.33x).

Details that make ``grpc.aio`` usable here:

- ``grpc.aio`` starts its completion-queue poller with ``threading.Thread`` on first use,
  which monkey-patching turns into a greenlet that would block the hub forever in a C
  call. The poller is created once per process, in the executor's constructor, with
  gRPC's Cython module seeing a native ``Thread`` and ``socketpair`` (nothing else runs
  meanwhile: no greenlet switch happens during it).
- the loop's selector is the *original* epoll selector, and its self-pipe a plain C socket
  pair (the patched ``socket`` module would put gevent's Python wrappers on it);
- asyncio's running loop (per OS thread, shared by its greenlets) is set only while the
  loop's greenlet runs, or a caller starts a call on it: any other greenlet sees none.

One executor per process (``shared_executor``), owned by the thread that made it (in a
``keyramp run`` the hub's thread; every user is a greenlet there). A call from another OS
thread cannot wait on this hub: ``AioChannel`` gives such threads gRPC's synchronous API
(``owns_thread``), and ``run`` from one takes the thread-safe path.
"""

from __future__ import annotations

import _socket
import asyncio
import collections
import contextlib
import functools
import gc
import os
import threading
import types
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final

import gevent
import gevent.monkey
from gevent.exceptions import BlockingSwitchOutError, InvalidSwitchError
from gevent.hub import Waiter
from greenlet import getcurrent as _getcurrent
from greenlet import greenlet as RawGreenlet
from grpc._cython import cygrpc

from keyramp.backends._aio_loop import HubSelector, Loop

try:  # private grpc API: the fast unary path needs it, and falls back without it
    from grpc.aio import _call as _grpc_aio_call
except ImportError:  # pragma: no cover - a grpc release that moved it
    _grpc_aio_call = None  # type: ignore[assignment]

__all__ = ["AioExecutor", "owns_thread", "shared_executor"]

_start_thread: Final = gevent.monkey.get_original("_thread", "start_new_thread")
_allocate_lock: Final = gevent.monkey.get_original("_thread", "allocate_lock")
_RLock: Final = gevent.monkey.get_original("_thread", "RLock")
_get_ident: Final = gevent.monkey.get_original("_thread", "get_ident")
_sleep: Final = gevent.monkey.get_original("time", "sleep")
_set_running_loop: Final = asyncio._set_running_loop
_switch: Final = RawGreenlet.switch
#: A waiting caller: its greenlet, or None once resumed or gone.
_Slot = list[Any]
#: How long ``close`` waits for the loop to finish its pending work.
_CLOSE_TIMEOUT_S: Final = 5.0


class _NativeThread:
    """What ``grpc.aio``'s poller needs of ``threading.Thread``: start on a real OS thread."""

    def __init__(self, *, target: Callable[[], None], daemon: bool = True, **_: Any) -> None:
        self._target = target

    def start(self) -> None:
        _start_thread(self._target, ())

    def join(self, timeout: float | None = None) -> None:
        _sleep(timeout or 0.2)  # the poller's shutdown loop re-checks its own flag


@contextlib.contextmanager
def _native_threads_for_grpc() -> Iterator[None]:
    saved = cygrpc.threading, cygrpc.socket
    cygrpc.threading = types.SimpleNamespace(Thread=_NativeThread)
    cygrpc.socket = types.SimpleNamespace(socketpair=_socket.socketpair)
    try:
        yield
    finally:
        cygrpc.threading, cygrpc.socket = saved


def _native_behind(lock: Any) -> None:
    """Make ``lock`` (a ``threading._RLock``) use a native re-entrant lock for ``with``,
    ``acquire`` and ``release``: its class becomes one whose methods are that lock's own
    (C methods, no Python frame per call)."""
    native = _RLock()
    lock.__class__ = type("_NativeRLock", (type(lock),), {
        "__enter__": staticmethod(native.__enter__), "__exit__": staticmethod(native.__exit__),
        "acquire": staticmethod(native.acquire), "release": staticmethod(native.release)})


def _native_grpc_locks() -> None:
    """Give gRPC's per-call locks a native lock in a monkey-patched process.

    ``grpc`` was imported after the patching, so its module-level ``threading.RLock()`` are
    gevent's pure-Python ones: every ``grpc.aio`` call takes ``_observability``'s plugin lock
    and the aio state's lock twice (refcounts on a call's creation and release), ~1.7 µs a
    time here against ~0.4 natively (docs/performance.md). Each is held only inside those
    functions, which never switch greenlets, so a native lock (owned by the thread, shared
    by its greenlets) guards them alike. A lock that is not the expected type is left as is.
    """
    if not gevent.monkey.is_module_patched("threading"):
        return
    import grpc._observability as observability  # deferred: start-up cost (grpc)

    if type(observability._plugin_lock) is threading._RLock:
        observability._plugin_lock = _RLock()
    for state in (o for o in gc.get_objects() if type(o).__name__ == "_AioState"):
        for lock in gc.get_referents(state):
            if type(lock) is threading._RLock and getattr(lock, "_count", None) == 0:  # not held now
                _native_behind(lock)


class AioExecutor:
    """Runs ``grpc.aio`` calls and coroutines on a loop in a greenlet; a caller waits on the hub."""

    def __init__(self) -> None:
        self._hub = gevent.get_hub()
        self._thread = _get_ident()
        self._selector = HubSelector(self._hub, self._park, self._resume, self._start_queued)
        self.loop: asyncio.AbstractEventLoop = Loop(self._selector)
        self.closed = False
        self._failed: BaseException | None = None
        self._parked = True  # not started yet: the first resume starts it
        self._kicked = False  # a resume is queued on the hub
        self._closing: Waiter[None] | None = None
        #: Unary calls callers queued: (stub, request, timeout, metadata, the caller's slot).
        self._queued: collections.deque[tuple[Any, Any, float, Any, _Slot]] = collections.deque()
        #: Finished calls, delivered to their callers by one hub callback a turn of the loop.
        self._done: collections.deque[tuple[_Slot, bool, Any]] = collections.deque()
        self._delivering = False
        _set_running_loop(self.loop)  # gRPC binds its poller to the loop it sees running
        try:
            with _native_threads_for_grpc():
                cygrpc.init_grpc_aio()
        finally:
            _set_running_loop(None)
        _native_grpc_locks()
        self._greenlet = RawGreenlet(self._main, parent=self._hub)
        self._kick()

    # -- the loop's greenlet ----------------------------------------------------------------
    def _main(self) -> None:
        try:  # run_forever marks the loop running; ``_park`` clears that whenever the loop waits
            self.loop.run_forever()
        except BaseException as exc:  # noqa: BLE001 - later calls raise it
            self._failed = exc
        finally:
            _set_running_loop(None)
            self.loop.close()  # closes the selector: its watchers stop
            if self._closing is not None:
                self._hub.loop.run_callback(self._closing.switch, None)

    def _park(self, timeout: float | None) -> None:
        """Nothing to do: let the hub run until a descriptor, a caller or a timer resumes the loop."""
        timer = None
        if timeout is not None:
            timer = self._hub.loop.timer(max(timeout, 0.0))
            timer.start(self._resume)
        _set_running_loop(None)
        self._parked = True
        try:
            _switch(self._hub)  # not Hub.switch: it looks up a ``switch_out`` this greenlet lacks
        finally:
            self._parked = False
            _set_running_loop(self.loop)
            if timer is not None:
                timer.close()

    # -- the hub ----------------------------------------------------------------------------
    def _resume(self) -> None:
        if self._parked and (self._greenlet or not self.closed):  # never start a closed loop
            self._parked = False
            self._greenlet.switch()

    def _resume_kicked(self) -> None:
        self._kicked = False
        self._resume()

    def _kick(self) -> None:
        """Resume the loop once the hub runs (after the greenlets ahead of it queued their calls)."""
        if self._parked and not self._kicked:
            self._kicked = True
            self._hub.loop.run_callback(self._resume_kicked)

    # -- callers ----------------------------------------------------------------------------
    def _check(self) -> None:
        if self.closed or self._failed is not None:
            raise RuntimeError("the grpc.aio executor is closed") from self._failed

    def _wait(self, slot: _Slot) -> Any:
        """Park the calling greenlet (its ``slot``) until ``_deliver`` resumes it with the outcome.

        A raw switch to the hub, as ``gevent.hub.Waiter.get`` makes, without a ``Waiter`` per
        call. A greenlet killed (or timed out) meanwhile empties its slot: its call's outcome
        is then dropped, never switched into whatever that greenlet waits on next.
        """
        if slot[0] is self._hub:
            raise BlockingSwitchOutError("a grpc.aio call cannot wait in the hub")
        self._kick()
        try:
            outcome = _switch(self._hub)
        except BaseException:
            slot[0] = None
            raise
        if type(outcome) is not tuple or len(outcome) != 2:
            slot[0] = None
            raise InvalidSwitchError(f"invalid switch into a grpc.aio caller: {outcome!r}")
        ok, value = outcome
        if ok:
            return value
        raise value

    def _finish(self, slot: _Slot, ok: bool, value: Any) -> None:
        self._done.append((slot, ok, value))
        if not self._delivering:
            self._delivering = True
            self._hub.loop.run_callback(self._deliver)

    def _deliver(self) -> None:
        """Resume the callers of the calls that finished (the hub)."""
        self._delivering = False
        done = self._done
        while done:
            slot, ok, value = done.popleft()
            caller = slot[0]
            if caller is not None:
                slot[0] = None
                caller.switch((ok, value))

    async def _settle(self, awaitable: Awaitable[Any], slot: _Slot) -> None:
        try:
            value = await awaitable
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to its caller
            self._finish(slot, False, exc)
        else:
            self._finish(slot, True, value)

    def run(self, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable`` on the loop; return its result or raise its error.

        On the executor's thread only the calling greenlet waits (the hub runs on); from
        another OS thread, the caller blocks until the owner thread's hub runs the loop.
        """
        self._check()
        if _get_ident() != self._thread:
            return asyncio.run_coroutine_threadsafe(_wrap(awaitable), self.loop).result()
        slot: _Slot = [_getcurrent()]
        self.loop.create_task(self._settle(awaitable, slot))
        return self._wait(slot)

    def unary(self, stub: Any, request: Any, timeout: float, metadata: Any) -> Any:
        """One unary ``grpc.aio`` call from a greenlet of the executor's thread: its response,
        or its ``AioRpcError``.

        The loop's greenlet starts the queued calls when it next runs (asyncio's running loop
        is set then, as gRPC requires: setting it costs a ``getpid`` call, once a turn of the
        loop, not per call) and resumes each caller from its invocation task's done callback:
        no coroutine and task of our own per call.
        """
        if not _FAST_UNARY:
            return self.run(_await_unary(stub, request, timeout, metadata))
        slot: _Slot = [_getcurrent()]
        self._queued.append((stub, request, timeout, metadata, slot))
        return self._wait(slot)

    def _start_queued(self) -> bool:
        """Start the queued calls (the loop's greenlet); whether there were any."""
        queued = self._queued
        if not queued:
            return False
        done = self._unary_done
        while queued:
            stub, request, timeout, metadata, slot = queued.popleft()
            try:
                call = stub(request, timeout=timeout, metadata=metadata)
            except BaseException as exc:  # noqa: BLE001 - goes back to its caller
                self._finish(slot, False, exc)
                continue
            call._call_response.add_done_callback(functools.partial(done, call, slot))
        return True

    def _unary_done(self, call: Any, slot: _Slot, task: asyncio.Future[Any]) -> None:
        """What ``await call`` would return or raise, read from the finished invocation task."""
        try:
            response = task.result()
        except BaseException as exc:  # noqa: BLE001 - cancelled
            self._finish(slot, False, exc)
            return
        if response is _EOF:  # the RPC ended with a non-OK status
            assert _rpc_error is not None  # this path runs only when the internals were found
            cython_call = call._cython_call
            self._finish(slot, False, _rpc_error(cython_call._initial_metadata, cython_call._status))
        else:
            self._finish(slot, True, response)

    def close(self) -> None:
        """Stop the loop (pending calls are abandoned); the executor is unusable after."""
        if self.closed:
            return
        self.closed = True
        if self._greenlet.dead or not self._greenlet:
            self._selector.close()
            return
        if _get_ident() != self._thread:
            self.loop.call_soon_threadsafe(self.loop.stop)
            return
        self._closing = Waiter(self._hub)
        self.loop.call_soon(self.loop.stop)
        self._kick()
        with contextlib.suppress(gevent.Timeout), gevent.Timeout(_CLOSE_TIMEOUT_S):
            self._closing.get()


async def _wrap(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def _await_unary(stub: Any, request: Any, timeout: float, metadata: Any) -> Any:
    return await stub(request, timeout=timeout, metadata=metadata)


def _unary_internals() -> tuple[Any, Any] | None:
    """``grpc.aio``'s end-of-call marker and error factory (private; ``None`` if they moved:
    ``unary`` then awaits each call in a coroutine, which costs a little more)."""
    call = _grpc_aio_call
    if call is None or not hasattr(call.UnaryUnaryCall, "_invoke") or not callable(
            getattr(call, "_create_rpc_error", None)) or not hasattr(cygrpc, "EOF"):
        return None
    return cygrpc.EOF, call._create_rpc_error


_INTERNALS: Final = _unary_internals()
_FAST_UNARY: Final = _INTERNALS is not None
_EOF, _rpc_error = _INTERNALS if _INTERNALS is not None else (None, None)


class _Shared:
    """The process's executor, created on first use by the thread that will own it; a forked
    child makes its own."""

    def __init__(self) -> None:
        self.pid = -1
        self.executor: AioExecutor | None = None
        self.lock = _allocate_lock()

    def current(self) -> AioExecutor | None:
        executor = self.executor
        if executor is None or self.pid != os.getpid() or executor.closed:
            return None
        return executor

    def get(self) -> AioExecutor:
        with self.lock:
            executor = self.current()
            if executor is None:
                executor = self.executor = AioExecutor()
                self.pid = os.getpid()
            return executor


_SHARED: Final = _Shared()


def shared_executor() -> AioExecutor:
    """The process-wide executor (its loop starts on the first call, owned by the calling thread)."""
    return _SHARED.get()


def owns_thread() -> bool:
    """Whether calls from this OS thread can use the shared executor: it belongs to this
    thread, or there is none yet (this thread's first call makes it)."""
    executor = _SHARED.current()
    return executor is None or executor._thread == _get_ident()
