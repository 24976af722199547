"""What a probe cell's result shows: one sentence, the values a verdict compares and the bars
its chart draws, one small function per probe (``PROBE_EVIDENCE``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from keyramp.core import fmt
from keyramp.results import (
    BatchFigures,
    ConsistencyFigures,
    ContentionFigures,
    DeletedRangeFigures,
    FanoutFigures,
    HygieneFigures,
    OffsetCursorFigures,
    ProbeFigures,
    ProbeLatency,
    ProbeResult,
    ProjectionFigures,
    VisibleAfter,
)

__all__ = ["OBSERVABLE_RATIO", "PROBE_EVIDENCE", "ChartValue", "Finding", "chart_bars", "probe_evidence"]

#: A measured ratio below this is within emulator noise: the effect is not observable.
OBSERVABLE_RATIO = 2.0


@dataclass(frozen=True, kw_only=True)
class ChartValue:
    """One bar: ``chart`` groups bars of all rows of a rule; ``series`` names it within a row."""

    chart: str
    series: str
    value: float | None
    unit: str = ""


#: (kind, text, values, bars): what one cell shows for a rule.
Finding = tuple[str, str, dict[str, Any], list[ChartValue]]


def chart_bars(chart: str, unit: str, **series: Any) -> list[ChartValue]:
    """One bar per keyword (``global_query=`` is the series "global query")."""
    return [ChartValue(chart=chart, series=name.replace("_", " "), value=None if v is None else float(v), unit=unit)
            for name, v in series.items()]


def _ratio_kind(ratio: Any, threshold: float = OBSERVABLE_RATIO) -> str:
    return "measured" if ratio is not None and ratio >= threshold else "not observable"


def _consistency(r: ConsistencyFigures) -> Finding:
    # At consistency < 1 and no stale query, the emulator did not simulate it; at 1.0
    # "no stale query" is the measured reference.
    expected = r.expected_stale_rate or 0.0
    kind = "not observable" if expected > 0 and not r.global_stale else "measured"
    qv = r.queries_until_visible or VisibleAfter()
    text = (f"global query stale {fmt.percent(r.global_stale_rate)} of {r.attempts} (expected "
            f"≈ {fmt.percent(r.expected_stale_rate)} at consistency {r.emulator_consistency}), "
            "ancestor "
            f"{fmt.percent(r.ancestor_stale_rate)}, lookup {fmt.percent(r.lookup_stale_rate)}; "
            f"queries until visible: mean {qv.mean}, max {qv.max}")
    values = {"stale_rate": r.global_stale_rate, "expected": r.expected_stale_rate, "attempts": r.attempts,
              "ancestor": r.ancestor_stale_rate, "lookup": r.lookup_stale_rate}
    pct = {k: None if v is None else 100.0 * v for k, v in values.items()}
    bars = chart_bars("stale reads (% of attempts)", " %", global_query=pct["stale_rate"],
                      expected_1_minus_c=pct["expected"], ancestor_query=pct["ancestor"], lookup=pct["lookup"])
    return kind, text, values, bars


def _contention(r: ContentionFigures) -> Finding:
    where = "one entity group" if r.same_group else f"{fmt.plural(r.keys, 'key')}, {r.assign}"
    lat = r.latency_ms or ProbeLatency()
    text = (f"{r.threads} writers × {r.op} on {where}: {r.committed} committed "
            f"({r.committed_per_s}/s), {r.aborted} aborted ({fmt.percent(r.abort_rate)}), "
            f"p50 {lat.p50} ms, p99 {lat.p99} ms")
    others = {k: v for k, v in r.errors.items() if k != "ABORTED"}
    if others:
        text += "; other errors: " + ", ".join(f"{k} {v}" for k, v in sorted(others.items()))
    if r.error_samples:
        first = next(iter(r.error_samples.values()))
        text += f"; error: `{first.message}`"
    values = {"aborted": r.aborted, "failed": sum(r.errors.values()),
              "committed_per_s": r.committed_per_s, "hot": r.keys == 1 or bool(r.same_group)}
    bars = (chart_bars("aborted transactions", "", aborted=r.aborted)
            + chart_bars("committed transactions per second", "/s", committed=r.committed_per_s)
            + chart_bars("latency of committed transactions (ms)", " ms", p50=lat.p50, p99=lat.p99))
    return "measured", text, values, bars


def _shown(value: object, default: str) -> object:
    """A figure as the text shows it; one the probe did not record as ``default``."""
    return default if value is None else value


def _offset_cursor(r: OffsetCursorFigures) -> Finding:
    text = (f"page {r.page} ({r.page_size} per page) by offset {r.offset_ms} ms vs cursor "
            f"{r.cursor_ms} ms (fastest of {_shown(r.trials, '?')} interleaved trials; medians "
            f"{_shown(r.offset_median_ms, '-')} vs {_shown(r.cursor_median_ms, '-')} ms); offset vs cursor: "
            f"×{r.ratio}")
    bars = chart_bars("query time for one page (ms, fastest trial)", " ms", offset=r.offset_ms, cursor=r.cursor_ms)
    return _ratio_kind(r.ratio), text, {"ratio": r.ratio}, bars


def _projection(r: ProjectionFigures) -> Finding:
    ratio = r.full_vs_keys_only
    text = (f"{r.entities} entities: full {r.full_ms} ms, projection {r.projection_ms} ms, keys-only "
            f"{r.keys_only_ms} ms; full vs keys-only: ×{ratio}")
    bars = chart_bars("query time (ms)", " ms", full_entities=r.full_ms, projection=r.projection_ms,
                      keys_only=r.keys_only_ms)
    return _ratio_kind(ratio, 1.2), text, {"ratio": ratio}, bars


def _deleted_range(r: DeletedRangeFigures) -> Finding:
    text = (f"after deleting {r.deleted} of {r.entities}: head query {r.head_query_ms} ms vs stored "
            f"start {r.stored_start_ms} ms; head vs stored: ×{r.ratio}")
    bars = chart_bars("query time (ms)", " ms", head_of_deleted_range=r.head_query_ms,
                      stored_start=r.stored_start_ms)
    return _ratio_kind(r.ratio), text, {"ratio": r.ratio}, bars


def _batch(r: BatchFigures) -> Finding:
    gains = [g for g in (r.write_speedup, r.read_speedup) if g is not None]
    ratio = max(gains) if gains else None  # batching helps if either side gains
    text = (f"{r.entities} entities: writes {r.single_write_per_s}/s single vs "
            f"{r.batch_write_per_s}/s in batches of {r.batch_size} (×{r.write_speedup}); reads "
            f"{r.single_read_per_s}/s vs {r.batch_read_per_s}/s (×{r.read_speedup})")
    bars = (chart_bars("writes per second", "/s", single=r.single_write_per_s, batched=r.batch_write_per_s)
            + chart_bars("reads per second", "/s", single=r.single_read_per_s, batched=r.batch_read_per_s))
    return _ratio_kind(ratio, 1.2), text, {"ratio": ratio, "writes": r.write_speedup, "reads": r.read_speedup}, bars


def _fanout(r: FanoutFigures) -> Finding:
    ratio = r.indexed_vs_unindexed
    text = (f"{r.properties} properties: indexed {r.indexed_ms} ms vs unindexed {r.unindexed_ms} ms "
            f"per write (1 property: {r.one_property_ms} ms); indexed vs unindexed: ×{ratio}")
    bars = chart_bars("time per write (ms)", " ms", indexed=r.indexed_ms, unindexed=r.unindexed_ms,
                      one_property=r.one_property_ms)
    return _ratio_kind(ratio), text, {"ratio": ratio}, bars


def _hygiene(r: HygieneFigures) -> Finding:
    parts = [f"{c.case}: " + ("accepted" if c.accepted else f"{c.error_class} `{c.message}`") for c in r.cases]
    values = {"rejected": r.rejected, "cases": len(r.cases)}
    return "measured", "; ".join(parts), values, chart_bars("bad inputs rejected (of the cases tried)", "",
                                                            rejected=r.rejected)


#: Each probe's part -> what its result shows.
PROBE_EVIDENCE: Final[Mapping[type[ProbeFigures], Callable[[Any], Finding]]] = {
    ConsistencyFigures: _consistency,
    ContentionFigures: _contention,
    OffsetCursorFigures: _offset_cursor,
    ProjectionFigures: _projection,
    DeletedRangeFigures: _deleted_range,
    BatchFigures: _batch,
    FanoutFigures: _fanout,
    HygieneFigures: _hygiene,
}


def probe_evidence(probe: ProbeResult) -> Finding:
    """A probe cell's finding; a probe without its own function shows its raw result."""
    if probe.unsupported is not None:
        return "unsupported", f"{probe.name}: {probe.unsupported}", {}, []
    r = probe.result or ProbeFigures()
    show = PROBE_EVIDENCE.get(type(r))
    return show(r) if show else ("measured", json.dumps(r.to_json())[:300], {}, [])
