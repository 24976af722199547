"""Reading the request headers a gRPC client sends, without re-encoding anything (RFC 7541).

The store proxy passes HTTP/2 frames through as they are, so the emulator decodes the client's
header blocks with its own HPACK state; the proxy only *mirrors* that decoder's dynamic table
to read each request's ``:path`` and ``grpc-timeout``. This reader keeps the table exactly (every
insertion and eviction, sizes from the decoded lengths) but builds no header list: a block of
a steady gRPC stream is a few indexed references and one literal (the timeout), tens of
microseconds less than a general decoder per request. Huffman strings are decoded with the
``hpack`` package's table.
"""

from __future__ import annotations

from collections import deque
from typing import Final

from hpack.exceptions import HPACKDecodingError
from hpack.huffman_table import decode_huffman
from hpack.table import HeaderTable

__all__ = ["HeaderReader", "HpackError"]

_STATIC: Final = HeaderTable.STATIC_TABLE
_WANTED: Final = frozenset({b":path", b"grpc-timeout"})


class HpackError(ValueError):
    """A header block this reader cannot follow (the connection can no longer be read)."""


class HeaderReader:
    """The client->server HPACK decoder state of one HTTP/2 connection."""

    __slots__ = ("_dynamic", "_max", "_size")

    def __init__(self, max_size: int = 4096) -> None:
        self._dynamic: deque[tuple[bytes, bytes]] = deque()
        self._size = 0
        self._max = max_size

    def _entry(self, index: int) -> tuple[bytes, bytes]:
        if index <= 0:
            raise HpackError("index 0")
        if index <= len(_STATIC):
            return _STATIC[index - 1]
        at = index - len(_STATIC) - 1
        if at >= len(self._dynamic):
            raise HpackError(f"index {index} beyond the table")
        return self._dynamic[at]

    def _add(self, name: bytes, value: bytes) -> None:
        size = len(name) + len(value) + 32
        self._dynamic.appendleft((name, value))
        self._size += size
        self._evict()

    def _evict(self) -> None:
        while self._size > self._max and self._dynamic:
            name, value = self._dynamic.pop()
            self._size -= len(name) + len(value) + 32

    def read(self, block: bytes) -> tuple[bytes | None, bytes | None]:
        """``(path, grpc_timeout)`` of a header block (None when absent); updates the table.
        Raises ``HpackError`` (and nothing else) on bytes it cannot follow."""
        try:
            return self._read(block)
        except (IndexError, HPACKDecodingError) as exc:  # a truncated field, a bad Huffman string
            raise HpackError(str(exc)) from None

    def _read(self, block: bytes) -> tuple[bytes | None, bytes | None]:
        path = timeout = None
        pos, end = 0, len(block)
        while pos < end:
            first = block[pos]
            if first & 0x80:  # indexed field
                index, pos = _integer(block, pos, 7)
                name, value = self._entry(index)
            elif first & 0x40:  # literal with incremental indexing
                name, value, pos = self._literal(block, pos, 6)
                self._add(name, value)
            elif first & 0x20:  # dynamic table size update
                self._max, pos = _integer(block, pos, 5)
                self._evict()
                continue
            else:  # literal without indexing / never indexed
                name, value, pos = self._literal(block, pos, 4)
            if name in _WANTED:
                if name == b":path":
                    path = value
                else:
                    timeout = value
        return path, timeout

    def _literal(self, block: bytes, pos: int, prefix: int) -> tuple[bytes, bytes, int]:
        index, pos = _integer(block, pos, prefix)
        if index:
            name = self._entry(index)[0]
        else:
            name, pos = _string(block, pos)
        value, pos = _string(block, pos)
        return name, value, pos


def _integer(block: bytes, pos: int, prefix: int) -> tuple[int, int]:
    mask = (1 << prefix) - 1
    value = block[pos] & mask
    pos += 1
    if value < mask:
        return value, pos
    shift = 0
    while True:
        if pos >= len(block):
            raise HpackError("truncated integer")
        byte = block[pos]
        pos += 1
        value += (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _string(block: bytes, pos: int) -> tuple[bytes, int]:
    huffman = block[pos] & 0x80
    length, pos = _integer(block, pos, 7)
    raw = block[pos:pos + length]
    if len(raw) != length:
        raise HpackError("truncated string")
    return (decode_huffman(raw) if huffman else bytes(raw)), pos + length
