"""MetricsState + render: what a recorder's intervals become in the exposition format, parsed
back with prometheus_client's own parser (figures checked against the recorder)."""

from __future__ import annotations

import random

import pytest
from prometheus_client.parser import text_string_to_metric_families

from keyramp.core._types import ALL_OPS
from keyramp.metrics import BUCKETS_S, MetricsState, render
from keyramp.results._observer import TeeSink
from keyramp.results._summary import CellSummary
from keyramp.run._recorder import Recorder


class _Boom(Exception):
    pass


def _scrape(state: MetricsState) -> dict[str, list]:
    # the official client's parser reads keyramp's own exposition
    return {f.name: f.samples for f in text_string_to_metric_families(render(state).decode())}


def _value(samples: list, name: str, **labels: str) -> float:
    found = [s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (name, labels, found)
    return found[0]


class _Null:
    def interval(self, **kw): pass
    def timeseries(self, rows): pass
    def keys(self, cell, samples): pass
    def flush(self): pass


def _run_cell(state: MetricsState, *, seconds: int = 3, ops: tuple[str, ...] = ("insert", "read")) -> Recorder:
    rng = random.Random(3)
    rec = Recorder(cell="c00-datastore-sequential", ops=ops, sink=TeeSink([_Null(), state]), key_samples_per_s=0)
    rec.begin(0.0, duration_s=float(seconds))
    state.cell_started(cell="c00-datastore-sequential", backend="datastore", strategy="sequential",
                       duration_s=float(seconds), users=8)
    for second in range(seconds):
        for _ in range(300):
            op = rng.choice(ops)
            intended = second + rng.random() * 0.99
            started = intended + (0.05 if rng.random() < 0.1 else 0.0)  # 10 % start late
            ended = started + rng.lognormvariate(-6.0, 1.2)  # ~2.5 ms median, long tail
            error = _Boom() if rng.random() < 0.03 else None
            rec.record(op, None, intended, started, ended, error)
        rec.tick(second + 1.0 + (0.5 if second == seconds - 1 else 0.0), target_ops_per_s=300.0,
                 dropped=2 if second == 1 else 0)
    return rec


def test_counters_and_histograms_equal_the_recorders_own_totals() -> None:
    state = MetricsState()
    state.run_started(run_id="R1", profile="p")
    rec = _run_cell(state)
    summary = rec.summary(duration_s=3.0).to_json()
    families = _scrape(state)
    labels = {"run": "R1", "profile": "p", "cell": "c00-datastore-sequential", "backend": "datastore",
              "strategy": "sequential"}
    for op, stats in summary["operations"].items():
        assert _value(families["keyramp_operations"], "keyramp_operations_total", op=op, **labels) == stats["count"]
        assert _value(families["keyramp_late_operations"], "keyramp_late_operations_total", op=op,
                      **labels) == stats["late"]
        for cls, n in stats["errors_by_class"].items():
            assert _value(families["keyramp_operation_errors"], "keyramp_operation_errors_total", op=op,
                          **{"class": cls}, **labels) == n["count"]
        hist = families["keyramp_operation_latency_seconds"]
        assert _value(hist, "keyramp_operation_latency_seconds_count", op=op, **labels) == stats["count"]
        # mean = sum / count agrees with the HdrHistogram's mean (same bucket medians)
        mean = _value(hist, "keyramp_operation_latency_seconds_sum", op=op, **labels) / stats["count"]
        assert mean * 1000 == pytest.approx(stats["latency_ms"]["mean"], rel=1e-3)
        # the bucket holding the recorder's exact p99 is the first whose count reaches 99 %
        p99_s = stats["latency_ms"]["p99"] / 1000
        buckets = [(float(s.labels["le"]), s.value) for s in hist
                   if s.name.endswith("_bucket") and s.labels["op"] == op]
        first = next(le for le, n in buckets if n >= 0.99 * stats["count"])
        below = max([b for b in BUCKETS_S if b < first], default=0.0)
        assert below < p99_s <= first
        # cumulative and ending at +Inf = count
        assert [n for _, n in buckets] == sorted(n for _, n in buckets) and buckets[-1] == (
            float("inf"),
            stats["count"],
        )
    assert _value(families["keyramp_dropped_operations"], "keyramp_dropped_operations_total", **labels) == 2
    assert _value(families["keyramp_users"], "keyramp_users", **labels) == 8
    assert _value(families["keyramp_target_operations_per_second"], "keyramp_target_operations_per_second",
                  **labels) == 300
    # the last second was closed 0.5 s after the phase end: rated over its second, as the recorder does
    assert _value(families["keyramp_achieved_operations_per_second"], "keyramp_achieved_operations_per_second",
                  **labels) == pytest.approx(summary["target_ops_per_s"][-1]["achieved"], rel=1e-3)
    assert _value(families["keyramp_cell_elapsed_seconds"], "keyramp_cell_elapsed_seconds", **labels) == 3.0
    assert _value(families["keyramp_cell_active"], "keyramp_cell_active", **labels) == 1


def test_no_aggregate_op_series_and_bucket_bounds_span_0_1_ms_to_10_s() -> None:
    state = MetricsState()
    state.run_started(run_id="R1", profile="p")
    _run_cell(state, seconds=1)
    families = _scrape(state)
    assert all(s.labels.get("op") != ALL_OPS for samples in families.values() for s in samples)
    les = sorted({float(s.labels["le"]) for s in families["keyramp_operation_latency_seconds"] if "le" in s.labels})
    assert les[0] == 0.0001 and les[-2] == 10.0 and les[-1] == float("inf")
    assert all(name.startswith("keyramp_") for name in families)


def test_finished_cells_keep_counters_and_lose_rate_gauges() -> None:
    state = MetricsState()
    state.run_started(run_id="R1", profile="p")
    _run_cell(state, seconds=1)
    state.cell_finished(cell="c00-datastore-sequential", summary=CellSummary(generator_limited=True))
    families = _scrape(state)
    assert families["keyramp_users"] == [] and families["keyramp_target_operations_per_second"] == []
    assert _value(families["keyramp_generator_limited"], "keyramp_generator_limited") == 1
    assert _value(families["keyramp_cell_active"], "keyramp_cell_active") == 0
    assert sum(s.value for s in families["keyramp_operations"]) > 0
    state.run_finished(status="complete")
    assert _value(_scrape(state)["keyramp_run_active"], "keyramp_run_active", run="R1") == 0


def test_a_second_run_in_the_same_process_is_a_new_label_set() -> None:
    state = MetricsState()
    for run in ("R1", "R2"):
        state.run_started(run_id=run, profile="p")
        _run_cell(state, seconds=1)
        state.run_finished(status="complete")
    ops = _scrape(state)["keyramp_operations"]
    assert {s.labels["run"] for s in ops} == {"R1", "R2"}


def test_intervals_of_an_unannounced_cell_are_ignored() -> None:
    # a probe cell (no measured Locust phase) ticks its recorder once: nothing to export
    state = MetricsState()
    state.run_started(run_id="R1", profile="p")
    rec = Recorder(cell="c01-datastore-probe", ops=["insert"], sink=state, key_samples_per_s=0)
    rec.begin(0.0)
    rec.record("insert", None, 0.1, 0.1, 0.2)
    rec.tick(1.0, target_ops_per_s=None)
    assert _scrape(state)["keyramp_operations"] == []


def test_a_finished_cell_is_rendered_once_and_label_values_are_escaped() -> None:
    state = MetricsState()
    state.run_started(run_id="R1", profile='odd "name"\\ with\nlines')
    _run_cell(state, seconds=1)
    state.cell_finished(cell="c00-datastore-sequential", summary=CellSummary())
    first = render(state)
    cached = state.runs["R1"].cells["c00-datastore-sequential"].rendered
    assert cached is not None and render(state) == first
    assert state.runs["R1"].cells["c00-datastore-sequential"].rendered is cached  # not rendered again
    ops = _scrape(state)["keyramp_operations"]
    assert {s.labels["profile"] for s in ops} == {'odd "name"\\ with\nlines'}
