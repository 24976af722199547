"""The store proxy: a gRPC server in front of one official emulator that forwards every request
unchanged and answers, for the operations the store model throttles, what the real store would.

Forwarding never touches the bytes: every RPC is registered with no (de)serializer, so the
handler receives the request as the client serialised it and hands those same bytes to the
emulator channel; responses come back the same way. Request metadata and the client's
deadline go along; the emulator's initial and trailing metadata and its status come back. A
request is forwarded at most once (no retries here), or not at all when the model throttles
it. Streaming RPCs (Bigtable ``ReadRows``/``MutateRows``, Firestore ``Listen``/``Write``)
stream through; an RPC the store's table does not name is passed through as a bidirectional
stream, which carries any shape of call.

Reading a copy is the store's business (``StoreSpec.proxy``, its ``_decode.py``): a decoded
request is a store-model operation, offered to the model at the proxy's clock. The model
answers admitted or throttled, and a queueing delay, which the handler sleeps (an asyncio
sleep: other requests go on). A throttled operation gets the store's own status and message
(``ProxySpec.answer``); a delay that reaches the client's deadline ends in the store's
deadline answer. Queries, admin calls and transaction bookkeeping are forwarded and counted
as not modelled; a request that fails to decode is forwarded and counted, never dropped.

A control service on the same port (``/keyramp.StoreProxy/``) reconfigures the model (a
fresh one: each keyramp cell starts its own) and reports the counts as JSON.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Final, Protocol

import grpc
import grpc.aio

from keyramp.backends import StoreSpec
from keyramp.backends._fidelity import DecodeOptions, ModelTypes, Rpc
from keyramp.targets._proxy_stats import MethodCounts, ProxyConfig, ProxyCounts

__all__ = ["CONFIGURE", "CONTROL", "STATS", "ModelFactory", "StoreModelLike", "StoreProxy"]

#: The proxy's own service: never a store's path.
CONTROL: Final = "/keyramp.StoreProxy/"
CONFIGURE: Final = CONTROL + "Configure"
STATS: Final = CONTROL + "Stats"
#: As the drivers' channels: unlimited message sizes, no transparent retries (a request once).
CHANNEL_OPTIONS: Final = (("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1),
                          ("grpc.enable_retries", 0))
#: Metadata gRPC sets itself on the upstream call: forwarding it would send it twice.
_OWN_HEADERS: Final = frozenset({"user-agent", "grpc-accept-encoding", "grpc-encoding", "grpc-timeout", "te",
                                 "content-type"})
_STATUS: Final = {code.name: code for code in grpc.StatusCode}


class StoreModelLike(Protocol):
    """What the proxy needs of ``keyramp.storemodel.StoreModel``."""

    def offer(self, op: Any, now: float) -> Any: ...


#: Builds the model a configuration asks for (the proxy's entry point passes it in: the model
#: sits above the targets layer).
ModelFactory = Callable[[StoreSpec, ProxyConfig], StoreModelLike]


def _forwarded(context: grpc.aio.ServicerContext) -> tuple[tuple[str, str | bytes], ...]:
    return tuple((k, v) for k, v in context.invocation_metadata() or () if k not in _OWN_HEADERS)


async def _send_back(call: Any, context: grpc.aio.ServicerContext) -> None:
    initial = await call.initial_metadata()
    if initial:
        await context.send_initial_metadata(tuple(initial))


def _trailing_back(call: Any, trailing: Any, context: grpc.aio.ServicerContext) -> None:
    if trailing:
        context.set_trailing_metadata(tuple(trailing))


class StoreProxy:
    """One proxy: ``await start(listen)``, then ``await wait()``; ``configure`` swaps the model."""

    def __init__(self, *, spec: StoreSpec, upstream: str, make_model: ModelFactory, types: ModelTypes,
                 config: ProxyConfig) -> None:
        if spec.proxy is None:
            raise ValueError(f"{spec.name}: the store declares no proxy decoder (StoreSpec.proxy)")
        self.spec = spec
        self.upstream = upstream
        self._proxy = spec.proxy
        self._make_model = make_model
        self._types = types
        self._server: grpc.aio.Server | None = None
        self._channel: grpc.aio.Channel | None = None
        self._stubs: dict[str, Any] = {}
        self._handlers: dict[str, grpc.RpcMethodHandler] = {}
        self.port = 0
        self._apply(config)

    # -- configuration -----------------------------------------------------------------------
    def _apply(self, config: ProxyConfig) -> None:
        """A fresh model (or none), decoders bound to it, zeroed counts, the clock at zero."""
        options = DecodeOptions(exempt=frozenset(config.exempt), seed=config.seed)
        self._rpcs = self._proxy.rpcs(options, self._types)
        self.model: StoreModelLike | None = self._make_model(self.spec, config) if config.mode != "off" else None
        self.config = config
        self.counts = ProxyCounts()
        self._t0 = time.monotonic()
        self._handlers = {}

    def stats(self) -> dict[str, Any]:
        """The configuration, the counts since it was applied, and the model's own state and parameters."""
        state = getattr(self.model, "state", None)
        params = getattr(self.model, "params", None)
        return {"store": self.spec.name, "upstream": self.upstream, "config": self.config.to_json(),
                "description": self.config.describe(), "elapsed_s": round(time.monotonic() - self._t0, 3),
                **self.counts.to_json(),
                "model": state().to_json() if callable(state) else None,
                "params": params.to_json() if params is not None else None}

    # -- serving -----------------------------------------------------------------------------
    async def start(self, listen: str = "127.0.0.1:0") -> int:
        self._channel = grpc.aio.insecure_channel(self.upstream, options=CHANNEL_OPTIONS)
        server = grpc.aio.server(options=(("grpc.so_reuseport", 0), *CHANNEL_OPTIONS[:2]))
        server.add_generic_rpc_handlers((_Router(self),))
        self.port = server.add_insecure_port(listen)
        await server.start()
        self._server = server
        return self.port

    async def wait(self) -> None:
        assert self._server is not None
        await self._server.wait_for_termination()

    async def stop(self, grace_s: float = 1.0) -> None:
        if self._server is not None:
            await self._server.stop(grace_s)
        if self._channel is not None:
            await self._channel.close()

    def handler(self, path: str) -> grpc.RpcMethodHandler:
        found = self._handlers.get(path)
        if found is None:
            found = self._handlers[path] = self._build(path)
        return found

    def _build(self, path: str) -> grpc.RpcMethodHandler:
        if path.startswith(CONTROL):
            return grpc.unary_unary_rpc_method_handler(self._control(path))
        rpc = self._rpcs.get(path) or Rpc(path=path, what="other", request_stream=True, response_stream=True)
        counts = self.counts.method(path, rpc.what)
        assert self._channel is not None
        if rpc.request_stream:  # bidirectional (or a shape the table does not know): stream through
            stub: Any = self._channel.stream_stream(path)
            return grpc.stream_stream_rpc_method_handler(self._stream_through(stub, counts))
        if rpc.response_stream:
            return grpc.unary_stream_rpc_method_handler(self._server_stream(rpc, self._channel.unary_stream(path),
                                                                            counts))
        return grpc.unary_unary_rpc_method_handler(self._unary(rpc, self._channel.unary_unary(path), counts))

    # -- the model ---------------------------------------------------------------------------
    def _offer(self, decode: Callable[[bytes], Any] | None, request: bytes, counts: MethodCounts) -> Any:
        """The model's decision for ``request``, or None when it is forwarded unmodelled."""
        model = self.model
        if model is None or decode is None:
            counts.not_modelled += 1
            return None
        try:
            op = decode(request)
        except Exception:  # noqa: BLE001 - any request the decoder cannot read is forwarded, and counted
            counts.undecodable += 1
            counts.not_modelled += 1
            return None
        if op is None:
            counts.not_modelled += 1
            return None
        counts.modelled += 1
        return model.offer(op, time.monotonic() - self._t0)

    async def _hold(self, decision: Any, counts: MethodCounts, context: grpc.aio.ServicerContext) -> None:
        """Sleep the model's delay; answer a throttled operation with the store's status. Counted
        before the sleep: a client whose deadline passes meanwhile cancels the handler."""
        wait = float(decision.delay_s)
        remaining = context.time_remaining()
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
            await asyncio.sleep(wait)
        if answer is not None:
            await context.abort(_STATUS[answer.code], answer.message)

    # -- handlers ----------------------------------------------------------------------------
    def _unary(self, rpc: Rpc, stub: Any, counts: MethodCounts) -> Callable[..., Any]:
        decode, offer, hold = rpc.decode, self._offer, self._hold

        async def unary(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            counts.requests += 1
            decision = offer(decode, request, counts)
            if decision is not None and (decision.delay_s > 0 or not decision.admitted):
                await hold(decision, counts, context)
            call = stub(request, timeout=context.time_remaining(), metadata=_forwarded(context))
            try:
                response: bytes = await call
            except grpc.aio.AioRpcError as exc:
                counts.upstream_errors += 1
                await context.abort(exc.code(), exc.details() or "", exc.trailing_metadata() or ())
            await _send_back(call, context)
            _trailing_back(call, await call.trailing_metadata(), context)
            return response

        return unary

    def _server_stream(self, rpc: Rpc, stub: Any, counts: MethodCounts) -> Callable[..., Any]:
        decode, offer, hold = rpc.decode, self._offer, self._hold

        async def server_stream(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            counts.requests += 1
            decision = offer(decode, request, counts)
            if decision is not None and (decision.delay_s > 0 or not decision.admitted):
                await hold(decision, counts, context)
            call = stub(request, timeout=context.time_remaining(), metadata=_forwarded(context))
            try:
                await _send_back(call, context)
                async for response in call:
                    yield response
            except grpc.aio.AioRpcError as exc:
                counts.upstream_errors += 1
                await context.abort(exc.code(), exc.details() or "", exc.trailing_metadata() or ())
            _trailing_back(call, await call.trailing_metadata(), context)

        return server_stream

    def _stream_through(self, stub: Any, counts: MethodCounts) -> Callable[..., Any]:
        async def stream_through(requests: AsyncIterator[bytes],
                                 context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            counts.requests += 1
            counts.not_modelled += 1
            call = stub(requests, timeout=context.time_remaining(), metadata=_forwarded(context))
            try:
                await _send_back(call, context)
                async for response in call:
                    yield response
            except grpc.aio.AioRpcError as exc:
                counts.upstream_errors += 1
                await context.abort(exc.code(), exc.details() or "", exc.trailing_metadata() or ())
            _trailing_back(call, await call.trailing_metadata(), context)

        return stream_through

    def _control(self, path: str) -> Callable[..., Any]:
        async def control(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            if path == CONFIGURE:
                try:
                    config = ProxyConfig.from_json(json.loads(request or b"{}"))
                    before = self.stats()
                    self._apply(config)
                except Exception as exc:  # noqa: BLE001 - a bad configuration is the caller's error, in one line
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{type(exc).__name__}: {exc}")
                return json.dumps({"previous": before, "now": self.stats()}).encode()
            if path == STATS:
                return json.dumps(self.stats()).encode()
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"no such control call {path}")
            raise AssertionError  # abort raises

        return control


class _Router(grpc.GenericRpcHandler):
    """Every path to the proxy's handler for it (built once per path and configuration)."""

    def __init__(self, proxy: StoreProxy) -> None:
        self._proxy = proxy

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        return self._proxy.handler(handler_call_details.method)
