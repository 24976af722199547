"""The store proxy's request path, against a recording gRPC server standing in for the emulator
(no emulator: the proxy's forwarding is what is tested; tests/targets/test_proxy_emulators.py
runs the official emulators through it).

The recorder keeps every request's raw bytes and metadata as it arrived and answers canned raw
bytes, so "forwarded unchanged, once" and "answered unchanged" are byte comparisons.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
import pytest

from keyramp.backends import spec_for
from keyramp.core._errors import EmulatorError
from keyramp.storemodel import Decision, StoreOp
from keyramp.targets._h2 import HOLD_MAX
from keyramp.targets._proxy import StoreProxy
from keyramp.targets._proxy_model import MODEL_TYPES, AdmitAll
from keyramp.targets._proxy_process import control
from keyramp.targets._proxy_stats import ProxyConfig

COMMIT = "/google.firestore.v1.Firestore/Commit"
BATCH_GET = "/google.firestore.v1.Firestore/BatchGetDocuments"
LISTEN = "/google.firestore.v1.Firestore/Listen"
RUN_QUERY = "/google.firestore.v1.Firestore/RunQuery"
ADMIN = "/google.firestore.admin.v1.FirestoreAdmin/ListIndexes"  # no table entry: passed through as a stream


@dataclass
class Recorder:
    """The stand-in emulator: what it received, per method, in order."""

    received: list[tuple[str, bytes, dict[str, str]]] = field(default_factory=list)
    server: Any = None  # its grpc.aio server, to stop it under the proxy

    def reply(self, request: bytes) -> bytes:
        return b"reply:" + request[::-1]


def _recording_server(rec: Recorder) -> grpc.aio.Server:
    def unary(path: str) -> Callable[..., Any]:
        async def handle(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            rec.received.append((path, request, dict(context.invocation_metadata() or ())))
            if request == b"fail":
                await context.abort(grpc.StatusCode.NOT_FOUND, "no such document")
            await context.send_initial_metadata((("x-upstream", "initial"),))
            context.set_trailing_metadata((("x-upstream-trailer", "t"),))
            return rec.reply(request)
        return handle

    def stream(path: str) -> Callable[..., Any]:
        async def handle(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            rec.received.append((path, request, dict(context.invocation_metadata() or ())))
            for i in range(3):
                yield rec.reply(request) + bytes([i])
        return handle

    def bidi(path: str) -> Callable[..., Any]:
        async def handle(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            async for request in requests:
                rec.received.append((path, request, dict(context.invocation_metadata() or ())))
                yield rec.reply(request)
        return handle

    class Router(grpc.GenericRpcHandler):
        def service(self, details: Any) -> grpc.RpcMethodHandler:
            path = details.method
            if path in (BATCH_GET, RUN_QUERY):
                return grpc.unary_stream_rpc_method_handler(stream(path))
            if path in (LISTEN, ADMIN):
                return grpc.stream_stream_rpc_method_handler(bidi(path))
            return grpc.unary_unary_rpc_method_handler(unary(path))

    server = grpc.aio.server(options=[("grpc.max_receive_message_length", 2 * HOLD_MAX)])
    server.add_generic_rpc_handlers((Router(),))
    return server


class Scripted:
    """A model answering from a script, recording what it was offered."""

    def __init__(self, answers: list[Decision]) -> None:
        self.answers = answers
        self.offered: list[StoreOp] = []

    def offer(self, op: StoreOp, now: float) -> Decision:
        self.offered.append(op)
        return self.answers.pop(0) if self.answers else Decision(True, 0.0, None)


async def _with_proxy(model: Any, body: Callable[[grpc.aio.Channel, StoreProxy, Recorder], Any]) -> Any:
    rec = Recorder()
    upstream = rec.server = _recording_server(rec)
    port = upstream.add_insecure_port("127.0.0.1:0")
    await upstream.start()
    proxy = StoreProxy(spec=spec_for("firestore"), upstream=f"127.0.0.1:{port}", make_model=lambda s, c: model,
                       types=MODEL_TYPES, config=ProxyConfig(mode="store"))
    listen = await proxy.start("127.0.0.1:0")
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{listen}",
                                             options=[("grpc.max_receive_message_length", 2 * HOLD_MAX)]) as channel:
            return await body(channel, proxy, rec)
    finally:
        await proxy.stop(0)
        await upstream.stop(0)


def _commit(name: str) -> bytes:
    from google.cloud.firestore_v1.types import document, firestore, write

    doc = document.Document.pb()(name=f"projects/p/databases/(default)/documents/c/{name}")
    return firestore.CommitRequest.pb()(database="projects/p/databases/(default)",
                                        writes=[write.Write.pb()(update=doc)]).SerializeToString()


def _batch_get(name: str) -> bytes:
    from google.cloud.firestore_v1.types import firestore

    return firestore.BatchGetDocumentsRequest.pb()(
        database="projects/p/databases/(default)",
        documents=[f"projects/p/databases/(default)/documents/c/{name}"]).SerializeToString()


def test_every_request_reaches_the_emulator_once_byte_for_byte_and_its_answers_come_back_unchanged() -> None:
    q1 = _batch_get("a")
    sent: list[tuple[str, bytes]] = [(COMMIT, _commit("a")), (COMMIT, b"\xff\x01not a commit"), (BATCH_GET, q1),
                                     (RUN_QUERY, b"query"), (COMMIT, _commit("b"))]
    metadata = (("x-goog-request-params", "database=projects%2Fp"), ("authorization", "Bearer owner"))

    async def body(channel: grpc.aio.Channel, proxy: StoreProxy, rec: Recorder) -> dict[str, Any]:
        answers: list[Any] = []
        for path, request in sent:
            if path in (BATCH_GET, RUN_QUERY):
                answers.append([r async for r in channel.unary_stream(path)(request, metadata=metadata, timeout=5)])
            else:
                call = channel.unary_unary(path)(request, metadata=metadata, timeout=5)
                answers.append(await call)
                assert ("x-upstream", "initial") in tuple(await call.initial_metadata())
                assert ("x-upstream-trailer", "t") in tuple(await call.trailing_metadata())
        bidi = channel.stream_stream(LISTEN)(metadata=metadata, timeout=5)
        for chunk in (b"l1", b"l2"):
            await bidi.write(chunk)
            answers.append(await bidi.read())
        await bidi.done_writing()
        admin = channel.stream_stream(ADMIN)(iter([b"a1"]), timeout=5)
        answers.append([r async for r in admin])
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await channel.unary_unary(COMMIT)(b"fail", timeout=5)
        assert failed.value.code() == grpc.StatusCode.NOT_FOUND and failed.value.details() == "no such document"
        stats = await asyncio.to_thread(control, f"127.0.0.1:{proxy.port}", "stats")
        return {"answers": answers, "received": list(rec.received), "stats": stats}

    out = asyncio.run(_with_proxy(AdmitAll(), body))
    received = out["received"]
    # once each, in order, byte for byte, with the client's metadata
    assert [(p, r) for p, r, _ in received] == [*sent, (LISTEN, b"l1"), (LISTEN, b"l2"), (ADMIN, b"a1"),
                                                (COMMIT, b"fail")]
    assert all(md.get("x-goog-request-params") == "database=projects%2Fp" for _, _, md in received[:5])
    rec = Recorder()
    assert out["answers"][:5] == [rec.reply(sent[0][1]), rec.reply(sent[1][1]),
                                  [rec.reply(q1) + bytes([i]) for i in range(3)],
                                  [rec.reply(b"query") + bytes([i]) for i in range(3)], rec.reply(sent[4][1])]
    assert out["answers"][5:] == [rec.reply(b"l1"), rec.reply(b"l2"), [rec.reply(b"a1")]]
    totals, methods = out["stats"]["totals"], out["stats"]["methods"]
    assert totals["requests"] == 8  # a stream is one call
    # the undecodable commit was forwarded and counted; the query, the listen and the admin call not modelled
    assert methods[COMMIT]["undecodable"] == 2 and methods[COMMIT]["modelled"] == 2  # b"fail" too
    assert methods[RUN_QUERY]["not_modelled"] == 1 and methods[LISTEN]["not_modelled"] == 1
    assert methods[ADMIN]["what"] == "other" and methods[BATCH_GET]["modelled"] == 1


def test_a_throttled_operation_gets_the_stores_answer_and_never_reaches_the_emulator() -> None:
    model = Scripted([Decision(False, 0.05, "key"), Decision(False, 0.0, "range"), Decision(True, 0.08, None),
                      Decision(False, 30.0, "range")])

    async def body(channel: grpc.aio.Channel, proxy: StoreProxy, rec: Recorder) -> dict[str, Any]:
        codes = []
        loop = asyncio.get_running_loop()
        started = loop.time()
        for name in ("a", "b", "c", "d"):
            try:
                await channel.unary_unary(COMMIT)(_commit(name), timeout=1.0)
                codes.append(("OK", ""))
            except grpc.aio.AioRpcError as exc:
                codes.append((exc.code().name, exc.details() or ""))
        took = loop.time() - started
        stats = await asyncio.to_thread(control, f"127.0.0.1:{proxy.port}", "stats")
        return {"codes": codes, "received": [r for _, r, _ in rec.received], "took": took, "stats": stats}

    out = asyncio.run(_with_proxy(model, body))
    firestore = spec_for("firestore").proxy
    assert firestore is not None
    assert out["codes"][0] == ("ABORTED", firestore.throttle["key"].message)
    assert out["codes"][1] == ("RESOURCE_EXHAUSTED", firestore.throttle["range"].message)
    assert out["codes"][2] == ("OK", "")
    assert out["codes"][3][0] == "DEADLINE_EXCEEDED"  # a delay past the client's 1-s deadline
    assert out["received"] == [_commit("c")]  # only the admitted one was forwarded
    assert out["took"] >= 0.05 + 0.08 + 0.9  # the delays were slept (the last until its deadline)
    counts = out["stats"]["methods"][COMMIT]
    assert counts["throttled"] == {"key": 1, "range": 1, "deadline": 1} and counts["delayed"] == 3
    # the model saw the document and its unit (the decoded copy)
    assert [op.units for op in model.offered] == [(b"c\0" + n.encode(),) for n in "abcd"]


def test_configure_starts_a_fresh_model_and_returns_the_counts_before() -> None:
    async def body(channel: grpc.aio.Channel, proxy: StoreProxy, rec: Recorder) -> dict[str, Any]:
        await channel.unary_unary(COMMIT)(_commit("a"), timeout=5)
        endpoint = f"127.0.0.1:{proxy.port}"
        reply = await asyncio.to_thread(control, endpoint, "configure", ProxyConfig(mode="off").to_json())
        await channel.unary_unary(COMMIT)(_commit("b"), timeout=5)
        with pytest.raises(EmulatorError) as bad:
            await asyncio.to_thread(control, endpoint, "configure", {"scale": -1})
        return {"reply": reply, "after": proxy.stats(), "bad": str(bad.value)}

    out = asyncio.run(_with_proxy(AdmitAll(), body))
    assert out["reply"]["previous"]["totals"]["modelled"] == 1
    assert out["after"]["totals"] == {**out["after"]["totals"], "requests": 1, "modelled": 0, "not_modelled": 1}
    assert out["after"]["description"] == "store proxy, model off (forwarding only)"
    assert "scale: must be a finite number > 0" in out["bad"]


def _big_commit(name: str, size: int) -> bytes:
    from google.cloud.firestore_v1.types import document, firestore, write

    big = document.Document.pb()(name=f"projects/p/databases/(default)/documents/c/{name}",
                                 fields={"blob": document.Value.pb()(bytes_value=b"x" * size)})
    return firestore.CommitRequest.pb()(database="projects/p/databases/(default)",
                                        writes=[write.Write.pb()(update=big)]).SerializeToString()


def test_a_large_request_is_held_and_decided_and_one_too_large_to_hold_is_forwarded_unmodelled() -> None:
    held, too_large = _big_commit("held", 200_000), _big_commit("big", HOLD_MAX)  # 4 MiB: more than can be held
    model = Scripted([Decision(False, 0.0, "range")] * 5)  # throttles what it is offered

    async def body(channel: grpc.aio.Channel, proxy: StoreProxy, rec: Recorder) -> dict[str, Any]:
        with pytest.raises(grpc.aio.AioRpcError) as throttled:
            await channel.unary_unary(COMMIT)(held, timeout=5)
        reply = await channel.unary_unary(COMMIT)(too_large, timeout=10)
        return {"code": throttled.value.code(), "reply": reply, "received": [r for _, r, _ in rec.received],
                "stats": proxy.stats()}

    out = asyncio.run(_with_proxy(model, body))
    assert out["code"] == grpc.StatusCode.RESOURCE_EXHAUSTED and len(model.offered) == 1
    assert out["received"] == [too_large] and out["reply"] == Recorder().reply(too_large)
    assert out["stats"]["methods"][COMMIT]["not_modelled"] == 1


def test_a_request_cancelled_while_held_never_reaches_the_emulator_and_the_connection_goes_on() -> None:
    model = Scripted([Decision(True, 0.4, None), Decision(True, 0.0, None)])  # the first is held 0.4 s

    async def body(channel: grpc.aio.Channel, proxy: StoreProxy, rec: Recorder) -> dict[str, Any]:
        call = channel.unary_unary(COMMIT)(_commit("cancelled"), timeout=5)
        await asyncio.sleep(0.1)
        call.cancel()
        await asyncio.sleep(0.5)  # past the hold: a held request the client reset is not let go
        reply = await channel.unary_unary(COMMIT)(_commit("after"), timeout=5)
        return {"code": await call.code(), "reply": reply, "received": [r for _, r, _ in rec.received]}

    out = asyncio.run(_with_proxy(model, body))
    assert out["code"] == grpc.StatusCode.CANCELLED
    assert out["received"] == [_commit("after")] and out["reply"] == Recorder().reply(_commit("after"))


class _Killable(asyncio.Protocol):
    """A TCP hop in front of the stand-in emulator whose connections can be cut as a killed
    process's are (no GOAWAY, no RST_STREAM: the sockets just go)."""

    def __init__(self, port: int, cut: list[asyncio.Transport]) -> None:
        self.port, self.cut, self.buffer = port, cut, [b""]
        self.far: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.near = transport
        self.cut.append(transport)  # type: ignore[arg-type]
        asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        near = self.near

        class Back(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                near.write(data)  # type: ignore[attr-defined]

            def connection_lost(self, exc: Exception | None) -> None:
                near.close()

        self.far, _ = await asyncio.get_running_loop().create_connection(Back, "127.0.0.1", self.port)
        self.cut.append(self.far)
        self.far.write(b"".join(self.buffer))

    def data_received(self, data: bytes) -> None:
        if self.far is None:
            self.buffer.append(data)
        else:
            self.far.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.far is not None:
            self.far.close()


def test_an_emulator_that_dies_under_a_held_request_fails_it_at_once_not_at_its_deadline() -> None:
    model = Scripted([Decision(True, 0.0, None), Decision(True, 0.3, None)])  # the second is held 0.3 s

    async def main() -> dict[str, Any]:
        rec = Recorder()
        upstream = _recording_server(rec)
        port = upstream.add_insecure_port("127.0.0.1:0")
        await upstream.start()
        cut: list[asyncio.Transport] = []
        hop = await asyncio.get_running_loop().create_server(lambda: _Killable(port, cut), "127.0.0.1", 0)
        proxy = StoreProxy(spec=spec_for("firestore"), upstream=f"127.0.0.1:{hop.sockets[0].getsockname()[1]}",
                           make_model=lambda s, c: model, types=MODEL_TYPES, config=ProxyConfig(mode="store"))
        listen = await proxy.start("127.0.0.1:0")
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{listen}") as channel:
                await channel.unary_unary(COMMIT)(_commit("warm"), timeout=5)
                started = asyncio.get_running_loop().time()
                call = channel.unary_unary(COMMIT)(_commit("held"), timeout=20)
                await asyncio.sleep(0.1)
                for transport in cut:  # the emulator process dies: its sockets close, nothing said
                    transport.abort()
                with pytest.raises(grpc.aio.AioRpcError) as failed:
                    await call
                return {"code": failed.value.code(), "took": asyncio.get_running_loop().time() - started,
                        "received": [r for _, r, _ in rec.received]}
        finally:
            await proxy.stop(0)
            hop.close()
            await upstream.stop(0)

    out = asyncio.run(main())
    assert out["code"] == grpc.StatusCode.UNAVAILABLE, out
    assert out["took"] < 5, out  # not the 20-s deadline: the client hears of it at once
    assert out["received"] == [_commit("warm")]
