"""What a Python workload's own code really sent: the requests on its official client's channel.

A workload's ``@keyramp.op`` methods choose their documents, rows, fields and indexes
themselves; the key they return says where one of them landed, not what was written. So the
client a workload user gets (``self.client``) talks over a channel with a ``Capture``
interceptor (each store's ``_client.py`` puts it there when ``Target.capture`` is set): it keeps
each request of the current operation, undecoded (a list append), and the recorder decodes
only those of the operations it samples, through the store's ``StoreSpec.capture`` decoder
(``backends/<store>/_capture.py``): the document or row key, the kind of access (an insert, a
write, a field transform, a delete, a read, a query) and the index entries a write creates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import grpc

from keyramp.core import INDEX_FIELD_SEP, key_sort_text

__all__ = ["Capture", "CapturedAccess", "Decoder", "index_entry", "value_text"]


@dataclass(frozen=True, slots=True)
class CapturedAccess:
    """One key an operation's request touched: ``kind`` (``keyramp.core._types.ACCESS_KINDS``), ``key`` as
    keyramp's sort text (the store's order); ``index``: the index entries it writes (``index_entry``)."""

    kind: str
    key: str
    index: tuple[str, ...] = ()


#: A store's decoder: (gRPC method, request) pairs of one operation and the cell's namespace -> accesses.
Decoder = Callable[[Sequence[tuple[str, Any]], str], list[CapturedAccess]]


def value_text(value: Any) -> str | None:
    """A field value as sort text (the index's order for one type), or None for a value no single-field
    index orders (maps and arrays are walked by the decoders; anything else is left out)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return key_sort_text(value) if value >= 0 else f"-{-value:020d}"
    if isinstance(value, float):
        return f"{value:032.6f}" if value >= 0 else None
    if isinstance(value, datetime):
        return f"{int(value.timestamp() * 1000):020d}"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    return None


def index_entry(field: str, value: str, key: str) -> str:
    """An index entry: the field, then the value and the document key (entries of one field sort by
    value, then by key: what the index range holds)."""
    return f"{field}{INDEX_FIELD_SEP}{value}\x00{key}"


class Capture(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
              grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """A client channel's requests since the last ``take``: ``(method, request)``, undecoded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def take(self) -> list[tuple[str, Any]]:
        """The requests of the operation that just ended (and a fresh list for the next)."""
        calls, self.calls = self.calls, []
        return calls

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self.calls.append((details.method, request))
        return continuation(details, request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        self.calls.append((details.method, request))
        return continuation(details, request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(details, requests)  # streaming writes: not decoded (the clients' unary calls are)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(details, requests)

    def channel(self, channel: grpc.Channel) -> grpc.Channel:
        """``channel`` with this capture on it."""
        return grpc.intercept_channel(channel, self)
