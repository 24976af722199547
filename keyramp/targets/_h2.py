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
data it sent.

What keeps the relay faithful (docs/fidelity.md, "How it forwards"):

* Frames are written only whole, in the order they came; a frame the proxy adds never falls
  inside a header block (between a ``HEADERS`` without ``END_HEADERS`` and its last
  ``CONTINUATION``): it waits for the block's end.
* Held data is data the emulator has not acknowledged, so the proxy counts the client's
  connection send window (the emulator's ``WINDOW_UPDATE``\\s and its own, less the client's
  ``DATA``). A request is held only if its whole message fits the stream's window, and held
  requests still incomplete are let go, unmodelled, as soon as the window could not carry the
  rest of them (those that need the most first, until it can): a client never waits on credit
  that only the emulator could give.
* A held request that ends otherwise lets go of its data in order: trailers from the client, the
  emulator answering or resetting the stream first (its data then goes on as it would directly).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Final

from keyramp.backends import Rpc, Throttle
from keyramp.targets._hpack import HeaderReader, HpackError

if TYPE_CHECKING:
    from keyramp.targets._proxy_stats import MethodCounts
    from keyramp.targets._relay import Relay

__all__ = ["HOLD_MAX", "MIN_DELAY_S", "PREFACE", "H2Session", "trailers_only"]



PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _RST_STREAM, _SETTINGS, _WINDOW_UPDATE, _CONTINUATION = 0x0, 0x1, 0x3, 0x4, 0x8, 0x9
_END_STREAM, _ACK, _END_HEADERS, _PADDED, _PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
_INITIAL_WINDOW_SIZE: Final = 0x4  # the SETTINGS parameter
_DEFAULT_WINDOW: Final = 65_535
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
#: A request whose gRPC message (its 5-byte prefix included) is larger than this, or than the
#: stream's flow-control window, is not held for the model: forwarded as it comes, not modelled.
#: 4 MiB is gRPC's default limit on a message.
HOLD_MAX: Final = 4 * 1024 * 1024


def _frame(ftype: int, flags: int, sid: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes((ftype, flags)) + sid.to_bytes(4, "big") + payload


def _window_update(sid: int, increment: int) -> bytes:
    return _frame(_WINDOW_UPDATE, 0, sid, increment.to_bytes(4, "big"))


def _hpack_string(value: bytes) -> bytes:
    n = len(value)
    if n < 127:
        return bytes((n,)) + value
    out, n = bytearray((127,)), n - 127
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out) + bytes((n,)) + value


def trailers_only(sid: int, answer: Throttle, *, after_headers: bool = False) -> bytes:
    """A gRPC trailers-only response with ``answer``'s status: ``:status 200`` (static index 8),
    then content-type, grpc-status and grpc-message as literals without indexing (the client's
    HPACK table is untouched). ``after_headers``: the emulator already sent the response's
    headers, so this is the trailers alone (no ``:status``, no content-type)."""
    message = answer.message.replace("%", "%25").encode("ascii", "replace")
    status = (b"\x00" + _hpack_string(b"grpc-status") + _hpack_string(str(_STATUS_NUMBER[answer.code]).encode())
              + b"\x00" + _hpack_string(b"grpc-message") + _hpack_string(message))
    block = status if after_headers else b"\x88" + b"\x0f\x10" + _hpack_string(b"application/grpc") + status
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

    __slots__ = ("cancelled", "counts", "data_bytes", "deadline", "decided", "frames", "message", "need",
                 "responded", "rpc", "sid")

    def __init__(self, sid: int, rpc: Rpc, counts: MethodCounts, deadline: float | None) -> None:
        self.sid, self.rpc, self.counts, self.deadline = sid, rpc, counts, deadline
        self.frames: list[bytes] = []
        self.message = bytearray()
        self.data_bytes = 0  # flow-controlled bytes (the DATA payloads, padding included)
        #: Message bytes still to come from the client (-1: its 5-byte prefix is not in yet).
        self.need = -1
        self.decided = False
        self.responded = False  # the emulator sent the response's headers
        self.cancelled = False


class H2Session:
    """Frames of one client connection, both ways; ``client`` and ``upstream`` are transports."""

    def __init__(self, proxy: Relay, client: asyncio.Transport) -> None:
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
        #: The client's connection send window as the proxy sees it, and the emulator's initial
        #: stream window (SETTINGS_INITIAL_WINDOW_SIZE).
        self._window = _DEFAULT_WINDOW
        self._stream_window = _DEFAULT_WINDOW
        #: Message bytes the held requests still need from the client: never more than the window.
        self._owed = 0
        #: A header block is open on that leg (no frame may go between its frames), and the
        #: proxy's own frames waiting for its end.
        self._up_open = False
        self._down_open = False
        self._later_up: list[bytes] = []
        self._later_down: list[bytes] = []

    # -- writing -----------------------------------------------------------------------------
    def connected(self, upstream: asyncio.Transport) -> None:
        self.upstream = upstream
        if self._pending:
            upstream.writelines(self._pending)
            self._pending = []

    def _up(self, chunks: list[bytes], out: list[bytes] | None = None) -> None:
        """To the emulator: into ``out`` (the frames being relayed, in order) or, from a timer,
        straight away unless a header block is open."""
        if out is not None:
            out.extend(chunks)
        elif self._up_open:
            self._later_up.extend(chunks)
        else:
            self._send_up(chunks)

    def _send_up(self, chunks: list[bytes]) -> None:
        if self.upstream is None:
            self._pending.extend(chunks)
        else:
            self.upstream.writelines(chunks)

    def _down(self, chunks: list[bytes]) -> None:
        """The proxy's own frames to the client (never from within ``from_upstream``)."""
        if self._down_open:
            self._later_down.extend(chunks)
        else:
            self.client.writelines(chunks)

    # -- from the client ---------------------------------------------------------------------
    def from_client(self, data: bytes) -> None:
        buf = self._c2u
        buf += data
        pos = run = 0
        if self._preface:
            pos = min(self._preface, len(buf))
            self._preface -= pos
        n = len(buf)
        out: list[bytes] = []
        held_map = self._held
        while n - pos >= 9:
            length = int.from_bytes(buf[pos:pos + 3], "big")
            end = pos + 9 + length
            if end > n:
                break
            ftype = buf[pos + 3]
            if ftype == _DATA:
                self._window -= length
                held = held_map.get(int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF) if held_map else None
                if held is not None:
                    if pos > run:
                        out.append(bytes(buf[run:pos]))
                    run = end
                    self._take(held, buf, pos, end, out)
                if self._window < self._owed:
                    self._spill(out)
            elif ftype in (_HEADERS, _CONTINUATION):
                flags, sid = buf[pos + 4], int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF
                if ftype == _HEADERS and sid in held_map:  # trailers: the held data goes first
                    if pos > run:
                        out.append(bytes(buf[run:pos]))
                    run = pos
                    self._let_go(held_map[sid], out)
                self._up_open = not flags & _END_HEADERS
                self._headers(buf, pos, end, ftype, flags, sid)
                if self._later_up and not self._up_open:
                    out.append(bytes(buf[run:end]))
                    run = end
                    out.extend(self._later_up)
                    self._later_up.clear()
            elif ftype == _RST_STREAM and held_map:
                self._cancelled(int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF)
            pos = end
        if pos > run:
            out.append(bytes(buf[run:pos]))
        del buf[:pos]
        if out:
            self._send_up(out)

    def _take(self, held: _Held, buf: bytearray, pos: int, end: int, out: list[bytes]) -> None:
        flags = buf[pos + 4]
        held.frames.append(bytes(buf[pos:end]))
        held.data_bytes += end - pos - 9
        start, stop = pos + 9, end
        if flags & _PADDED:
            start, stop = start + 1, stop - buf[pos + 9]
        got = max(stop - start, 0)
        held.message += buf[start:stop]
        if held.need > 0:
            taken = got if got < held.need else held.need
            held.need -= taken
            self._owed -= taken
        elif held.need < 0 and len(held.message) >= 5 and not self._sized(held, out):
            return
        if flags & _END_STREAM:
            self._owed -= max(held.need, 0)
            held.need = 0
            self._decide(held, out)

    def _sized(self, held: _Held, out: list[bytes]) -> bool:
        """The message's length is known: hold the rest of it, or let it go (compressed, or too
        large for the stream's window); False if let go."""
        message = held.message
        size = 5 + int.from_bytes(message[1:5], "big")
        if message[0] != 0 or size > HOLD_MAX or size > self._stream_window:
            if message[0] != 0:
                held.counts.undecodable += 1
            self._let_go(held, out)
            return False
        held.need = max(size - len(message), 0)
        self._owed += held.need
        return True

    def _let_go(self, held: _Held, out: list[bytes] | None) -> None:
        """Forwards a held request's frames as they came, unmodelled (or, decided, without the
        answer it was waiting for)."""
        held.cancelled = True
        self._held.pop(held.sid, None)
        if held.need > 0:
            self._owed -= held.need
            held.need = 0
        if not held.decided:
            held.counts.not_modelled += 1
        self._up(held.frames, out)

    def _spill(self, out: list[bytes] | None, *, everything: bool = False) -> None:
        """The window could not carry the rest of the incomplete held requests: let go of those
        that need the most until it can (``everything``: all of them)."""
        for held in sorted((h for h in self._held.values() if not h.decided), key=lambda h: h.need, reverse=True):
            if not everything and self._owed <= self._window:
                return
            self._let_go(held, out)

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
        """The client reset a held stream: its data never goes on, and its credit comes back."""
        held = self._held.pop(sid, None)
        if held is not None:
            held.cancelled = True
            if held.need > 0:
                self._owed -= held.need
            self._give_back(held, [])

    def _give_back(self, held: _Held, frames: list[bytes]) -> None:
        if held.data_bytes:
            self._window += held.data_bytes
            frames.append(_window_update(0, held.data_bytes))
        if frames:
            self._down(frames)

    def _decide(self, held: _Held, out: list[bytes]) -> None:
        held.decided = True
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
            self._release(held, answer, out)

    def _release(self, held: _Held, answer: Throttle | None, out: list[bytes] | None = None) -> None:
        if held.cancelled or self._held.pop(held.sid, None) is None:
            return
        if answer is None:
            self._up(held.frames, out)
            return
        self._up([_frame(_RST_STREAM, 0, held.sid, _CANCEL)], out)
        self._answered[held.sid] = None
        if len(self._answered) > _ANSWERED_KEPT:
            del self._answered[next(iter(self._answered))]
        self._give_back(held, [trailers_only(held.sid, answer, after_headers=held.responded)])

    # -- from the emulator -------------------------------------------------------------------
    def from_upstream(self, data: bytes) -> None:
        buf = self._u2c
        buf += data
        pos = run = 0
        n = len(buf)
        out: list[bytes] = []
        while n - pos >= 9:
            end = pos + 9 + int.from_bytes(buf[pos:pos + 3], "big")
            if end > n:
                break
            ftype = buf[pos + 3]
            if ftype in (_HEADERS, _CONTINUATION):
                self._down_open = not buf[pos + 4] & _END_HEADERS
                if ftype == _HEADERS and self._held:
                    self._responding(buf, pos)
                if self._later_down and not self._down_open:
                    out.append(bytes(buf[run:end]))
                    run = end
                    out.extend(self._later_down)
                    self._later_down.clear()
            elif ftype == _WINDOW_UPDATE and not int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF:
                self._window += int.from_bytes(buf[pos + 9:pos + 13], "big") & 0x7FFFFFFF
            elif (self._answered or self._held or ftype == _SETTINGS) and \
                    not self._upstream_frame(buf, pos, end, ftype):
                if pos > run:  # not relayed: a late frame of a stream answered here
                    out.append(bytes(buf[run:pos]))
                run = end
            pos = end
        if pos > run:
            out.append(bytes(buf[run:pos]))
        del buf[:pos]
        if out:
            self.client.writelines(out)

    def _responding(self, buf: bytearray, pos: int) -> None:
        """The emulator's headers on a held stream: noted; with END_STREAM it answered first."""
        held = self._held.get(int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF)
        if held is not None:
            held.responded = True
            if buf[pos + 4] & _END_STREAM:
                self._let_go(held, None)

    def _upstream_frame(self, buf: bytearray, pos: int, end: int, ftype: int) -> bool:
        """The proxy's bookkeeping of an emulator frame; False if it is not relayed (a late frame
        of a stream answered here: its header blocks still go on, for the client's HPACK table)."""
        if ftype == _SETTINGS:
            if not buf[pos + 4] & _ACK:
                self._settings(buf[pos + 9:end])
            return True
        sid = int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF
        if sid in self._answered:
            if ftype == _RST_STREAM:
                del self._answered[sid]
            elif ftype == _DATA and end - pos > 9:  # credit the emulator spent: given back, as the client would
                self._up([_window_update(0, end - pos - 9)])
            return False
        if ftype == _RST_STREAM and sid in self._held:  # the emulator reset it: the data goes on as it would
            self._let_go(self._held[sid], None)
        return True

    def _settings(self, payload: bytes | bytearray) -> None:
        for at in range(0, len(payload) - 5, 6):
            if int.from_bytes(payload[at:at + 2], "big") == _INITIAL_WINDOW_SIZE:
                value = int.from_bytes(payload[at + 2:at + 6], "big")
                shrunk, self._stream_window = value < self._stream_window, value
                if shrunk:  # the held requests' streams lost credit: let the incomplete ones go
                    self._spill(None, everything=True)

    def close(self) -> None:
        for held in self._held.values():
            held.cancelled = True
        self._held.clear()
