"""One client connection of the store proxy, at the level of HTTP/2 frames (RFC 9113).

Each client connection gets its own connection to the emulator, so every frame passes through
with its stream id, flags and bytes unchanged, and the two HPACK contexts stay the client's and
the emulator's own. The proxy reads, and never rewrites:

* each request's ``HEADERS`` (mirroring the emulator's HPACK table: ``_hpack.HeaderReader``) for
  its ``:path`` and ``grpc-timeout``;
* the ``DATA`` of a request the store model decides on: those frames are held, the gRPC message
  they carry is decoded from a copy and offered to the model, and then the same frames go on, at
  once or after the model's delay, or the request is answered here.

A request answered here (throttled) never reaches the emulator: its ``HEADERS`` have gone ahead
(the emulator's HPACK table needs them), so the stream is cancelled upstream with
``RST_STREAM`` before any of its data, the client gets a trailers-only response with the store's
status (a ``HEADERS`` frame whose fields are literals outside the HPACK table, so the client's
table is untouched), and a connection ``WINDOW_UPDATE`` gives back the flow-control credit of the
data it sent. Frames are written only whole, so an injected frame always falls between frames.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Final

from keyramp.backends._fidelity import Rpc, Throttle
from keyramp.targets._hpack import HeaderReader, HpackError

if TYPE_CHECKING:
    from keyramp.targets._proxy import StoreProxy
    from keyramp.targets._proxy_stats import MethodCounts

__all__ = ["MIN_DELAY_S", "PREFACE", "H2Session", "trailers_only"]

PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _RST_STREAM, _WINDOW_UPDATE, _CONTINUATION = 0x0, 0x1, 0x3, 0x8, 0x9
_END_STREAM, _END_HEADERS, _PADDED, _PRIORITY = 0x1, 0x4, 0x8, 0x20
_CANCEL: Final = (0x8).to_bytes(4, "big")
_STATUS_NUMBER: Final = {"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
                         "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
                         "FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12,
                         "INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16}
_TIMEOUT_UNITS: Final = {ord("H"): 3600.0, ord("M"): 60.0, ord("S"): 1.0, ord("m"): 1e-3, ord("u"): 1e-6,
                         ord("n"): 1e-9}
#: Streams answered here whose late upstream frames are dropped: the most recent this many.
_ANSWERED_KEPT: Final = 4096
#: An admitted request's modelled delay shorter than this is not slept: it is below the event
#: loop's own scheduling latency, and a timer per request would cost more than it models.
MIN_DELAY_S: Final = 0.0005
#: A request larger than this is not held for the model: its data is forwarded as it comes (held
#: data is not acknowledged by the emulator, so past the stream's flow-control window it would stall).
_HOLD_MAX: Final = 32 * 1024


def _frame(ftype: int, flags: int, sid: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes((ftype, flags)) + sid.to_bytes(4, "big") + payload


def _hpack_string(value: bytes) -> bytes:
    n = len(value)
    if n < 127:
        return bytes((n,)) + value
    out, n = bytearray((127,)), n - 127
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out) + bytes((n,)) + value


def trailers_only(sid: int, answer: Throttle) -> bytes:
    """A gRPC trailers-only response with ``answer``'s status: ``:status 200`` (static index 8),
    then content-type, grpc-status and grpc-message as literals without indexing."""
    message = answer.message.replace("%", "%25").encode("ascii", "replace")
    block = (b"\x88" + b"\x0f\x10" + _hpack_string(b"application/grpc")
             + b"\x00" + _hpack_string(b"grpc-status") + _hpack_string(str(_STATUS_NUMBER[answer.code]).encode())
             + b"\x00" + _hpack_string(b"grpc-message") + _hpack_string(message))
    return _frame(_HEADERS, _END_STREAM | _END_HEADERS, sid, block)


def _timeout_s(value: bytes | None) -> float | None:
    if not value or value[-1] not in _TIMEOUT_UNITS:
        return None
    try:
        return int(value[:-1]) * _TIMEOUT_UNITS[value[-1]]
    except ValueError:
        return None


class _Held:
    """A request whose data waits for the model's decision (and then, perhaps, its delay)."""

    __slots__ = ("cancelled", "counts", "data_bytes", "deadline", "frames", "message", "rpc", "sid")

    def __init__(self, sid: int, rpc: Rpc, counts: MethodCounts, deadline: float | None) -> None:
        self.sid, self.rpc, self.counts, self.deadline = sid, rpc, counts, deadline
        self.frames: list[bytes] = []
        self.message = bytearray()
        self.data_bytes = 0  # flow-controlled bytes (the DATA payloads, padding included)
        self.cancelled = False


class H2Session:
    """Frames of one client connection, both ways; ``client`` and ``upstream`` are transports."""

    def __init__(self, proxy: StoreProxy, client: asyncio.Transport) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream: asyncio.Transport | None = None
        self._pending: list[bytes] = []  # for the emulator, until its connection is made
        self._reader = HeaderReader()
        self._c2u = bytearray()
        self._u2c = bytearray()
        self._preface = len(PREFACE)
        self._block: bytearray | None = None
        self._block_sid = 0
        self._block_end = False
        self._held: dict[int, _Held] = {}
        self._answered: dict[int, None] = {}
        #: Header blocks could not be followed: everything is forwarded unmodelled from here on.
        self._blind = False

    # -- to the emulator ---------------------------------------------------------------------
    def connected(self, upstream: asyncio.Transport) -> None:
        self.upstream = upstream
        if self._pending:
            upstream.writelines(self._pending)
            self._pending = []

    def _send_up(self, chunks: list[bytes]) -> None:
        if not chunks:
            return
        if self.upstream is None:
            self._pending.extend(chunks)
        else:
            self.upstream.writelines(chunks)

    def from_client(self, data: bytes) -> None:
        buf = self._c2u
        buf += data
        pos = run = 0
        if self._preface:
            pos = min(self._preface, len(buf))
            self._preface -= pos
        n = len(buf)
        out: list[bytes] = []
        while n - pos >= 9:
            end = pos + 9 + int.from_bytes(buf[pos:pos + 3], "big")
            if end > n:
                break
            ftype, flags = buf[pos + 3], buf[pos + 4]
            sid = int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF
            if ftype == _DATA:
                held = self._held.get(sid)
                if held is not None:
                    if pos > run:
                        out.append(bytes(buf[run:pos]))
                    run = end
                    self._take(held, buf, pos, end, flags)
                    if flags & _END_STREAM:
                        self._decide(held, out)
                    elif held.data_bytes > _HOLD_MAX:  # too large to hold: forwarded, not modelled
                        del self._held[sid]
                        held.counts.not_modelled += 1
                        out.extend(held.frames)
            elif ftype in (_HEADERS, _CONTINUATION):
                self._headers(buf, pos, end, ftype, flags, sid)
            elif ftype == _RST_STREAM:
                self._cancelled(sid)
            pos = end
        if pos > run:
            out.append(bytes(buf[run:pos]))
        del buf[:pos]
        self._send_up(out)

    @staticmethod
    def _take(held: _Held, buf: bytearray, pos: int, end: int, flags: int) -> None:
        held.frames.append(bytes(buf[pos:end]))
        held.data_bytes += end - pos - 9
        start, stop = pos + 9, end
        if flags & _PADDED:
            start, stop = start + 1, stop - buf[pos + 9]
        held.message += buf[start:stop]

    def _headers(self, buf: bytearray, pos: int, end: int, ftype: int, flags: int, sid: int) -> None:
        if self._blind:
            return
        if ftype == _HEADERS:
            start, stop = pos + 9, end
            if flags & _PADDED:
                start, stop = start + 1, stop - buf[pos + 9]
            if flags & _PRIORITY:
                start += 5
            self._block, self._block_sid, self._block_end = bytearray(buf[start:stop]), sid, bool(flags & _END_STREAM)
        elif self._block is not None:
            self._block += buf[pos + 9:end]
        if not flags & _END_HEADERS or self._block is None:
            return
        block, self._block = self._block, None
        try:
            path, timeout = self._reader.read(bytes(block))
        except HpackError:
            self._blind = True
            return
        if path is not None:
            self._opened(self._block_sid, path.decode("latin-1"), _timeout_s(timeout), self._block_end)

    def _opened(self, sid: int, path: str, timeout: float | None, ended: bool) -> None:
        rpc, counts = self.proxy.route(path)
        counts.requests += 1
        if rpc.decode is None or rpc.request_stream or self.proxy.model is None or ended:
            counts.not_modelled += 1
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        self._held[sid] = _Held(sid, rpc, counts, deadline)

    def _cancelled(self, sid: int) -> None:
        held = self._held.pop(sid, None)
        if held is not None:
            held.cancelled = True
            self._give_back(held)

    def _give_back(self, held: _Held) -> None:
        if held.data_bytes:
            self.client.write(_frame(_WINDOW_UPDATE, 0, 0, held.data_bytes.to_bytes(4, "big")))

    def _decide(self, held: _Held, out: list[bytes]) -> None:
        message = held.message
        body = None
        if len(message) >= 5 and message[0] == 0 and int.from_bytes(message[1:5], "big") == len(message) - 5:
            body = bytes(message[5:])
        decision = self.proxy.offer(held.rpc.decode, body, held.counts)
        if decision is None or (decision.admitted and decision.delay_s < MIN_DELAY_S):
            del self._held[held.sid]
            out.extend(held.frames)
            return
        wait, answer = self.proxy.hold(decision, held.counts, held.deadline)
        if wait > 0:
            asyncio.get_running_loop().call_later(wait, self._release, held, answer)
        else:
            self._release(held, answer)

    def _release(self, held: _Held, answer: Throttle | None) -> None:
        if held.cancelled or self._held.pop(held.sid, None) is None:
            return
        if answer is None:
            self._send_up(held.frames)
            return
        self._send_up([_frame(_RST_STREAM, 0, held.sid, _CANCEL)])
        self._answered[held.sid] = None
        if len(self._answered) > _ANSWERED_KEPT:
            del self._answered[next(iter(self._answered))]
        self.client.write(trailers_only(held.sid, answer))
        self._give_back(held)

    # -- to the client -----------------------------------------------------------------------
    def from_upstream(self, data: bytes) -> None:
        buf = self._u2c
        buf += data
        pos = run = 0
        n = len(buf)
        answered = self._answered
        out: list[bytes] = []
        while n - pos >= 9:
            end = pos + 9 + int.from_bytes(buf[pos:pos + 3], "big")
            if end > n:
                break
            if answered:
                sid = int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF
                # a stream answered here: its late frames are dropped, except header blocks (HPACK state)
                if sid in answered and buf[pos + 3] not in (_HEADERS, _CONTINUATION):
                    if pos > run:
                        out.append(bytes(buf[run:pos]))
                    run = end
                    if buf[pos + 3] == _RST_STREAM:
                        del answered[sid]
            pos = end
        if pos > run:
            out.append(bytes(buf[run:pos]))
        del buf[:pos]
        if out:
            self.client.writelines(out)

    def close(self) -> None:
        for held in self._held.values():
            held.cancelled = True
        self._held.clear()

