"""HTTP/2 frames for the store proxy's relay tests: build them, parse a byte stream back into
them, and a transport that records what the proxy writes (tests/targets/test_h2.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import hpack

__all__ = ["Frame", "Sink", "data_frames", "frame", "frames", "grpc_message", "request_headers", "settings"]

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 2, 3, 4, 6, 7, 8, 9
END_STREAM, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x4, 0x8, 0x20


@dataclass(frozen=True)
class Frame:
    type: int
    flags: int
    sid: int
    payload: bytes

    def encode(self) -> bytes:
        return (len(self.payload).to_bytes(3, "big") + bytes((self.type, self.flags)) + self.sid.to_bytes(4, "big")
                + self.payload)

    @property
    def increment(self) -> int:
        assert self.type == WINDOW_UPDATE
        return int.from_bytes(self.payload, "big") & 0x7FFFFFFF


def frame(ftype: int, flags: int, sid: int, payload: bytes = b"") -> Frame:
    return Frame(ftype, flags, sid, payload)


def frames(data: bytes | bytearray) -> list[Frame]:
    """Every whole frame of ``data`` (a leftover partial frame fails: the proxy writes only whole ones)."""
    out, pos = [], 0
    while pos < len(data):
        assert len(data) - pos >= 9, f"a partial frame header at {pos}"
        end = pos + 9 + int.from_bytes(data[pos:pos + 3], "big")
        assert end <= len(data), f"a partial frame at {pos}"
        out.append(Frame(data[pos + 3], data[pos + 4], int.from_bytes(data[pos + 5:pos + 9], "big") & 0x7FFFFFFF,
                         bytes(data[pos + 9:end])))
        pos = end
    return out


def settings(**values: int) -> Frame:
    ids = {"header_table_size": 1, "initial_window_size": 4, "max_frame_size": 5}
    return frame(SETTINGS, 0, 0, b"".join(ids[k].to_bytes(2, "big") + v.to_bytes(4, "big") for k, v in values.items()))


def grpc_message(body: bytes, *, compressed: bool = False) -> bytes:
    return bytes((1 if compressed else 0,)) + len(body).to_bytes(4, "big") + body


def request_headers(encoder: hpack.Encoder, path: str, *, timeout: str | None = None,
                    extra: tuple[tuple[str, str], ...] = (), huffman: bool = True) -> bytes:
    """A gRPC request's header block, as a client's HPACK encoder writes it (its table grows)."""
    fields: list[Any] = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1"),
                         ("content-type", "application/grpc"), ("te", "trailers"), *extra]
    if timeout is not None:
        fields.append(("grpc-timeout", timeout))
    return bytes(encoder.encode(fields, huffman=huffman))


def data_frames(sid: int, message: bytes, sizes: list[int], *, end: bool = True, pad: int = 0) -> list[Frame]:
    """``message`` as DATA frames of ``sizes`` (the last takes the rest), END_STREAM on the last."""
    out, pos = [], 0
    cuts = [s for s in sizes if s > 0]
    while True:
        size = cuts.pop(0) if cuts else len(message) - pos
        chunk, pos = message[pos:pos + size], pos + size
        last = pos >= len(message)
        flags = (END_STREAM if last and end else 0) | (PADDED if pad else 0)
        payload = (bytes((pad,)) + chunk + b"\0" * pad) if pad else chunk
        out.append(frame(DATA, flags, sid, payload))
        if last:
            return out


class Sink:
    """A transport that records what is written to it."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False

    def write(self, data: bytes) -> None:
        self.data += data

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.data += chunk

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def frames(self) -> list[Frame]:
        return frames(self.data)
