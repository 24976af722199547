"""Live Prometheus metrics of a run (``keyramp run --metrics HOST:PORT``), docs/metrics.md.

``MetricsState`` accumulates what the recorder closes each second (it is an
``IntervalSink``, teed with the run directory) plus the run/cell lifecycle, which
``MetricsObserver`` (a run observer) feeds it;
``MetricsServer`` serves it as the Prometheus text format at ``/metrics``.
"""

from __future__ import annotations

from keyramp.metrics._collector import StateCollector
from keyramp.metrics._observer import MetricsObserver
from keyramp.metrics._server import MetricsServer, parse_address
from keyramp.metrics._state import BUCKETS_S, MetricsState

__all__ = ["BUCKETS_S", "MetricsObserver", "MetricsServer", "MetricsState", "StateCollector", "parse_address"]
