"""The store proxy: in front of one official emulator, it forwards every request unchanged and
answers, for the operations the store model throttles, what the real store would.

Forwarding never touches a byte: a gRPC connection is relayed frame by frame to a connection of
its own to the emulator (``_h2.H2Session``: the same frames, stream ids and header blocks; the
request metadata, the deadline, streaming RPCs — Bigtable ``ReadRows``/``MutateRows``, Firestore
``Listen``/``Write`` — and the emulator's answers, metadata and statuses all pass as they are).
No request is ever sent twice; one the model throttles is not sent at all. Any other connection
is piped as raw bytes, so the emulator's HTTP endpoints (health, reset) work through the proxy's
address too; HTTP requests to ``/keyramp/…`` are the proxy's own control calls (``configure``:
a fresh model, ``stats``: the counts), answered as JSON.

Reading a copy is the store's business (``StoreSpec.proxy``, its ``_decode.py``): the gRPC
message of a request the store's table can decode is offered, as a store-model operation, to
the model at the proxy's clock. The model answers admitted or throttled and a queueing delay,
which the connection waits out on the event loop (other requests go on). A throttled operation
gets the store's own status and message (``ProxySpec.answer``); a delay that reaches the
client's deadline ends in the store's deadline answer. Queries, admin calls and transaction
bookkeeping are forwarded and counted as not modelled; a request that fails to decode is
forwarded and counted, never dropped.

Why frames and not a gRPC server: a Python gRPC server and client in the path cost about
500 µs of CPU per request on the development machine (bench/bench_proxy.py), more than the
driver itself; relaying frames costs a fraction of that (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

from keyramp.backends import DecodeOptions, ModelTypes, Rpc, StoreSpec, Throttle
from keyramp.targets._h2 import PREFACE, H2Session
from keyramp.targets._proxy_stats import MethodCounts, ProxyConfig, ProxyCounts

__all__ = ["CONTROL", "ModelFactory", "StoreModelLike", "StoreProxy"]

#: The proxy's own HTTP paths: never an emulator's.
CONTROL: Final = "/keyramp/"
_CONTROL_PREFIXES: Final = (b"GET " + CONTROL.encode(), b"POST " + CONTROL.encode())


class StoreModelLike(Protocol):
    """What the proxy needs of ``keyramp.storemodel.StoreModel``."""

    def offer(self, op: Any, now: float) -> Any: ...


#: Builds the model a configuration asks for (the proxy's entry point passes it in).
ModelFactory = Callable[[StoreSpec, ProxyConfig], StoreModelLike]


class StoreProxy:
    """One proxy: ``await start(listen)``; ``configure`` swaps the model; ``await stop()``."""

    def __init__(self, *, spec: StoreSpec, upstream: str, make_model: ModelFactory, types: ModelTypes,
                 config: ProxyConfig) -> None:
        if spec.proxy is None:
            raise ValueError(f"{spec.name}: the store declares no proxy decoder (StoreSpec.proxy)")
        self.spec = spec
        self.upstream = upstream
        host, _, port = upstream.rpartition(":")
        self._up = (host.strip("[]"), int(port))
        self._proxy = spec.proxy
        self._make_model = make_model
        self._types = types
        self._server: asyncio.Server | None = None
        self.port = 0
        self.configure(config)

    # -- configuration, counts ---------------------------------------------------------------
    def configure(self, config: ProxyConfig) -> None:
        """A fresh model (or none), decoders bound to it, zeroed counts, the clock at zero."""
        options = DecodeOptions(exempt=frozenset(config.exempt), seed=config.seed)
        self._rpcs = self._proxy.rpcs(options, self._types)
        self.model: StoreModelLike | None = self._make_model(self.spec, config) if config.mode != "off" else None
        self.config = config
        self.counts = ProxyCounts()
        self._routes: dict[str, tuple[Rpc, MethodCounts]] = {}
        self._t0 = time.monotonic()

    def stats(self) -> dict[str, Any]:
        """The configuration, the counts since it was applied, and the model's own state and parameters."""
        state = getattr(self.model, "state", None)
        params = getattr(self.model, "params", None)
        return {"store": self.spec.name, "upstream": self.upstream, "config": self.config.to_json(),
                "description": self.config.describe(), "elapsed_s": round(time.monotonic() - self._t0, 3),
                **self.counts.to_json(),
                "model": state().to_json() if callable(state) else None,
                "params": params.to_json() if params is not None else None}

    def route(self, path: str) -> tuple[Rpc, MethodCounts]:
        """The RPC at ``path`` (one the table does not know: passed through) and its counts."""
        found = self._routes.get(path)
        if found is None:
            rpc = self._rpcs.get(path) or Rpc(path=path, what="other", request_stream=True, response_stream=True)
            found = self._routes[path] = (rpc, self.counts.method(path, rpc.what))
        return found

    # -- the model ---------------------------------------------------------------------------
    def offer(self, decode: Callable[[bytes], Any] | None, body: bytes | None, counts: MethodCounts) -> Any:
        """The model's decision for a request's message, or None when it is forwarded unmodelled."""
        model = self.model
        if model is None or decode is None:
            counts.not_modelled += 1
            return None
        try:
            if body is None:
                raise ValueError("not one uncompressed gRPC message")
            op = decode(body)
        except Exception:  # noqa: BLE001 - any request the decoder cannot read is forwarded, and counted
            counts.undecodable += 1
            counts.not_modelled += 1
            return None
        if op is None:
            counts.not_modelled += 1
            return None
        counts.modelled += 1
        return model.offer(op, time.monotonic() - self._t0)

    def hold(self, decision: Any, counts: MethodCounts, deadline: float | None) -> tuple[float, Throttle | None]:
        """How long to hold a request the model delayed or throttled, and the store's answer
        (None: forward it then). A delay that reaches the client's deadline ends in the deadline answer."""
        wait = float(decision.delay_s)
        remaining = None if deadline is None else deadline - time.monotonic()
        late = remaining is not None and wait >= remaining
        answer = None
        if late or not decision.admitted:
            cause = "deadline" if late else (decision.cause or "range")
            counts.throttled[cause] = counts.throttled.get(cause, 0) + 1
            answer = self._proxy.deadline if late else self._proxy.answer(decision.cause)
        if late:
            wait = max(0.0, remaining or 0.0)
        if wait > 0:
            counts.delayed += 1
            counts.delay_s += wait
        return wait, answer

    # -- serving -----------------------------------------------------------------------------
    async def start(self, listen: str = "127.0.0.1:0") -> int:
        host, _, port = listen.rpartition(":")
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Client(self), host, int(port))
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self, grace_s: float = 1.0) -> None:
        if self._server is not None:
            self._server.close()
            if grace_s:
                await asyncio.wait_for(self._server.wait_closed(), grace_s)

    async def connect_upstream(self, client: _Client) -> None:
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.create_connection(lambda: _Upstream(client), *self._up)
        except OSError:
            client.transport.close()
            return
        client.upstream_made(transport)

    def control(self, request: bytes) -> bytes:
        """An HTTP/1.1 control call: ``GET /keyramp/stats`` or ``POST /keyramp/configure`` (JSON)."""
        head, _, body = request.partition(b"\r\n\r\n")
        target = head.split(b" ", 2)[1].decode("latin-1")
        try:
            if target == CONTROL + "stats":
                return _http(200, self.stats())
            if target == CONTROL + "configure":
                config = ProxyConfig.from_json(json.loads(body or b"{}"))
                before = self.stats()
                self.configure(config)
                return _http(200, {"previous": before, "now": self.stats()})
            return _http(404, {"error": f"no such control call {target}"})
        except Exception as exc:  # noqa: BLE001 - a bad configuration is the caller's error, in one line
            return _http(400, {"error": f"{type(exc).__name__}: {exc}"})


def _http(status: int, doc: dict[str, Any]) -> bytes:
    body = json.dumps(doc).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body


def _complete(request: bytes) -> bool:
    head, sep, body = request.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip() or 0)
    return True


class _Client(asyncio.Protocol):
    """One accepted connection: gRPC (HTTP/2) relayed frame by frame, a control call, or raw bytes."""

    def __init__(self, proxy: StoreProxy) -> None:
        self.proxy = proxy
        self.transport: asyncio.Transport
        self.session: H2Session | None = None
        self.upstream: asyncio.Transport | None = None
        self._first = b""
        self._mode = ""  # "h2" | "control" | "raw", decided by the first bytes
        self._raw: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._mode == "h2":
            assert self.session is not None
            self.session.from_client(data)
            return
        if self._mode == "raw":
            self._pipe(data)
            return
        self._first += data
        if self._mode == "control" or self._first.startswith(_CONTROL_PREFIXES):
            self._mode = "control"
            if _complete(self._first):
                self.transport.write(self.proxy.control(self._first))
                self.transport.close()
            return
        if len(self._first) < len(PREFACE) and PREFACE.startswith(self._first):
            return  # not yet enough to tell
        first, self._first = self._first, b""
        self._mode = "h2" if first.startswith(PREFACE) else "raw"
        if self._mode == "h2":
            self.session = H2Session(self.proxy, self.transport)
            self.session.from_client(first)
        else:
            self._pipe(first)
        asyncio.get_running_loop().create_task(self.proxy.connect_upstream(self))

    def _pipe(self, data: bytes) -> None:
        if self.upstream is None:
            self._raw.append(data)
        else:
            self.upstream.write(data)

    def upstream_made(self, transport: asyncio.Transport) -> None:
        self.upstream = transport
        if self.transport.is_closing():
            transport.close()
            return
        if self.session is not None:
            self.session.connected(transport)
        elif self._raw:
            transport.writelines(self._raw)
            self._raw = []

    def connection_lost(self, exc: Exception | None) -> None:
        if self.session is not None:
            self.session.close()
        if self.upstream is not None:
            self.upstream.close()


class _Upstream(asyncio.Protocol):
    """The emulator side of one client connection."""

    def __init__(self, client: _Client) -> None:
        self.client = client

    def data_received(self, data: bytes) -> None:
        session = self.client.session
        if session is not None:
            session.from_upstream(data)
        else:
            self.client.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.transport.close()
