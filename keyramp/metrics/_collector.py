"""``MetricsState`` as Prometheus metric families (a ``prometheus_client`` custom collector).

Names follow Prometheus conventions: ``keyramp_`` prefix, base units in the name
(seconds), ``_total`` on counters (added by the client library), no aggregate label
values (sum over ``op`` instead of an ``op="*"`` series). Latency is exported as
histograms (cumulative since the cell's measured phase began), not as percentile
gauges: buckets can be summed over cells, workers or ops and windowed with ``rate()``,
which a percentile of a whole cell cannot. The exact percentiles are in summary.json.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from keyramp.metrics._state import BUCKETS_S, CellState, MetricsState, RunState

__all__ = ["StateCollector", "CELL_LABELS", "OP_LABELS"]

CELL_LABELS = ("run", "profile", "cell", "backend", "strategy")
OP_LABELS = (*CELL_LABELS, "op")
_LE = tuple(f"{b:g}" for b in BUCKETS_S)


def _cell_labels(run: RunState, cell: CellState) -> list[str]:
    return [run.run_id, run.profile, cell.id, cell.backend, cell.strategy]


class StateCollector(Collector):
    """Builds every family from the state at scrape time (nothing is kept between scrapes)."""

    def __init__(self, state: MetricsState) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        ops = CounterMetricFamily("keyramp_operations", "Operations completed (successes and errors) in the "
                                  "measured phase.", labels=OP_LABELS)
        errors = CounterMetricFamily("keyramp_operation_errors", "Failed operations by gRPC status class "
                                     "(CLIENT_<Exception> without a status); client retries are off.",
                                     labels=(*OP_LABELS, "class"))
        late = CounterMetricFamily("keyramp_late_operations", "Operations that started more than 10 ms after "
                                   "their intended start.", labels=OP_LABELS)
        latency = HistogramMetricFamily("keyramp_operation_latency_seconds", "Latency from the intended start "
                                        "(coordinated-omission corrected), from the recorder's HdrHistograms.",
                                        labels=OP_LABELS)
        service = HistogramMetricFamily("keyramp_operation_service_seconds", "Service time (from the actual "
                                        "start); latency minus service time is queueing in the load generator.",
                                        labels=OP_LABELS)
        dropped = CounterMetricFamily("keyramp_dropped_operations", "Intended operations never started because "
                                      "the users could not keep up (not in keyramp_operations_total).",
                                      labels=CELL_LABELS)
        target = GaugeMetricFamily("keyramp_target_operations_per_second", "Scheduled rate in the last closed "
                                   "second of the running cell (absent for a closed-model users schedule).",
                                   labels=CELL_LABELS)
        achieved = GaugeMetricFamily("keyramp_achieved_operations_per_second", "Operations completed in the "
                                     "last closed second of the running cell.", labels=CELL_LABELS)
        users = GaugeMetricFamily("keyramp_users", "Locust users of the running cell (all workers).",
                                  labels=CELL_LABELS)
        elapsed = GaugeMetricFamily("keyramp_cell_elapsed_seconds", "Measured seconds of the cell so far (of "
                                    "keyramp_cell_duration_seconds).", labels=CELL_LABELS)
        planned = GaugeMetricFamily("keyramp_cell_duration_seconds", "Planned measured phase of the cell.",
                                    labels=CELL_LABELS)
        active = GaugeMetricFamily("keyramp_cell_active", "1 while the cell's measured phase runs, 0 after.",
                                   labels=CELL_LABELS)
        limited = GaugeMetricFamily("keyramp_generator_limited", "1 if the finished cell's load generator could "
                                    "not keep up (its latency includes the generator's own queue), else 0.",
                                    labels=CELL_LABELS)
        run_active = GaugeMetricFamily("keyramp_run_active", "1 while the run is in progress, 0 after.",
                                       labels=("run", "profile"))
        for run in self.state.runs.values():
            run_active.add_metric([run.run_id, run.profile], 1.0 if run.active else 0.0)
            for cell in run.cells.values():
                labels = _cell_labels(run, cell)
                dropped.add_metric(labels, cell.dropped)
                active.add_metric(labels, 1.0 if cell.active else 0.0)
                elapsed.add_metric(labels, cell.elapsed_s)
                planned.add_metric(labels, cell.duration_s)
                if cell.active:  # rates and users describe a running cell; they go stale after it
                    users.add_metric(labels, cell.users)
                    if cell.target_ops_per_s is not None:
                        target.add_metric(labels, cell.target_ops_per_s)
                    if cell.achieved_ops_per_s is not None:
                        achieved.add_metric(labels, cell.achieved_ops_per_s)
                if cell.generator_limited is not None:
                    limited.add_metric(labels, 1.0 if cell.generator_limited else 0.0)
                for op, o in cell.ops.items():
                    op_labels = [*labels, op]
                    ops.add_metric(op_labels, o.count)
                    late.add_metric(op_labels, o.late)
                    for cls, n in sorted(o.errors.items()):
                        errors.add_metric([*op_labels, cls], n)
                    latency.add_metric(op_labels, _buckets(o.latency, o.recorded), o.latency_sum_s)
                    service.add_metric(op_labels, _buckets(o.service, o.recorded), o.service_sum_s)
        yield from (ops, errors, late, latency, service, dropped, target, achieved, users, elapsed, planned, active,
                    limited, run_active)


def _buckets(cumulative: np.ndarray, count: int) -> list[tuple[str, float]]:
    return [*zip(_LE, map(float, cumulative.tolist())), ("+Inf", float(count))]
