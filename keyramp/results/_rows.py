"""What a recorder hands on every second: ``TimeseriesRow`` (one per op and second, the
``timeseries`` file's row) and the ``IntervalSink`` protocol its receivers implement (the run
directory, the metrics state, Locust's stats, a test list). Part of the run-directory schema,
so it lives with the results the runner writes through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from keyramp.core import KeySample
from keyramp.results._exceptions import ExceptionExample

if TYPE_CHECKING:
    from hdrh.histogram import HdrHistogram

__all__ = ["IntervalSink", "TimeseriesRow"]


@dataclass(slots=True)
class TimeseriesRow:
    cell: str
    op: str
    second: int
    count: int
    errors: int
    #: Latency of the operations completed in that second; None when none completed (a gap, not 0 ms).
    p50_ms: float | None
    p99_ms: float | None
    service_p99_ms: float | None
    max_ms: float | None
    target_ops_per_s: float | None
    late: int
    dropped: int
    error_classes: Mapping[str, int]
    #: The workload's own exceptions first seen in this second (``run/_exceptions.py``).
    exceptions: tuple[ExceptionExample, ...] = ()
    #: Latency p95 of the operations completed in that second (None: none completed).
    p95_ms: float | None = None
    #: Operations in service on average over the second (Little's law: the service time of those
    #: completed in it over its length); None when none completed.
    in_flight: float | None = None


class IntervalSink(Protocol):
    """Where a recorder's intervals go (the run directory writer, or a test list)."""

    def interval(
        self, *, cell: str, op: str, start_s: float, length_s: float, latency: HdrHistogram, service: HdrHistogram
    ) -> None: ...

    def timeseries(self, rows: Sequence[TimeseriesRow]) -> None: ...

    def keys(self, cell: str, samples: Sequence[KeySample]) -> None: ...

    def flush(self) -> None: ...
