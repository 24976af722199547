"""An asyncio event loop on its own OS thread, running ``grpc.aio`` calls for gevent greenlets.

Why: under gevent, every blocking wait of gRPC's synchronous API is handed to gevent's
thread pool (``grpc.experimental.gevent``); that hand-off costs more CPU than the call
itself. ``grpc.aio`` drives all calls from one completion-queue poller and one event
loop. Here that loop runs on a native thread beside the gevent hub: a greenlet puts its
call on a queue, waits on a ``gevent.hub.Waiter``, and the loop thread wakes the hub with
one ``async`` watcher per batch of finished calls. The hub never blocks, so the Locust
users, the pacer and the recorder keep working exactly as with the client driver.

Two details make ``grpc.aio`` usable in a monkey-patched process:

- the loop uses the *original* epoll selector (the patched ``selectors`` would park the
  native thread in a gevent hub that nobody runs);
- ``grpc.aio`` starts its completion-queue poller with ``threading.Thread`` on first use,
  which monkey-patching turns into a greenlet that would block the hub forever in a C
  call. The poller is created once per process, in ``init_grpc_aio``; while that runs
  (the hub thread is blocked on a real lock, so no other Python code runs) gRPC's Cython
  module sees a native ``Thread`` and ``socketpair``.

One executor per process (``shared_executor``): it is a process resource like gRPC's own
poller, not per-user state. Callers on other OS threads (an unpatched process with real
threads) take the thread-safe path (``run_coroutine_threadsafe``).
"""

from __future__ import annotations

import _socket
import asyncio
import collections
import contextlib
import functools
import os
import types
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final

import gevent
import gevent.monkey
from gevent.hub import Waiter
from grpc._cython import cygrpc

__all__ = ["AioExecutor", "shared_executor"]

_start_thread: Final = gevent.monkey.get_original("_thread", "start_new_thread")
_allocate_lock: Final = gevent.monkey.get_original("_thread", "allocate_lock")
_get_ident: Final = gevent.monkey.get_original("_thread", "get_ident")
_sleep: Final = gevent.monkey.get_original("time", "sleep")
_Selector: Final = gevent.monkey.get_original("selectors", "DefaultSelector")
#: How long ``close`` waits for the loop thread to finish its pending work.
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


class _Loop(asyncio.SelectorEventLoop):
    """An event loop whose self-pipe is a plain C socket pair (the patched ``socket`` module
    would put gevent's Python wrappers on every cross-thread wake-up)."""

    def _make_self_pipe(self) -> None:
        self._ssock, self._csock = _socket.socketpair()
        self._ssock.setblocking(False)
        self._csock.setblocking(False)
        # BaseSelectorEventLoop._make_self_pipe's own steps: private, not in typeshed
        self._internal_fds += 1  # type: ignore[attr-defined]
        self._add_reader(self._ssock.fileno(), self._read_from_self)  # type: ignore[attr-defined]


class AioExecutor:
    """Runs coroutines on the loop thread; ``run`` blocks only the calling greenlet."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop
        self._hub = gevent.get_hub()
        self._hub_thread = _get_ident()
        self._done: collections.deque[tuple[Waiter, bool, Any]] = collections.deque()
        #: (start on the loop thread, its arguments, the waiting greenlet's waiter)
        self._queued: collections.deque[tuple[Callable[..., None], tuple[Any, ...], Waiter]] = collections.deque()
        self._wake = self._hub.loop.async_()
        self._wake.start(self._deliver)
        self._failed: BaseException | None = None
        self._flush_pending = False  # hub thread: a loop wake-up is scheduled
        self._wake_pending = False  # loop thread: a hub wake-up is scheduled
        self.closed = False
        ready = _allocate_lock()
        ready.acquire()
        _start_thread(self._main, (ready,))
        ready.acquire()  # a real lock: the hub thread waits, nothing else runs meanwhile
        if self._failed is not None:
            self._wake.stop()
            raise RuntimeError("the grpc.aio loop thread failed to start") from self._failed

    # -- loop thread ------------------------------------------------------------------------
    def _main(self, ready: Any) -> None:
        try:
            loop = _Loop(_Selector())
            asyncio.set_event_loop(loop)
            self.loop = loop
            with _native_threads_for_grpc():
                cygrpc.init_grpc_aio()
        except BaseException as exc:  # noqa: BLE001 - reported to the constructor
            self._failed = exc
            ready.release()
            return
        ready.release()
        try:
            loop.run_forever()
        finally:
            loop.close()

    def _start_queued(self) -> None:
        queued = self._queued
        while queued:
            start, args, waiter = queued.popleft()
            start(*args, waiter)

    def _start_coroutine(self, awaitable: Awaitable[Any], waiter: Waiter) -> None:
        self.loop.create_task(self._settle(awaitable, waiter))

    async def _settle(self, awaitable: Awaitable[Any], waiter: Waiter) -> None:
        try:
            self._finish(waiter, True, await awaitable)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to its caller
            self._finish(waiter, False, exc)

    def _start_unary(self, stub: Any, request: Any, timeout: float, metadata: Any, waiter: Waiter) -> None:
        try:
            call = stub(request, timeout=timeout, metadata=metadata)
        except BaseException as exc:  # noqa: BLE001
            self._finish(waiter, False, exc)
            return
        call._call_response.add_done_callback(functools.partial(self._unary_done, call, waiter))

    def _unary_done(self, call: Any, waiter: Waiter, task: asyncio.Future[Any]) -> None:
        """What ``await call`` would return or raise, read from the finished invocation task."""
        try:
            response = task.result()
        except BaseException as exc:  # noqa: BLE001 - cancelled
            self._finish(waiter, False, exc)
            return
        if response is _EOF:  # the RPC ended with a non-OK status
            assert _rpc_error is not None  # this path runs only when the internals were found
            cython_call = call._cython_call
            self._finish(waiter, False, _rpc_error(cython_call._initial_metadata, cython_call._status))
        else:
            self._finish(waiter, True, response)

    def _finish(self, waiter: Waiter, ok: bool, value: Any) -> None:
        self._done.append((waiter, ok, value))
        if not self._wake_pending:
            # Wake the hub once per loop iteration, after every call that finished in it
            # (the completions of one poll arrive together): fewer cross-thread hand-offs.
            self._wake_pending = True
            self.loop.call_soon(self._wake_hub)

    def _wake_hub(self) -> None:
        self._wake_pending = False
        self._wake.send()  # thread-safe; several sends before the hub runs coalesce

    # -- hub thread -------------------------------------------------------------------------
    def _flush(self) -> None:
        self._flush_pending = False
        self.loop.call_soon_threadsafe(self._start_queued)

    def _deliver(self) -> None:
        done = self._done
        while done:
            waiter, ok, value = done.popleft()
            waiter.switch((ok, value))

    def _wait(self, start: Callable[..., None], args: tuple[Any, ...]) -> Any:
        waiter: Waiter[tuple[bool, Any]] = Waiter()
        self._queued.append((start, args, waiter))
        if not self._flush_pending:
            # One wake-up of the loop thread per hub iteration: the greenlets resumed together
            # by ``_deliver`` queue their next calls first, then the hub runs this callback.
            self._flush_pending = True
            self._hub.loop.run_callback(self._flush)
        ok, value = waiter.get()
        if ok:
            return value
        raise value

    def run(self, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable`` on the loop thread; return its result or raise its error.

        From a greenlet on the hub's thread only this greenlet waits. The awaitable must be
        created lazily by the loop (a coroutine object, not a started gRPC call).
        """
        if _get_ident() != self._hub_thread:
            return asyncio.run_coroutine_threadsafe(_wrap(awaitable), self.loop).result()
        return self._wait(self._start_coroutine, (awaitable,))

    def unary(self, stub: Any, request: Any, timeout: float, metadata: Any) -> Any:
        """One unary ``grpc.aio`` call: its response, or its ``AioRpcError``.

        Started by the loop thread and finished from its invocation task's done callback,
        without a coroutine and task of our own per call (5–7 µs of the loop thread's CPU).
        """
        if not _FAST_UNARY or _get_ident() != self._hub_thread:
            return self.run(_await_unary(stub, request, timeout, metadata))
        return self._wait(self._start_unary, (stub, request, timeout, metadata))

    def close(self) -> None:
        """Stop the loop thread (pending calls are abandoned); the executor is unusable after."""
        if self.closed:
            return
        self.closed = True
        stopped = _allocate_lock()
        stopped.acquire()
        self.loop.call_soon_threadsafe(lambda: (self.loop.stop(), stopped.release()))
        stopped.acquire(timeout=_CLOSE_TIMEOUT_S)
        self._wake.stop()


async def _wrap(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def _await_unary(stub: Any, request: Any, timeout: float, metadata: Any) -> Any:
    return await stub(request, timeout=timeout, metadata=metadata)


def _unary_internals() -> tuple[Any, Any] | None:
    """``grpc.aio``'s end-of-call marker and error factory (private; ``None`` if they moved:
    ``unary`` then awaits each call in a coroutine, which costs a little more)."""
    try:
        from grpc._cython import cygrpc  # guarded: private grpc API (None if it moved)
        from grpc.aio._call import UnaryUnaryCall, _create_rpc_error  # guarded: private grpc API

        if not hasattr(UnaryUnaryCall, "_invoke") or not callable(_create_rpc_error):
            return None
        return cygrpc.EOF, _create_rpc_error
    except (ImportError, AttributeError):
        return None


_INTERNALS: Final = _unary_internals()
_FAST_UNARY: Final = _INTERNALS is not None
_EOF, _rpc_error = _INTERNALS if _INTERNALS is not None else (None, None)


class _Shared:
    """The process's executor, created on first use; a forked child makes its own."""

    def __init__(self) -> None:
        self.pid = -1
        self.executor: AioExecutor | None = None

    def get(self) -> AioExecutor:
        if self.executor is None or self.pid != os.getpid() or self.executor.closed:
            self.executor = AioExecutor()
            self.pid = os.getpid()
        return self.executor


_SHARED: Final = _Shared()


def shared_executor() -> AioExecutor:
    """The process-wide executor (its loop thread starts on the first call)."""
    return _SHARED.get()
