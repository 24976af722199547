"""What an HTTP/2 session (``_h2.H2Session``) asks of the store proxy it serves: the proxy
(``_proxy.StoreProxy``) sits above the session, so the session sees it through this protocol."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from keyramp.backends import Rpc, Throttle
    from keyramp.targets._proxy_stats import MethodCounts

__all__ = ["Relay"]


class Relay(Protocol):
    """What a session asks of the proxy it serves (``_proxy.StoreProxy``, a module above this one)."""

    @property
    def model(self) -> object: ...

    def route(self, path: str) -> tuple[Rpc, MethodCounts]: ...

    def offer(self, decode: Callable[[bytes], Any] | None, body: bytes | None, counts: MethodCounts) -> Any: ...

    def hold(self, decision: Any, counts: MethodCounts, deadline: float | None) -> tuple[float, Throttle | None]: ...
