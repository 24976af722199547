"""What a probe cell's result shows: one sentence, the values a verdict compares and the bars
its chart draws, one small function per probe (``PROBE_EVIDENCE``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from keyramp import _format as fmt

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


def _consistency(r: Mapping[str, Any]) -> Finding:
    # At consistency < 1 and no stale query, the emulator did not simulate it; at 1.0
    # "no stale query" is the measured reference.
    expected = r.get("expected_stale_rate") or 0.0
    kind = "not observable" if expected > 0 and not r.get("global_stale") else "measured"
    qv = r.get("queries_until_visible") or {}
    text = (f"global query stale {fmt.percent(r.get('global_stale_rate'))} of {r.get('attempts')} (expected "
            f"≈ {fmt.percent(r.get('expected_stale_rate'))} at consistency {r.get('emulator_consistency')}), "
            "ancestor "
            f"{fmt.percent(r.get('ancestor_stale_rate'))}, lookup {fmt.percent(r.get('lookup_stale_rate'))}; "
            f"queries until visible: mean {qv.get('mean')}, max {qv.get('max')}")
    values = {"stale_rate": r.get("global_stale_rate"), "expected": r.get("expected_stale_rate"),
              "attempts": r.get("attempts"),
              "ancestor": r.get("ancestor_stale_rate"), "lookup": r.get("lookup_stale_rate")}
    pct = {k: None if v is None else 100.0 * v for k, v in values.items()}
    bars = chart_bars("stale reads (% of attempts)", " %", global_query=pct["stale_rate"],
                      expected_1_minus_c=pct["expected"], ancestor_query=pct["ancestor"], lookup=pct["lookup"])
    return kind, text, values, bars


def _contention(r: Mapping[str, Any]) -> Finding:
    where = "one entity group" if r.get("same_group") else f"{r['keys']} key(s), {r['assign']}"
    lat = r.get("latency_ms") or {}
    text = (f"{r['threads']} writers × {r['op']} on {where}: {r['committed']} committed "
            f"({r['committed_per_s']}/s), {r['aborted']} aborted ({fmt.percent(r.get('abort_rate'))}), "
            f"p50 {lat.get('p50')} ms, p99 {lat.get('p99')} ms")
    others = {k: v for k, v in (r.get("errors") or {}).items() if k != "ABORTED"}
    if others:
        text += "; other errors: " + ", ".join(f"{k} {v}" for k, v in sorted(others.items()))
    samples = r.get("error_samples") or {}
    if samples:
        first = next(iter(samples.values()))
        text += f"; error: `{first['message']}`"
    values = {"aborted": r["aborted"], "failed": sum((r.get("errors") or {}).values()),
              "committed_per_s": r["committed_per_s"], "hot": r["keys"] == 1 or bool(r.get("same_group"))}
    bars = (chart_bars("aborted transactions", "", aborted=r["aborted"])
            + chart_bars("committed transactions per second", "/s", committed=r["committed_per_s"])
            + chart_bars("latency of committed transactions (ms)", " ms", p50=lat.get("p50"), p99=lat.get("p99")))
    return "measured", text, values, bars


def _offset_cursor(r: Mapping[str, Any]) -> Finding:
    text = (f"page {r['page']} ({r['page_size']} per page) by offset {r['offset_ms']} ms vs cursor "
            f"{r['cursor_ms']} ms (fastest of {r.get('trials', '?')} interleaved trials; medians "
            f"{r.get('offset_median_ms', '-')} vs {r.get('cursor_median_ms', '-')} ms); offset vs cursor: "
            f"×{r.get('ratio')}")
    bars = chart_bars("query time for one page (ms, fastest trial)", " ms", offset=r["offset_ms"],
                      cursor=r["cursor_ms"])
    return _ratio_kind(r.get("ratio")), text, {"ratio": r.get("ratio")}, bars


def _projection(r: Mapping[str, Any]) -> Finding:
    ratio = r.get("full_vs_keys_only")
    text = (f"{r['entities']} entities: full {r['full_ms']} ms, projection {r['projection_ms']} ms, keys-only "
            f"{r['keys_only_ms']} ms; full vs keys-only: ×{ratio}")
    bars = chart_bars("query time (ms)", " ms", full_entities=r["full_ms"], projection=r["projection_ms"],
                      keys_only=r["keys_only_ms"])
    return _ratio_kind(ratio, 1.2), text, {"ratio": ratio}, bars


def _deleted_range(r: Mapping[str, Any]) -> Finding:
    text = (f"after deleting {r['deleted']} of {r['entities']}: head query {r['head_query_ms']} ms vs stored "
            f"start {r['stored_start_ms']} ms; head vs stored: ×{r.get('ratio')}")
    bars = chart_bars("query time (ms)", " ms", head_of_deleted_range=r["head_query_ms"],
                      stored_start=r["stored_start_ms"])
    return _ratio_kind(r.get("ratio")), text, {"ratio": r.get("ratio")}, bars


def _batch(r: Mapping[str, Any]) -> Finding:
    ratio = max(r["write_speedup"], r["read_speedup"])  # batching helps if either side gains
    text = (f"{r['entities']} entities: writes {r['single_write_per_s']}/s single vs "
            f"{r['batch_write_per_s']}/s in batches of {r['batch_size']} (×{r['write_speedup']}); reads "
            f"{r['single_read_per_s']}/s vs {r['batch_read_per_s']}/s (×{r['read_speedup']})")
    bars = (chart_bars("writes per second", "/s", single=r["single_write_per_s"], batched=r["batch_write_per_s"])
            + chart_bars("reads per second", "/s", single=r["single_read_per_s"], batched=r["batch_read_per_s"]))
    return _ratio_kind(ratio, 1.2), text, {"ratio": ratio, "writes": r["write_speedup"],
                                           "reads": r["read_speedup"]}, bars


def _fanout(r: Mapping[str, Any]) -> Finding:
    ratio = r.get("indexed_vs_unindexed")
    text = (f"{r['properties']} properties: indexed {r['indexed_ms']} ms vs unindexed {r['unindexed_ms']} ms "
            f"per write (1 property: {r['one_property_ms']} ms); indexed vs unindexed: ×{ratio}")
    bars = chart_bars("time per write (ms)", " ms", indexed=r["indexed_ms"], unindexed=r["unindexed_ms"],
                      one_property=r["one_property_ms"])
    return _ratio_kind(ratio), text, {"ratio": ratio}, bars


def _hygiene(r: Mapping[str, Any]) -> Finding:
    cases = r.get("cases", [])
    parts = [f"{c['case']}: " + ("accepted" if c["accepted"] else f"{c['class']} `{c['message']}`")
             for c in cases]
    values = {"rejected": r.get("rejected"), "cases": len(cases)}
    return "measured", "; ".join(parts), values, chart_bars("bad inputs rejected (of the cases tried)", "",
                                                            rejected=r.get("rejected"))


#: Probe name -> what its result shows.
PROBE_EVIDENCE: Final[Mapping[str, Callable[[Mapping[str, Any]], Finding]]] = {
    "consistency": _consistency,
    "contention": _contention,
    "offset_cursor": _offset_cursor,
    "projection": _projection,
    "deleted_range": _deleted_range,
    "batch": _batch,
    "fanout": _fanout,
    "hygiene": _hygiene,
}


def probe_evidence(probe: Mapping[str, Any]) -> Finding:
    """A probe cell's finding; a probe without its own function shows its raw result."""
    name = probe["name"]
    if "unsupported" in probe:
        return "unsupported", f"{name}: {probe['unsupported']}", {}, []
    r = probe.get("result") or {}
    show = PROBE_EVIDENCE.get(name)
    return show(r) if show else ("measured", json.dumps(r)[:300], {}, [])
