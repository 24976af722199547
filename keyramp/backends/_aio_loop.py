"""The ``grpc.aio`` executor's event loop parts (``keyramp.backends._aio``): a selector the gevent
hub watches, and a loop whose self-pipe is a plain C socket pair.

The loop's greenlet never blocks in an ``epoll_wait`` of its own: ``HubSelector`` keeps one
libev watcher per registered descriptor (the loop's self-pipe, gRPC's completion socket) on the
hub, and a wait parks the loop's greenlet until one fires, a caller queues a call, or the loop's
next timer is due. The hub's one ``epoll_wait`` an iteration serves the loop and the users.
"""

from __future__ import annotations

import _socket
import asyncio
import selectors
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

__all__ = ["HubSelector", "Loop"]

#: Zero-timeout selects in a row (work always ready) before the loop lets the hub poll once.
_BUSY_SELECTS: Final = 64


class Loop(asyncio.SelectorEventLoop):
    """An event loop whose self-pipe is a plain C socket pair (the patched ``socket`` module
    would put gevent's Python wrappers on every cross-thread wake-up)."""

    def _make_self_pipe(self) -> None:
        self._ssock, self._csock = _socket.socketpair()
        self._ssock.setblocking(False)
        self._csock.setblocking(False)
        # BaseSelectorEventLoop._make_self_pipe's own steps: private, not in typeshed
        self._internal_fds += 1  # type: ignore[attr-defined]
        self._add_reader(self._ssock.fileno(), self._read_from_self)  # type: ignore[attr-defined]


class _Keys(Mapping[Any, selectors.SelectorKey]):
    """``get_map()``: file object (or descriptor) -> its key."""

    def __init__(self, keys: dict[int, selectors.SelectorKey]) -> None:
        self._keys = keys

    def __getitem__(self, fileobj: Any) -> selectors.SelectorKey:
        return self._keys[_fd(fileobj)]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def _fd(fileobj: Any) -> int:
    return fileobj if isinstance(fileobj, int) else int(fileobj.fileno())


class HubSelector(selectors.BaseSelector):
    """asyncio's selector, watched by the gevent hub: one libev watcher per registered
    descriptor (the loop's self-pipe, gRPC's completion socket) records what is ready and
    resumes the loop's greenlet; a wait parks that greenlet until then. No epoll of the
    loop's own: the hub's one ``epoll_wait`` an iteration serves the loop and the users."""

    def __init__(self, hub: Any, park: Callable[[float | None], None], resume: Callable[[], None],
                 start_queued: Callable[[], bool]) -> None:
        self._hub_loop = hub.loop
        self._park = park
        self._resume = resume
        self._start_queued = start_queued
        self._keys: dict[int, selectors.SelectorKey] = {}
        self._watchers: dict[int, Any] = {}
        self._ready: dict[int, int] = {}
        self._busy = 0  # zero-timeout selects in a row

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        fd = _fd(fileobj)
        if fd in self._keys:
            raise KeyError(f"{fileobj!r} (fd {fd}) is already registered")
        key = self._keys[fd] = selectors.SelectorKey(fileobj, fd, events, data)
        watcher = self._watchers[fd] = self._hub_loop.io(fd, events)  # libev's READ/WRITE bits are selectors'
        watcher.start(self._fired, fd, pass_events=True)
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        fd = _fd(fileobj)
        key = self._keys.pop(fd)
        self._watchers.pop(fd).close()
        self._ready.pop(fd, None)
        return key

    def _fired(self, events: int, fd: int) -> None:  # the hub
        self._ready[fd] = self._ready.get(fd, 0) | events
        self._resume()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if self._start_queued():  # callers' calls started: their tasks are ready to run
            timeout = 0
        if self._ready:
            self._busy = 0
        elif timeout != 0:
            self._busy = 0
            self._park(timeout)
            self._start_queued()  # what callers queued meanwhile
        else:
            # Work is ready: no wait. A loop that never runs out of work still lets the hub
            # poll the descriptors (and the users run) every ``_BUSY_SELECTS`` iterations.
            self._busy += 1
            if self._busy < _BUSY_SELECTS:
                return []
            self._busy = 0
            self._park(0.0)
            self._start_queued()
        ready, self._ready = self._ready, {}
        keys = self._keys
        return [(keys[fd], events & keys[fd].events) for fd, events in ready.items() if fd in keys]

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return _Keys(self._keys)

    def close(self) -> None:
        for watcher in self._watchers.values():
            watcher.close()
        self._watchers.clear()
        self._keys.clear()
        self._ready.clear()
