"""The live exporter of ``keyramp run --metrics``, as ``keyramp.run_profiles`` takes it (a ``LiveService``)."""

from __future__ import annotations

from collections.abc import Callable

from keyramp.metrics._observer import MetricsObserver
from keyramp.metrics._server import MetricsServer, parse_address
from keyramp.metrics._state import MetricsState
from keyramp.results import RunObserver

__all__ = ["MetricsExporter"]


class MetricsExporter:
    """``run_profiles(..., metrics=MetricsExporter("127.0.0.1:9464"))``: the address is checked now,
    the server binds in ``start`` (after the run's checks, before any load) and serves the merged
    view until ``close``, which gives Prometheus a last scrape of the final values."""

    def __init__(self, address: str) -> None:
        self.host, self.port = parse_address(address)
        self.server: MetricsServer | None = None

    def start(self, *, say: Callable[[str], None]) -> RunObserver:
        state = MetricsState()
        self.server = MetricsServer(state, host=self.host, port=self.port)  # a taken port: UsageError (exit 2)
        say(f"metrics: {self.server.url}")
        return MetricsObserver(state)

    def close(self, *, say: Callable[[str], None]) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.close(say=say)
