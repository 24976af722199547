"""What a store-like target needs to know about a store: its RPCs, how a request becomes an
operation of the store model, and what the real store answers when it throttles one.

The store proxy (``keyramp.targets._proxy``) forwards every request to the official emulator
unchanged; it *reads a copy* to offer it to the per-operation store model. How to read one is
store knowledge, so each store package declares it: ``StoreSpec.proxy`` (a ``ProxySpec``)
names the store's decoder module (``<store>/_decode.py``, loaded on first use) and the status
the store answers for each throttling cause, each with the Google page it comes from
(docs/fidelity.md).

The decoders build the model's own ``Access`` and ``StoreOp`` objects: the proxy hands them
the constructors (``ModelTypes``), so nothing here imports the model, which sits above the
stores.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

__all__ = [
    "DecodeOptions",
    "ModelTypes",
    "ProxySpec",
    "Rpc",
    "RpcTable",
    "Throttle",
    "sortable_double",
    "sortable_int",
    "timestamp_order",
    "value_order",
]


class _AccessFactory(Protocol):
    def __call__(self, space: str, key: bytes, write: bool, rows: int = 1) -> Any: ...


class _OpFactory(Protocol):
    def __call__(self, accesses: tuple[Any, ...], units: tuple[bytes, ...] = (), kind: str = "write") -> Any: ...


@dataclass(frozen=True, kw_only=True)
class ModelTypes:
    """The store model's constructors (``keyramp.storemodel.Access`` and ``StoreOp``), handed in."""

    access: _AccessFactory
    op: _OpFactory


@dataclass(frozen=True, kw_only=True)
class DecodeOptions:
    """What a decoder cannot read from a request.

    ``exempt``: field paths the application exempted from single-field indexes (Firestore sets
    exemptions per collection on the service, never in a write: the proxy is told them).
    ``seed``: for the ids a store allocates itself (Datastore's scattered ids)."""

    exempt: frozenset[str] = frozenset()
    seed: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Rpc:
    """One RPC of the store's API: its path, its streaming shape, and how its request becomes
    a store-model operation (``decode(request_bytes) -> StoreOp``; ``None``: not modelled,
    forwarded and counted). ``what`` labels it in the proxy's counts."""

    path: str
    what: str
    request_stream: bool = False
    response_stream: bool = False
    decode: Callable[[bytes], Any] | None = None


#: Path -> ``Rpc``: every RPC a store's decoder knows (the proxy passes unknown ones through).
RpcTable = Mapping[str, Rpc]


@dataclass(frozen=True, kw_only=True)
class Throttle:
    """The answer the real store gives an operation it throttles: a gRPC status name, its
    message, and the Google page that documents it."""

    code: str
    message: str
    source: str


@dataclass(frozen=True, kw_only=True)
class ProxySpec:
    """How the store proxy reads this store's requests and answers the ones the model throttles."""

    #: ``"module:function"``; ``function(options, types) -> RpcTable`` (imported on first use).
    decoder: str
    #: Throttling cause (``"key"``, ``"range"``, ``"node"``) -> the store's answer.
    throttle: Mapping[str, Throttle]
    #: The answer when the model's delay reaches the client's own deadline.
    deadline: Throttle
    #: Everything else the store's proxy reads from the spec (docs/fidelity.md), by name.
    notes: Mapping[str, str] = field(default_factory=dict)

    def rpcs(self, options: DecodeOptions, types: ModelTypes) -> RpcTable:
        """The store's RPC table, decoders bound to ``options`` and the model's ``types``."""
        module, _, attr = self.decoder.partition(":")
        make: Callable[[DecodeOptions, ModelTypes], RpcTable] = getattr(importlib.import_module(module), attr)
        return make(options, types)

    def answer(self, cause: str | None) -> Throttle:
        """The store's answer for ``cause`` (an unknown cause: the first one declared)."""
        found = self.throttle.get(cause or "")
        return found if found is not None else next(iter(self.throttle.values()))


_DOUBLE: Final = struct.Struct(">d")
_U64: Final = struct.Struct(">Q")
_SIGN: Final = 1 << 63
_ALL: Final = (1 << 64) - 1


def sortable_double(value: float) -> bytes:
    """8 bytes whose unsigned byte order is ``value``'s numeric order (negatives flipped)."""
    bits = _U64.unpack(_DOUBLE.pack(value))[0]
    return _U64.pack(bits ^ _ALL if bits & _SIGN else bits | _SIGN)


def sortable_int(value: int) -> bytes:
    """8 bytes whose unsigned byte order is a signed 64-bit ``value``'s order."""
    return _U64.pack((value + _SIGN) & _ALL)


#: Index keys hold at most this much of a string or bytes value: enough for its place in the range.
VALUE_BYTES: Final = 64


def timestamp_order(seconds: int, nanos: int) -> bytes:
    """A timestamp as index-key bytes (its type's byte, then seconds and nanoseconds in order)."""
    return b"\x04" + sortable_int(seconds) + nanos.to_bytes(4, "big")


def value_order(value: Any, *, bytes_field: str, ref_field: str, ref_key: Callable[[Any], bytes]) -> bytes:
    """A scalar ``Value`` (Firestore's or Datastore's proto) as bytes in the stores' shared value
    order: type first, then the value. The two protos differ only in the names of their bytes and
    reference fields (``bytes_field``, ``ref_field``; ``ref_key`` orders a reference)."""
    kind = value.WhichOneof("value_type")
    if kind == "integer_value":
        return b"\x03" + sortable_double(float(value.integer_value))
    if kind == "double_value":
        return b"\x03" + sortable_double(value.double_value)
    if kind == "string_value":
        return b"\x05" + value.string_value.encode()[:VALUE_BYTES]
    if kind == "timestamp_value":
        return timestamp_order(value.timestamp_value.seconds, value.timestamp_value.nanos)
    if kind == "boolean_value":
        return b"\x02\x01" if value.boolean_value else b"\x02\x00"
    if kind == bytes_field:
        return b"\x06" + getattr(value, bytes_field)[:VALUE_BYTES]
    if kind == ref_field:
        return b"\x07" + ref_key(getattr(value, ref_field))
    if kind == "geo_point_value":
        return b"\x08" + sortable_double(value.geo_point_value.latitude)
    return b"\x01"  # null, and anything newer this keyramp does not know
