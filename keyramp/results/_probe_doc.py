"""A scenario probe's result (``CellSummary.probe``) as a typed document.

The probes (``keyramp.probes``) sit below results and return plain mappings; the runner reads
them through ``ProbeResult`` at that edge, and readers (the scenario report) take the typed
parts. ``result`` is one part per probe, chosen by ``name``; a probe this keyramp does not
know keeps its figures in a bare ``ProbeFigures`` (every key in ``extra``), so an older or
newer run still reads and writes back unchanged. Every figure is optional: a figure a probe
did not record is None, never a failed read of the whole summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

from keyramp.results._doc import DocError, JsonDoc

__all__ = [
    "BatchFigures",
    "ConsistencyFigures",
    "ContentionFigures",
    "DeletedRangeFigures",
    "FanoutFigures",
    "HygieneCase",
    "HygieneFigures",
    "OffsetCursorFigures",
    "ProbeError",
    "ProbeFigures",
    "ProbeLatency",
    "ProbeResult",
    "ProjectionFigures",
    "VisibleAfter",
]


@dataclass(kw_only=True)
class ProbeFigures(JsonDoc):
    """A probe's measured figures; a probe without its own part keeps them all as they were."""


@dataclass(kw_only=True)
class VisibleAfter(JsonDoc):
    """How many global queries a new entity took to show up (capped)."""

    mean: float | None = None
    max: int | None = None
    never_within_cap: int | None = None


@dataclass(kw_only=True)
class ConsistencyFigures(ProbeFigures):
    """``consistency``: stale reads of new entities by global query, ancestor query and lookup."""

    attempts: int | None = None
    emulator_consistency: float | None = None
    expected_stale_rate: float | None = None
    global_stale: int | None = None
    global_stale_rate: float | None = None
    ancestor_stale_rate: float | None = None
    lookup_stale_rate: float | None = None
    queries_until_visible: VisibleAfter | None = None


@dataclass(kw_only=True)
class ProbeLatency(JsonDoc):
    """Latency of a probe's successful operations in milliseconds."""

    p50: float | None = None
    p99: float | None = None


@dataclass(kw_only=True)
class ProbeError(JsonDoc):
    """An error a probe met: the recorder's error class (``class``), the exception type, its first line."""

    type: str | None = None
    message: str | None = None

    @property
    def error_class(self) -> str | None:
        """``class`` (a Python keyword, so not a field: it stays in ``extra``, written back in place)."""
        value = self.extra.get("class")
        return value if isinstance(value, str) else None


@dataclass(kw_only=True)
class ContentionFigures(ProbeFigures):
    """``contention``: writers on few keys (or one entity group): commits, aborts, latency."""

    threads: int | None = None
    keys: int | None = None
    assign: str | None = None
    same_group: bool | None = None
    op: str | None = None
    seconds: float | None = None
    attempts: int | None = None
    committed: int | None = None
    committed_per_s: float | None = None
    aborted: int | None = None
    abort_rate: float | None = None
    errors: dict[str, int] = field(default_factory=dict)
    error_samples: dict[str, ProbeError] = field(default_factory=dict,
                                                 metadata={"doc": "each error class's first occurrence"})
    latency_ms: ProbeLatency | None = None


@dataclass(kw_only=True)
class OffsetCursorFigures(ProbeFigures):
    """``offset_cursor``: one deep page read by offset vs by cursor (interleaved trials)."""

    entities: int | None = None
    page: int | None = None
    page_size: int | None = None
    offset: int | None = None
    offset_ms: float | None = None
    cursor_ms: float | None = None
    offset_median_ms: float | None = None
    cursor_median_ms: float | None = None
    trials: int | None = None
    offset_trials_ms: list[float] | None = None
    cursor_trials_ms: list[float] | None = None
    cursor_page_rows: int | None = None
    ratio: float | None = None


@dataclass(kw_only=True)
class ProjectionFigures(ProbeFigures):
    """``projection``: full entities vs a projection vs keys only."""

    entities: int | None = None
    payload_bytes: int | None = None
    full_ms: float | None = None
    keys_only_ms: float | None = None
    projection_ms: float | None = None
    full_vs_keys_only: float | None = None
    full_vs_projection: float | None = None


@dataclass(kw_only=True)
class DeletedRangeFigures(ProbeFigures):
    """``deleted_range``: a query over the head of a deleted range vs from the stored start."""

    entities: int | None = None
    deleted: int | None = None
    head_query_ms: float | None = None
    stored_start_ms: float | None = None
    ratio: float | None = None


@dataclass(kw_only=True)
class BatchFigures(ProbeFigures):
    """``batch``: single vs batched writes and reads per second."""

    entities: int | None = None
    batch_size: int | None = None
    single_write_per_s: float | None = None
    batch_write_per_s: float | None = None
    single_read_per_s: float | None = None
    batch_read_per_s: float | None = None
    write_speedup: float | None = None
    read_speedup: float | None = None


@dataclass(kw_only=True)
class FanoutFigures(ProbeFigures):
    """``fanout``: time per write with many indexed vs unindexed properties."""

    properties: int | None = None
    writes: int | None = None
    one_property_ms: float | None = None
    indexed_ms: float | None = None
    unindexed_ms: float | None = None
    indexed_vs_unindexed: float | None = None


@dataclass(kw_only=True)
class HygieneCase(ProbeError):
    """One bad input tried; a rejected one adds the error it raised."""

    case: str | None = None
    accepted: bool | None = None


@dataclass(kw_only=True)
class HygieneFigures(ProbeFigures):
    """``hygiene``: which bad keys and property names the store accepted."""

    cases: list[HygieneCase] = field(default_factory=list)
    rejected: int | None = None


#: Probe name -> the part its ``result`` is read as.
PROBE_PARTS: dict[str, type[ProbeFigures]] = {
    "consistency": ConsistencyFigures,
    "contention": ContentionFigures,
    "offset_cursor": OffsetCursorFigures,
    "projection": ProjectionFigures,
    "deleted_range": DeletedRangeFigures,
    "batch": BatchFigures,
    "fanout": FanoutFigures,
    "hygiene": HygieneFigures,
}

AnyProbeFigures = (ConsistencyFigures | ContentionFigures | OffsetCursorFigures | ProjectionFigures
                   | DeletedRangeFigures | BatchFigures | FanoutFigures | HygieneFigures | ProbeFigures)


@dataclass(kw_only=True)
class ProbeResult(JsonDoc):
    """``probe``: which probe ran on which store, with what parameters, and what it measured
    (``result``, measured on the store) or why it could not run there (``unsupported``)."""

    name: str
    backend: str | None = None
    unsupported: str | None = field(default=None, metadata={"doc": "why the store cannot run this probe"})
    params: dict[str, Any] | None = field(default=None, metadata={"doc": "the probe's parameters, defaults filled in"})
    result: AnyProbeFigures | None = field(default=None,
                                           metadata={"doc": "the probe's figures: the part ``name`` names"})

    @classmethod
    def _read_doc(cls, data: Any) -> Self:
        # ``result``'s part depends on ``name``: read the rest first, then the part it names.
        if not isinstance(data, dict) or data.get("result") is None:
            return super()._read_doc(data)
        doc = super()._read_doc({k: v for k, v in data.items() if k != "result"})
        try:
            doc.result = PROBE_PARTS.get(doc.name, ProbeFigures)._read_doc(data["result"])
        except DocError as exc:
            raise exc.within("result") from None
        doc._keys = tuple(data)
        return doc
