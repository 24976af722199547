"""A loopback TCP proxy that adds a fixed delay per direction: a known, real regression.

``compare`` must flag a real slowdown every time (A/B) and stay quiet on repeats (A/A).
The proxy gives the A/B side a slowdown of known size without touching keyramp or the
store: point ``BIGTABLE_EMULATOR_HOST`` (or ``DATASTORE_EMULATOR_HOST`` …) at it and
every request pays ``delay`` on the way in and ``reply_delay`` on the way back.

Bytes pass through unchanged (HTTP/2 frames, gRPC pings and all); each chunk read is
written ``delay`` seconds after it arrived, in order, without holding back the chunks
behind it, so the proxy adds latency but no queueing. It runs in its own process
(``python -m keyramp.targets.netem``) so its event loop never competes with the load
generator's GIL; ``LatencyProxy`` starts it on a free port and stops it by pid.

It lives in the package, not under tests/, because the benches use it too and a user
can run it to check that their own CI gate catches a few milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import threading
from types import TracebackType

__all__ = ["LatencyProxy", "serve"]


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()

    sender = asyncio.create_task(deliver())
    try:
        while chunk := await reader.read(1 << 16):
            queue.put_nowait((loop.time() + delay_s, chunk))
    except OSError:
        pass
    finally:
        queue.put_nowait((0.0, None))
        with contextlib.suppress(OSError, ConnectionError):
            await sender


def _nodelay(writer: asyncio.StreamWriter) -> None:
    # Nagle + delayed ACKs would add up to 40 ms of their own to small gRPC frames.
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def serve(*, target: tuple[str, int], delay_s: float, reply_delay_s: float, listen: tuple[str, int]) -> None:
    """Accept on ``listen`` forever; each connection is piped to ``target`` with the delays."""

    async def handle(c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        _nodelay(c_writer)
        try:
            s_reader, s_writer = await asyncio.open_connection(*target)
        except OSError:
            c_writer.close()
            return
        _nodelay(s_writer)
        try:
            await asyncio.gather(_pump(c_reader, s_writer, delay_s), _pump(s_reader, c_writer, reply_delay_s))
        finally:
            for w in (s_writer, c_writer):
                w.close()

    server = await asyncio.start_server(handle, *listen)
    port = server.sockets[0].getsockname()[1]
    print(f"listening {listen[0]}:{port}", flush=True)
    async with server:
        await server.serve_forever()


class LatencyProxy:
    """``with LatencyProxy("127.0.0.1:8086", delay_ms=2) as proxy: env[...] = proxy.endpoint``.

    Delays are per direction, so a request/response round trip gains
    ``delay_ms + reply_delay_ms`` (``reply_delay_ms`` defaults to ``delay_ms``).
    """

    def __init__(self, target: str, *, delay_ms: float, reply_delay_ms: float | None = None,
                 host: str = "127.0.0.1", start_timeout_s: float = 10.0) -> None:
        self.target = target
        self.delay_ms = delay_ms
        self.reply_delay_ms = delay_ms if reply_delay_ms is None else reply_delay_ms
        self.host = host
        self.start_timeout_s = start_timeout_s
        self.port: int | None = None
        self._proc: subprocess.Popen[str] | None = None

    @property
    def endpoint(self) -> str:
        if self.port is None:
            raise RuntimeError("proxy not started")
        return f"{self.host}:{self.port}"

    def start(self) -> LatencyProxy:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "keyramp.targets.netem", "--target", self.target, "--listen", f"{self.host}:0",
             "--delay-ms", str(self.delay_ms), "--reply-delay-ms", str(self.reply_delay_ms)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = _readline(self._proc, self.start_timeout_s)
        if not line.startswith("listening "):
            self.stop()
            raise RuntimeError(f"latency proxy did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])
        return self

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _readline(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """First stdout line of ``proc``, or '' after ``timeout_s`` (a thread: pipes have no timeout)."""
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return out[0].strip() if out else ""
