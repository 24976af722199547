"""The store proxy's frame relay (keyramp/targets/_h2.py), frame by frame: a session between two
recording transports, the client's frames built with a real HPACK encoder, the emulator's
answers too. Deterministic and fast; tests/targets/test_proxy.py and test_proxy_clients.py run
real gRPC clients and servers through it.

What must hold (RFC 9113, RFC 7541, gRPC over HTTP/2): every frame the client sends reaches the
emulator once, unchanged and in order, except a throttled request's data; a frame the proxy adds
never falls inside a header block nor before the stream it names exists; the proxy's answers
leave the client's HPACK table as the emulator's encoder believes it is; credit the client spent
on data that never reached the emulator comes back; the client never waits on credit only the
emulator could give.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import hpack
import pytest
from _h2frames import (
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PADDED,
    PRIORITY_FLAG,
    RST_STREAM,
    WINDOW_UPDATE,
    Frame,
    Sink,
    data_frames,
    frame,
    frames,
    grpc_message,
    request_headers,
    settings,
)
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from keyramp.backends import spec_for
from keyramp.storemodel import Decision, StoreOp
from keyramp.targets._h2 import HOLD_MAX, PREFACE, H2Session
from keyramp.targets._proxy import StoreProxy
from keyramp.targets._proxy_model import MODEL_TYPES
from keyramp.targets._proxy_stats import ProxyConfig

COMMIT = "/google.firestore.v1.Firestore/Commit"
RUN_QUERY = "/google.firestore.v1.Firestore/RunQuery"
ADMIT = Decision(True, 0.0, None)
THROTTLE = Decision(False, 0.0, "range")


def _commit(name: str, pad: int = 0) -> bytes:
    from google.cloud.firestore_v1.types import document, firestore, write

    fields = {"blob": document.Value.pb()(bytes_value=b"x" * pad)} if pad else {}
    doc = document.Document.pb()(name=f"projects/p/databases/(default)/documents/c/{name}", fields=fields)
    return firestore.CommitRequest.pb()(database="projects/p/databases/(default)",
                                        writes=[write.Write.pb()(update=doc)]).SerializeToString()


class ByName:
    """A model deciding by the document's name: ``decide(name) -> Decision``."""

    def __init__(self, decide: Callable[[str], Decision]) -> None:
        self.decide = decide
        self.offered: list[str] = []

    def offer(self, op: StoreOp, now: float) -> Decision:
        name = op.units[0].rpartition(b"\0")[2].decode()
        self.offered.append(name)
        return self.decide(name)


class Relay:
    """One ``H2Session`` between a recording client and a recording emulator."""

    def __init__(self, model: Any = None, *, decide: Callable[[str], Decision] | None = None) -> None:
        self.model = model if model is not None else ByName(decide or (lambda name: ADMIT))
        self.proxy = StoreProxy(spec=spec_for("firestore"), upstream="127.0.0.1:1",
                                make_model=lambda s, c: self.model, types=MODEL_TYPES, config=ProxyConfig())
        self.client, self.upstream = Sink(), Sink()
        self.session = H2Session(self.proxy, self.client)  # type: ignore[arg-type]
        self.session.connected(self.upstream)  # type: ignore[arg-type]
        self.encoder = hpack.Encoder()
        self.session.from_client(PREFACE + settings().encode())

    def send(self, *items: Frame | bytes) -> None:
        self.session.from_client(b"".join(i.encode() if isinstance(i, Frame) else i for i in items))

    def answer(self, *items: Frame | bytes) -> None:
        self.session.from_upstream(b"".join(i.encode() if isinstance(i, Frame) else i for i in items))

    def headers(self, sid: int, path: str = COMMIT, *, end: bool = False, **kw: Any) -> Frame:
        return frame(HEADERS, END_HEADERS | (END_STREAM if end else 0), sid, request_headers(self.encoder, path, **kw))

    def up(self) -> list[Frame]:
        return frames(self.upstream.data[len(PREFACE):])[1:]  # after the preface and the client's SETTINGS

    def down(self) -> list[Frame]:
        return self.client.frames()


def _kinds(frames: list[Frame]) -> list[tuple[int, int]]:
    return [(f.type, f.sid) for f in frames]


def test_a_throttle_decided_at_once_resets_the_stream_after_its_headers_never_before() -> None:
    relay = Relay(decide=lambda name: THROTTLE)
    message = grpc_message(_commit("a"))
    relay.send(relay.headers(1), *data_frames(1, message, []))  # one read, as a client writes a unary call
    assert _kinds(relay.up()) == [(HEADERS, 1), (RST_STREAM, 1)]  # a RST_STREAM first: an idle stream, PROTOCOL_ERROR
    down = relay.down()
    assert [(f.type, f.sid, f.flags & END_STREAM) for f in down] == [(HEADERS, 1, END_STREAM), (WINDOW_UPDATE, 0, 0)]
    assert down[1].increment == len(message)


def test_trailers_from_the_client_let_the_held_data_go_first() -> None:
    relay = Relay()
    message = grpc_message(_commit("a"))
    relay.send(relay.headers(1), *data_frames(1, message, [], end=False))
    assert _kinds(relay.up()) == [(HEADERS, 1)]  # held: the message is whole, but the stream goes on
    trailers = frame(HEADERS, END_HEADERS | END_STREAM, 1, bytes(relay.encoder.encode([("x-trailer", "t")])))
    relay.send(trailers)
    assert relay.up() == [relay.up()[0], *data_frames(1, message, [], end=False), trailers]
    assert relay.proxy.counts.methods[COMMIT].not_modelled == 1


def test_padding_and_priority_pass_unchanged_and_the_padding_is_credited_back() -> None:
    relay = Relay(decide=lambda name: THROTTLE if name == "b" else ADMIT)
    block = request_headers(relay.encoder, COMMIT)
    padded = frame(HEADERS, END_HEADERS | PADDED | PRIORITY_FLAG, 1, bytes((3,)) + b"\0\0\0\0\x10" + block + b"\0" * 3)
    sent = [padded, *data_frames(1, grpc_message(_commit("a")), [7], pad=4)]
    relay.send(*sent)
    assert relay.up() == sent
    relay.send(relay.headers(3), *data_frames(3, grpc_message(_commit("b")), [9], pad=5))
    assert relay.model.offered == ["a", "b"]
    credit = [f for f in relay.down() if f.type == WINDOW_UPDATE]
    assert [f.increment for f in credit] == [len(grpc_message(_commit("b"))) + 2 * 6]  # pad length byte + padding


def test_nothing_the_proxy_adds_falls_inside_a_header_block_either_way() -> None:
    async def body() -> tuple[list[Frame], list[Frame]]:
        relay = Relay(decide=lambda name: Decision(False, 0.01, "key"))
        relay.send(relay.headers(1), *data_frames(1, grpc_message(_commit("a")), []))
        block = request_headers(relay.encoder, RUN_QUERY, extra=(("x-big", "v" * 100),))
        relay.send(frame(HEADERS, 0, 3, block[:10]))  # stream 3's header block, its end still to come
        relay.answer(frame(HEADERS, 0, 5, b"\x88"))  # and a response's block from the emulator, open too
        await asyncio.sleep(0.03)  # the throttle's 10-ms timer fires (first: timers run in order) while both are open
        relay.send(frame(CONTINUATION, END_HEADERS, 3, block[10:]))
        relay.answer(frame(CONTINUATION, END_HEADERS, 5, b""))
        return relay.up(), relay.down()

    up, down = asyncio.run(body())
    assert _kinds(up) == [(HEADERS, 1), (HEADERS, 3), (CONTINUATION, 3), (RST_STREAM, 1)]
    assert _kinds(down) == [(HEADERS, 5), (CONTINUATION, 5), (HEADERS, 1), (WINDOW_UPDATE, 0)]


def test_a_request_larger_than_the_streams_window_is_forwarded_as_it_comes() -> None:
    relay = Relay(decide=lambda name: THROTTLE)
    relay.answer(settings(initial_window_size=20_000))  # the emulator's stream window: 20,000 bytes
    message = grpc_message(_commit("a", pad=20_000 - 5 - len(_commit("a", pad=0)) - 4))
    assert len(message) > 20_000
    first, *rest = data_frames(1, message, [16_384])
    relay.send(relay.headers(1), first)
    assert relay.up() == [relay.up()[0], first]  # not held: the client could not send the rest of it
    relay.send(*rest)
    assert relay.up()[1:] == [first, *rest] and relay.model.offered == []
    assert relay.proxy.counts.methods[COMMIT].not_modelled == 1


def test_held_requests_are_let_go_before_the_connection_window_runs_out() -> None:
    relay = Relay(decide=lambda name: THROTTLE)
    messages = {sid: grpc_message(_commit(f"d{sid}", pad=30_000)) for sid in (1, 3, 5, 7)}
    parts = {sid: data_frames(sid, m, [16_000]) for sid, m in messages.items()}
    for sid in messages:  # four requests interleaved: the first 16,000 bytes of each (64,000 of 65,535)
        relay.send(relay.headers(sid), parts[sid][0])
    # held, the rest of them would need more credit than the client has left: all four let go
    assert sorted(f.sid for f in relay.up() if f.type == DATA) == [1, 3, 5, 7]
    for sid in messages:
        relay.send(parts[sid][1])
    assert {sid: [f for f in relay.up() if f.type == DATA and f.sid == sid] for sid in messages} == parts
    assert relay.model.offered == [] and relay.proxy.counts.methods[COMMIT].not_modelled == 4


def _message_of(size: int, name: str) -> bytes:
    """A commit's gRPC message of exactly ``size`` bytes."""
    pad = size - 100
    for _ in range(8):
        message = grpc_message(_commit(name, pad=pad))
        if len(message) == size:
            return message
        pad += size - len(message)
    raise AssertionError(size)


def test_only_as_many_held_requests_are_let_go_as_the_window_needs() -> None:
    relay = Relay(decide=lambda name: THROTTLE)
    big, small = grpc_message(_commit("big", pad=30_000)), grpc_message(_commit("small", pad=20_000))
    big_parts, small_parts = data_frames(1, big, [10_000]), data_frames(3, small, [16_000])
    relay.send(relay.headers(1), big_parts[0], relay.headers(3), small_parts[0])
    assert [f.sid for f in relay.up() if f.type == DATA] == []  # 26,000 sent: the rest fits the window
    relay.send(frame(DATA, 0, 5, b"\0" * 30_000))  # another stream's data: 9,535 left, both need 24,000
    assert [f.sid for f in relay.up() if f.type == DATA] == [1, 5]  # the one that needs more goes on
    relay.send(small_parts[1])
    assert relay.model.offered == ["small"] and [f.sid for f in relay.up() if f.type == RST_STREAM] == [3]


def test_the_hold_limit_is_exact() -> None:
    relay = Relay(decide=lambda name: THROTTLE)
    relay.answer(settings(initial_window_size=2 * HOLD_MAX),
                 frame(WINDOW_UPDATE, 0, 0, (4 * HOLD_MAX).to_bytes(4, "big")))
    for sid, name, size in ((1, "fits", HOLD_MAX), (3, "over", HOLD_MAX + 1)):
        relay.send(relay.headers(sid), *data_frames(sid, _message_of(size, name), [16_384] * (size // 16_384)))
    assert relay.model.offered == ["fits"]
    assert [f.sid for f in relay.up() if f.type == RST_STREAM] == [1]


def test_a_client_reset_while_held_drops_the_data_and_gives_its_credit_back() -> None:
    async def body() -> Relay:
        relay = Relay(decide=lambda name: Decision(True, 30.0, None))  # held for 30 s
        message = grpc_message(_commit("a"))
        relay.send(relay.headers(1), *data_frames(1, message, []))
        relay.send(frame(RST_STREAM, 0, 1, (8).to_bytes(4, "big")))
        return relay

    relay = asyncio.run(body())
    assert _kinds(relay.up()) == [(HEADERS, 1), (RST_STREAM, 1)]
    assert [f.increment for f in relay.down()] == [len(grpc_message(_commit("a")))]


@pytest.mark.parametrize("how", ["trailers", "reset"])
def test_when_the_emulator_ends_a_held_stream_first_its_data_goes_on_and_no_answer_follows(how: str) -> None:
    async def body() -> Relay:
        relay = Relay(decide=lambda name: Decision(False, 0.02, "key"))
        message = grpc_message(_commit("a"))
        relay.send(relay.headers(1), *data_frames(1, message, []))
        ended = (frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\x88") if how == "trailers"
                 else frame(RST_STREAM, 0, 1, (8).to_bytes(4, "big")))
        relay.answer(ended)
        await asyncio.sleep(0.05)  # past the throttle's timer, which must do nothing now
        return relay

    relay = asyncio.run(body())
    assert _kinds(relay.up()) == [(HEADERS, 1), (DATA, 1)]
    assert len(relay.down()) == 1  # the emulator's own frame only


def test_a_throttle_after_the_emulators_response_headers_sends_trailers_without_status() -> None:
    async def body() -> Relay:
        relay = Relay(decide=lambda name: Decision(False, 0.01, "key"))
        relay.send(relay.headers(1), *data_frames(1, grpc_message(_commit("a")), []))
        relay.answer(frame(HEADERS, END_HEADERS, 1, b"\x88"))  # the response's headers, early
        for _ in range(200):
            await asyncio.sleep(0.005)
            if len(relay.down()) > 1:
                break
        return relay

    relay = asyncio.run(body())
    answer = relay.down()[1]
    assert answer.type == HEADERS and answer.flags & END_STREAM
    key = spec_for("firestore").proxy.throttle["key"]  # type: ignore[union-attr]
    assert dict(hpack.Decoder().decode(answer.payload)) == {"grpc-status": "10", "grpc-message": key.message}


def test_late_data_of_an_answered_stream_is_dropped_and_its_credit_given_back_to_the_emulator() -> None:
    relay = Relay(decide=lambda name: THROTTLE)
    relay.send(relay.headers(1), *data_frames(1, grpc_message(_commit("a")), []))
    before = len(relay.down())
    relay.answer(frame(DATA, 0, 1, b"late" * 10), frame(WINDOW_UPDATE, 0, 1, (5).to_bytes(4, "big")))
    assert len(relay.down()) == before
    assert relay.up()[-1] == frame(WINDOW_UPDATE, 0, 0, (40).to_bytes(4, "big"))


# -- a property: any interleaving, any framing, any read boundaries ------------------------------

_REQUEST = st.fixed_dictionaries({
    "query": st.booleans(),  # a RunQuery (not modelled: never held) or a commit
    "pad": st.one_of(st.integers(0, 200), st.integers(16_000, 40_000)),
    "cuts": st.lists(st.integers(1, 20_000), max_size=3),  # DATA frame sizes
    "padding": st.sampled_from([0, 0, 1, 7]),
    "continuation": st.one_of(st.none(), st.integers(1, 30)),  # the header block split here
    "priority": st.booleans(),
    "throttle": st.booleans(),
    "reset_after": st.one_of(st.none(), st.integers(0, 2)),  # the client resets after this many DATA frames
    "table_size": st.sampled_from([None, None, None, 0, 256, 4096]),  # the client's encoder resizes its table
    "response": st.one_of(st.none(), st.integers(0, 40), st.integers(0, 40)),  # the emulator's response headers
})


def _header_frames(sid: int, block: bytes, cut: int | None, *, priority: bool, end: bool) -> list[Frame]:
    flags = END_STREAM if end else 0
    prefix = b"\0\0\0\0\x10" if priority else b""
    flags |= PRIORITY_FLAG if priority else 0
    if cut is None or cut >= len(block):
        return [frame(HEADERS, flags | END_HEADERS, sid, prefix + block)]
    return [frame(HEADERS, flags, sid, prefix + block[:cut]), frame(CONTINUATION, END_HEADERS, sid, block[cut:])]


def _client_streams(requests: list[dict[str, Any]], encoder: hpack.Encoder) -> dict[int, dict[str, Any]]:
    streams = {}
    for i, r in enumerate(requests):
        sid = 2 * i + 1
        if r["table_size"] is not None:
            encoder.header_table_size = r["table_size"]
        path = RUN_QUERY if r["query"] else COMMIT
        block = request_headers(encoder, path, timeout="5S", extra=(("x-request", f"r{i}"),))
        message = grpc_message(_commit(f"d{i}", pad=r["pad"]))
        data = data_frames(sid, message, r["cuts"], pad=r["padding"])
        reset = r["reset_after"] is not None and r["reset_after"] < len(data)
        if reset:
            data = [*data[:r["reset_after"]], frame(RST_STREAM, 0, sid, (8).to_bytes(4, "big"))]
        streams[sid] = {"path": path, "head": _header_frames(sid, block, r["continuation"], priority=r["priority"],
                                                             end=False),
                        "data": data, "reset": reset, "throttle": r["throttle"] and not r["query"], "name": f"d{i}",
                        "response": r["response"]}
    return streams


def _interleave(streams: dict[int, dict[str, Any]], draw: Any) -> list[list[Frame]]:
    """Units of frames in a client's order: header blocks whole and in stream order, each stream's
    DATA after its headers, streams interleaved at random."""
    opened, units = 0, []
    pending = {sid: list(s["data"]) for sid, s in streams.items()}
    order = sorted(streams)
    while opened < len(order) or any(pending.values()):
        ready = [sid for sid in order[:opened] if pending[sid]]
        if opened < len(order) and (not ready or draw(st.booleans())):
            units.append(streams[order[opened]]["head"])
            opened += 1
        else:
            sid = draw(st.sampled_from(ready))
            units.append([pending[sid].pop(0)])
    return units


def _blocks_contiguous(frames_: list[Frame]) -> bool:
    open_sid = None
    for f in frames_:
        if open_sid is not None and not (f.type == CONTINUATION and f.sid == open_sid):
            return False
        if f.type in (HEADERS, CONTINUATION):
            open_sid = None if f.flags & END_HEADERS else f.sid
    return True


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(requests=st.lists(_REQUEST, min_size=1, max_size=6), data=st.data())
def test_any_framing_and_interleaving_reaches_the_emulator_unchanged_once_and_in_order(
        requests: list[dict[str, Any]], data: Any) -> None:
    encoder, responder = hpack.Encoder(), hpack.Encoder()
    streams = _client_streams(requests, encoder)
    relay = Relay(decide=lambda name: THROTTLE if any(s["throttle"] and s["name"] == name for s in streams.values())
                  else ADMIT)
    relay.answer(settings(initial_window_size=1 << 20), frame(WINDOW_UPDATE, 0, 0, (1 << 24).to_bytes(4, "big")))
    units = _interleave(streams, data.draw)
    wire = b"".join(f.encode() for unit in units for f in unit)
    cuts = sorted(data.draw(st.lists(st.integers(1, max(len(wire) - 1, 1)), max_size=12)))
    responses: list[tuple[int, list[Frame], list[tuple[str, str]]]] = []
    rest = b""  # the second half of an emulator's header block: read after the client's next chunk
    for at, until in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        relay.send(wire[at:until])
        relay.answer(rest)
        rest = b""
        opened = {f.sid for f in frames(wire[:until][:_whole(wire[:until])]) if f.type == HEADERS}
        for sid in sorted(opened - {r[0] for r in responses}):
            if streams[sid]["response"] is not None:
                fields = [(":status", "200"), ("content-type", "application/grpc"), ("x-response", f"s{sid}")]
                block = bytes(responder.encode(fields))
                head = _header_frames(sid, block, streams[sid]["response"], priority=False, end=False)
                responses.append((sid, head, fields))
                raw = b"".join(f.encode() for f in head)
                split = len(head[0].encode()) if len(head) > 1 else len(raw) // 2
                relay.answer(rest + raw[:split])  # a read boundary inside the emulator's header block
                rest = raw[split:]
    relay.answer(rest)
    up, down = relay.up(), relay.down()
    # upstream: each stream's frames as sent, but a throttled or reset request's data
    for sid, s in streams.items():
        got = [f for f in up if f.sid == sid]
        sent_data = [f for f in s["data"] if f.type == DATA]
        if s["reset"]:
            expected = [*s["head"], *(sent_data if s["path"] == RUN_QUERY else []), s["data"][-1]]
        elif s["throttle"]:
            expected = [*s["head"], frame(RST_STREAM, 0, sid, (8).to_bytes(4, "big"))]
        else:
            expected = [*s["head"], *s["data"]]
        assert got == expected, sid
    assert [f.sid for f in up if f.type == HEADERS] == sorted(streams)
    assert _blocks_contiguous(up) and _blocks_contiguous(down)
    # the client's HPACK table stays the emulator's: every block decodes, the emulator's as it encoded them
    decoder, answers = hpack.Decoder(), {}
    blocks = iter(fields for _, _, fields in responses)
    block = b""
    for f in down:
        if f.type in (HEADERS, CONTINUATION):
            block += f.payload[5:] if f.flags & PRIORITY_FLAG else f.payload
            if f.flags & END_HEADERS:
                decoded = decoder.decode(block)
                block = b""
                if ("x-response", f"s{f.sid}") in decoded:
                    assert decoded == next(blocks)
                else:
                    answers[f.sid] = dict(decoded)["grpc-status"]
    throttled = {sid for sid, s in streams.items() if s["throttle"] and not s["reset"]}
    assert answers == dict.fromkeys(throttled, "8")
    # credit for every byte that never reached the emulator
    dropped = sum(len(f.payload) for sid, s in streams.items() if s["path"] == COMMIT and (s["reset"] or s["throttle"])
                  for f in s["data"] if f.type == DATA)
    assert sum(f.increment for f in down if f.type == WINDOW_UPDATE and f.sid == 0) == dropped + (1 << 24)
    counts = relay.proxy.counts.methods  # the proxy read every request's path through the client's HPACK table
    assert {p: c.requests for p, c in counts.items()} == {p: sum(s["path"] == p for s in streams.values())
                                                          for p in {s["path"] for s in streams.values()}}
    assert sorted(relay.model.offered) == sorted(s["name"] for s in streams.values()
                                                 if s["path"] == COMMIT and not s["reset"])


def _whole(wire: bytes) -> int:
    """The length of ``wire``'s whole frames."""
    pos = 0
    while len(wire) - pos >= 9 and pos + 9 + int.from_bytes(wire[pos:pos + 3], "big") <= len(wire):
        pos += 9 + int.from_bytes(wire[pos:pos + 3], "big")
    return pos
