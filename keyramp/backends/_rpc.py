"""The ``grpc`` driver's plumbing: the official protobuf messages sent over raw gRPC channels.

A ``GrpcBackend`` sends the same RPCs, with the same request messages, as the official
client driver (the protobuf types that google-cloud-datastore, -firestore and -bigtable
ship), but builds them directly instead of through proto-plus, api-core wrappers and
client objects: 70–160 µs of CPU per operation instead of 300–600 (docs/performance.md).
What does not change between calls is made once per user: the channel, one stub per
method, the metadata (routing headers, the emulator's credentials header, as
``grpc.aio.Metadata``), table/database names, partition ids, query filters. Constant
request parts stay built messages, not serialised bytes: protobuf's C implementation
builds a whole ``MutateRowRequest`` in 1.6 µs, while cached prefix bytes plus the rest
serialised cost 2.5–3.2 µs in Python (measured).

Like the client driver: one channel per user; one attempt per operation (retries off,
also gRPC's transparent retries), the cell's deadline on every RPC; emulators get an
insecure channel and no credentials, the real service TLS and Application Default
Credentials. Errors are the RPC errors themselves (``grpc.RpcError`` with a status code),
which ``keyramp.backends._errors.classify`` names like the client driver's.

Two ways to wait for a call (``GrpcBackend.executor``): ``"aio"`` (default: ``grpc.aio``
on one loop thread behind the gevent hub, ``keyramp.backends._aio``) and ``"gevent"``
(gRPC's synchronous API under ``grpc.experimental.gevent``, as the client driver uses it;
kept for the benchmark that compares the two).
"""

from __future__ import annotations

import datetime as dt
import platform
import re
import struct
import time
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import grpc

from keyramp.backends._base import Backend, Target
from keyramp.core import __version__

__all__ = [
    "CHANNEL_OPTIONS",
    "CloudAuth",
    "GrpcBackend",
    "Method",
    "RpcChannel",
    "Service",
    "StatusError",
    "filter_key",
    "open_channel",
    "routing",
]

#: Unlimited message sizes, as the official clients' channels; no transparent retries.
CHANNEL_OPTIONS: Final = (
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
    ("grpc.enable_retries", 0),
)
_API_CLIENT: Final = ("x-goog-api-client",
                      f"gl-python/{platform.python_version()} grpc/{grpc.__version__} keyramp/{__version__}")
#: Refresh an access token this long before it expires.
_TOKEN_MARGIN_S: Final = 300.0
_SIMPLE_FIELD: Final = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")


@dataclass(frozen=True, kw_only=True)
class Service:
    """One store's gRPC API: where the real service is, and how each kind of endpoint is reached."""

    #: ``host`` of the real service (port 443, TLS).
    host: str
    #: OAuth scopes for Application Default Credentials on the real service.
    scopes: tuple[str, ...]
    #: Extra metadata an emulator expects on every call (Firestore: ``Bearer owner``).
    emulator_metadata: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Method:
    """One RPC: its path and the official protobuf classes of its request and response."""

    path: str
    request: Any
    response: Any
    stream: bool = False  # server-streaming: the call returns every response, in order


def routing(**params: str) -> tuple[str, str]:
    """The ``x-goog-request-params`` routing header the official clients send (values URL-encoded)."""
    return ("x-goog-request-params", "&".join(f"{k}={urllib.parse.quote(v, safe='/')}" for k, v in params.items()))


def field_path(name: str) -> str:
    """A Firestore field path for a top-level field: simple names as is, others back-quoted."""
    if _SIMPLE_FIELD.match(name):
        return name
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def filter_key(field: str | None, op: str, value: Any) -> tuple[Any, ...] | None:
    """A cache key for the filter ``field op value``, or None when ``value`` is not hashable.

    The value's type is part of it (``1``, ``1.0`` and ``True`` are equal but encode
    differently), and a float is keyed by its bits (``0.0 == -0.0``; NaN is never equal).
    """
    if isinstance(value, float):
        return field, op, type(value), struct.pack(">d", value)
    try:
        hash(value)
    except TypeError:
        return None
    return field, op, type(value), value


class StatusError(grpc.RpcError):
    """A non-OK status inside a successful response (a Bigtable ``MutateRows`` entry).

    A ``grpc.RpcError`` with ``code()``, so the recorder classifies it like any failed RPC.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self._code = _STATUS_BY_NUMBER.get(code, grpc.StatusCode.UNKNOWN)
        self._message = message

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._message


_STATUS_BY_NUMBER: Final = {code.value[0]: code for code in grpc.StatusCode}


class CloudAuth:
    """Application Default Credentials as a per-call ``authorization`` header.

    The token is refreshed (in the calling greenlet) a few minutes before it expires; a
    header rather than gRPC call credentials, because call-credential plugins run on a
    thread gRPC starts, which monkey-patching turns into a greenlet the loop thread cannot run.
    """

    def __init__(self, scopes: Sequence[str], credentials: Any = None) -> None:
        import google.auth  # deferred: start-up cost (google.auth: cloud targets only)
        import google.auth.transport.requests  # deferred: start-up cost (google.auth: cloud targets only)

        if credentials is None:
            credentials, _ = google.auth.default(scopes=list(scopes))
        self._credentials = credentials
        self._request = google.auth.transport.requests.Request()
        self._header: tuple[tuple[str, str], ...] = ()
        self._refresh_at = 0.0

    def metadata(self) -> tuple[tuple[str, str], ...]:
        if time.monotonic() >= self._refresh_at:
            self._refresh()
        return self._header

    def _refresh(self) -> None:
        creds = self._credentials
        creds.refresh(self._request)
        expiry = getattr(creds, "expiry", None)  # naive UTC (google-auth's convention) or None
        if expiry is None:
            renew_in = 3000.0
        else:
            left = (expiry - dt.datetime.now(dt.UTC).replace(tzinfo=None)).total_seconds()
            renew_in = left - min(_TOKEN_MARGIN_S, left / 2)  # short-lived tokens: at half-life
        self._refresh_at = time.monotonic() + max(1.0, renew_in)
        self._header = (("authorization", f"Bearer {creds.token}"),)


class RpcChannel(ABC):
    """One user's channel to one store and its method stubs."""

    def __init__(self, target: Target, service: Service, methods: Sequence[Method]) -> None:
        self.timeout = target.timeout_s
        self.cloud = target.endpoint is None
        self._address = f"{service.host}:443" if self.cloud else str(target.endpoint)
        self._auth = CloudAuth(service.scopes) if self.cloud else None
        self._extra = () if self.cloud else service.emulator_metadata
        self._methods = tuple(methods)

    def metadata(self, *headers: tuple[str, str]) -> Any:
        """The constant metadata of a call, made once: the given routing headers, the client
        header, the emulator's credentials header. (Cloud access tokens are added per call.)"""
        return self._prepare((*headers, _API_CLIENT, *self._extra))

    def _prepare(self, metadata: tuple[tuple[str, str], ...]) -> Any:
        """Metadata in the form the channel's calls take without converting it again."""
        return metadata

    def _with_auth(self, metadata: Any) -> Any:
        return self._prepare((*metadata, *self._auth.metadata())) if self._auth is not None else metadata

    @abstractmethod
    def unary(self, method: Method, request: Any, metadata: Any) -> Any:
        """One unary call; returns the response message or raises the RPC error."""

    @abstractmethod
    def stream(self, method: Method, request: Any, metadata: Any) -> list[Any]:
        """One server-streaming call; returns all its responses or raises the RPC error."""

    @abstractmethod
    def close(self) -> None:
        """Close the channel."""


class GeventChannel(RpcChannel):
    """gRPC's synchronous API; under gevent each blocking wait goes through gevent's thread pool."""

    def __init__(self, target: Target, service: Service, methods: Sequence[Method]) -> None:
        super().__init__(target, service, methods)
        if self.cloud:
            self._channel = grpc.secure_channel(self._address, grpc.ssl_channel_credentials(), CHANNEL_OPTIONS)
        else:
            self._channel = grpc.insecure_channel(self._address, CHANNEL_OPTIONS)
        self._stubs = {m.path: _stub(self._channel, m) for m in self._methods}

    def unary(self, method: Method, request: Any, metadata: Any) -> Any:
        return self._stubs[method.path](request, timeout=self.timeout, metadata=self._with_auth(metadata))

    def stream(self, method: Method, request: Any, metadata: Any) -> list[Any]:
        return list(self._stubs[method.path](request, timeout=self.timeout, metadata=self._with_auth(metadata)))

    def close(self) -> None:
        self._channel.close()


class AioChannel(RpcChannel):
    """``grpc.aio`` on the process's loop (``keyramp.backends._aio``); the calling greenlet waits,
    the hub runs on. Another OS thread's calls take gRPC's synchronous API (``GeventChannel``)."""

    def __init__(self, target: Target, service: Service, methods: Sequence[Method]) -> None:
        from keyramp.backends._aio import _get_ident, shared_executor  # deferred: start-up cost (gevent: aio only)

        super().__init__(target, service, methods)
        self._target, self._service = target, service
        self._executor = shared_executor()
        self._run = self._executor.run
        self._owner = self._executor._thread
        self._thread_id = _get_ident
        self._sync: GeventChannel | None = None
        self._channel, self._stubs = self._run(self._open())

    def _prepare(self, metadata: tuple[tuple[str, str], ...]) -> Any:
        import grpc.aio  # deferred: start-up cost (grpc.aio)

        return grpc.aio.Metadata(*metadata)  # a tuple would be converted on every call

    async def _open(self) -> tuple[Any, dict[str, Any]]:
        import grpc.aio  # deferred: start-up cost (grpc.aio)

        if self.cloud:
            channel = grpc.aio.secure_channel(self._address, grpc.ssl_channel_credentials(), CHANNEL_OPTIONS)
        else:
            channel = grpc.aio.insecure_channel(self._address, CHANNEL_OPTIONS)
        return channel, {m.path: _stub(channel, m) for m in self._methods}

    def _foreign(self) -> GeventChannel:
        """The channel for calls from a thread other than the executor's (made on first use)."""
        if self._sync is None:
            self._sync = GeventChannel(self._target, self._service, self._methods)
        return self._sync

    def unary(self, method: Method, request: Any, metadata: Any) -> Any:
        if self._thread_id() != self._owner:
            return self._foreign().unary(method, request, tuple(metadata))
        return self._executor.unary(self._stubs[method.path], request, self.timeout, self._with_auth(metadata))

    def stream(self, method: Method, request: Any, metadata: Any) -> list[Any]:
        if self._thread_id() != self._owner:
            return self._foreign().stream(method, request, tuple(metadata))
        return self._run(_stream(self._stubs[method.path], request, self.timeout, self._with_auth(metadata)))

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
        if not self._executor.closed and self._thread_id() == self._owner:
            self._run(self._channel.close())


async def _stream(stub: Any, request: Any, timeout: float, metadata: Any) -> list[Any]:
    return [response async for response in stub(request, timeout=timeout, metadata=metadata)]


def _stub(channel: Any, method: Method) -> Any:
    make = channel.unary_stream if method.stream else channel.unary_unary
    return make(method.path, request_serializer=method.request.SerializeToString,
                response_deserializer=method.response.FromString)


_CHANNELS: Final[dict[str, type[RpcChannel]]] = {"aio": AioChannel, "gevent": GeventChannel}


def open_channel(target: Target, service: Service, methods: Sequence[Method], *, executor: str = "aio") -> RpcChannel:
    """A channel of the given kind (``"aio"`` or ``"gevent"``) to ``target``; ``"aio"`` on a thread
    other than the ``grpc.aio`` executor's is ``"gevent"`` (its loop waits on that thread's hub)."""
    try:
        kind = _CHANNELS[executor]
    except KeyError:
        raise ValueError(f"unknown gRPC executor {executor!r} (one of: {', '.join(_CHANNELS)})") from None
    if kind is AioChannel:
        from keyramp.backends._aio import owns_thread  # deferred: start-up cost (gevent: aio drivers only)

        if not owns_thread():  # the loop belongs to another OS thread's hub: wait here instead
            kind = GeventChannel
    return kind(target, service, methods)


class GrpcBackend(Backend):
    """Base of the raw-gRPC drivers: one channel per instance (= per user)."""

    #: The store's gRPC API and the methods the driver calls.
    service: ClassVar[Service]
    methods: ClassVar[tuple[Method, ...]]
    #: How a call waits: ``"aio"`` (default) or ``"gevent"`` (see the module docstring).
    executor: ClassVar[str] = "aio"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self.rpc = open_channel(target, self.service, self.methods, executor=self.executor)

    def close(self) -> None:
        self.rpc.close()
