"""``keyramp run --metrics HOST:PORT``: Prometheus text format at ``/metrics`` while the run lasts.

Served by gevent's WSGI server inside the run process (the load already runs on gevent:
a scrape is one more greenlet, no thread). Binding happens before any load, so a taken
port is bad input (exit 2). On close, if Prometheus has been scraping, the server waits
(bounded) for one scrape that saw the last cell's final values before it goes away.
"""

from __future__ import annotations

import errno
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from gevent.event import Event
from gevent.pywsgi import WSGIServer

from keyramp.core import UsageError
from keyramp.metrics._exposition import CONTENT_TYPE, render
from keyramp.metrics._state import MetricsState

__all__ = ["DEFAULT_HOST", "MetricsServer", "parse_address"]

DEFAULT_HOST = "127.0.0.1"
#: Upper bound of the wait for a last scrape (Prometheus' default interval is 15 s, 1 min is common).
_MAX_FINAL_WAIT_S = 65.0
_ADDRESS = re.compile(r"^(?:(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]*):)?(?P<port>\d{1,5})$")


def parse_address(text: str, *, flag: str = "--metrics") -> tuple[str, int]:
    """``PORT``, ``:PORT``, ``HOST:PORT`` or ``[V6]:PORT`` -> (host, port); host 127.0.0.1 by default."""
    match = _ADDRESS.match(text.strip())
    if match is None or not 0 <= int(match["port"]) <= 65535:
        raise UsageError(f"{flag}: expected HOST:PORT or PORT (e.g. 127.0.0.1:9464), got {text!r}")
    host = (match["host"] or "").strip("[]") or DEFAULT_HOST
    return host, int(match["port"])


class MetricsServer:
    """The exporter's HTTP side. ``state`` is the ``MetricsState`` the runner feeds."""

    def __init__(self, state: MetricsState, *, host: str, port: int) -> None:
        self.state = state
        #: (state version, exposition) of the last scrape: an unchanged state is not rendered again.
        self._body: tuple[int, bytes] = (-1, b"")
        #: (monotonic time, state version) of each scrape.
        self._scrapes: list[tuple[float, int]] = []
        self._scraped = Event()
        self._server = WSGIServer((host, port), self._app, log=None, error_log=None)
        try:
            self._server.start()  # binds now: before any load
        except OSError as exc:
            where = f"{host}:{port}"
            if exc.errno == errno.EADDRINUSE:
                raise UsageError(f"--metrics {where}: address already in use") from None
            raise UsageError(f"--metrics {where}: cannot listen: {exc.strerror or exc}") from None
        address = self._server.address
        assert isinstance(address, tuple)  # bound to (host, port) above
        self.host, self.port = address[:2]

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            version = self.state.version
            if self._body[0] != version:
                self._body = (version, render(self.state))
            body = self._body[1]
            start_response("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))])
            self._scrapes.append((time.monotonic(), version))
            del self._scrapes[:-8]
            self._scraped.set()
            return [body]
        if path == "/":
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"keyramp metrics exporter: see /metrics\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found: see /metrics\n"]

    def final_scrape_wait_s(self) -> float:
        """How long ``close`` waits for a scrape of the final values: 0 if nobody scrapes (or the
        last scrape already saw them), else up to twice the observed scrape interval."""
        if len(self._scrapes) < 2 or self._scrapes[-1][1] == self.state.version:
            return 0.0
        interval = self._scrapes[-1][0] - self._scrapes[-2][0]
        return min(2.0 * interval + 1.0, _MAX_FINAL_WAIT_S)

    def close(self, *, wait_for_scrape: bool = True, say: Callable[[str], None] | None = None) -> None:
        wait = self.final_scrape_wait_s() if wait_for_scrape else 0.0
        if wait > 0:
            if say is not None:
                say(f"metrics: waiting up to {wait:.0f} s for a last scrape of {self.url}")
            version = self.state.version
            deadline = time.monotonic() + wait
            while self._scrapes[-1][1] < version and time.monotonic() < deadline:
                self._scraped.clear()
                self._scraped.wait(timeout=max(0.0, deadline - time.monotonic()))
        self._server.stop(timeout=1.0)
