"""Live Prometheus metrics of a run (``keyramp run --metrics HOST:PORT``), docs/metrics.md.

``MetricsState`` accumulates what the recorder closes each second (it is an
``IntervalSink``, teed with the run directory) plus the run/cell lifecycle, which
``MetricsObserver`` (a run observer) feeds it;
``render`` writes it in the Prometheus text format and ``MetricsServer`` serves that at
``/metrics``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keyramp.metrics._exporter import MetricsExporter
from keyramp.metrics._exposition import render
from keyramp.metrics._observer import MetricsObserver
from keyramp.metrics._server import MetricsServer, parse_address
from keyramp.metrics._state import BUCKETS_S, MetricsState

if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
