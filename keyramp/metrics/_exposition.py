"""``MetricsState`` in the Prometheus text format (version 0.0.4), written here.

Names follow Prometheus conventions: ``keyramp_`` prefix, base units in the name (seconds),
``_total`` on counters, no aggregate label values (sum over ``op`` instead of an ``op="*"``
series). Latency is exported as histograms (cumulative since the cell's measured phase
began), not percentile gauges: buckets sum over cells, workers or ops and window with
``rate()``, which a whole-cell percentile cannot (the exact percentiles are in summary.json).

Why not ``prometheus_client``'s formatter: it escapes and formats every sample anew, about
30 µs a sample, on the run's own event loop — 12 ms per scrape for the quickstart's 12 cells,
during which no operation starts. Here a finished cell is rendered once and kept; a scrape
renders the running cell only and joins the rest (tests parse the output with
``prometheus_client``'s parser and a real Prometheus scrapes it).
"""

from __future__ import annotations

from collections.abc import Iterable

from keyramp.metrics._state import BUCKETS_S, CellState, MetricsState, RunState

__all__ = ["CONTENT_TYPE", "FAMILIES", "render"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: (name, type, help), in exposition order.
FAMILIES: tuple[tuple[str, str, str], ...] = (
    ("keyramp_operations_total", "counter", "Operations completed (successes and errors) in the measured phase."),
    (
        "keyramp_operation_errors_total",
        "counter",
        "Failed operations by gRPC status class (CLIENT_<Exception> without a status); client retries are off.",
    ),
    ("keyramp_late_operations_total", "counter", "Operations that started more than 10 ms after their intended start."),
    (
        "keyramp_operation_latency_seconds",
        "histogram",
        "Latency from the intended start (coordinated-omission corrected), from the recorder's HdrHistograms.",
    ),
    (
        "keyramp_operation_service_seconds",
        "histogram",
        "Service time (from the actual start); latency minus service time is queueing in the load generator.",
    ),
    (
        "keyramp_dropped_operations_total",
        "counter",
        "Intended operations never started because the users could not keep up (not in keyramp_operations_total).",
    ),
    (
        "keyramp_target_operations_per_second",
        "gauge",
        "Scheduled rate in the last closed second of the running cell (absent for a closed-model users schedule).",
    ),
    (
        "keyramp_achieved_operations_per_second",
        "gauge",
        "Operations completed in the last closed second of the running cell.",
    ),
    ("keyramp_users", "gauge", "Locust users of the running cell (all workers)."),
    (
        "keyramp_cell_elapsed_seconds",
        "gauge",
        "Measured seconds of the cell so far (of keyramp_cell_duration_seconds).",
    ),
    ("keyramp_cell_duration_seconds", "gauge", "Planned measured phase of the cell."),
    ("keyramp_cell_active", "gauge", "1 while the cell's measured phase runs, 0 after."),
    (
        "keyramp_generator_limited",
        "gauge",
        "1 if the finished cell's load generator could not keep up "
        "(its latency includes the generator's own queue), else 0.",
    ),
    ("keyramp_run_active", "gauge", "1 while the run is in progress, 0 after."),
)
_LE = tuple(f"{b:g}" for b in BUCKETS_S)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _num(value: float | int) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def _cell_lines(run: RunState, cell: CellState) -> dict[str, list[str]]:
    """Every sample of one cell, per family."""
    base = (("run", run.run_id), ("profile", run.profile), ("cell", cell.id), ("backend", cell.backend),
            ("strategy", cell.strategy))
    labels = _labels(base)
    out: dict[str, list[str]] = {name: [] for name, _, _ in FAMILIES}

    def add(name: str, value: float | int, text: str = labels) -> None:
        out[name].append(f"{name}{text} {_num(value)}")

    for op, o in cell.ops.items():
        op_labels = _labels((*base, ("op", op)))
        add("keyramp_operations_total", o.count, op_labels)
        add("keyramp_late_operations_total", o.late, op_labels)
        for cls, n in sorted(o.errors.items()):
            add("keyramp_operation_errors_total", n, _labels((*base, ("op", op), ("class", cls))))
        for family, buckets, total_s in (("keyramp_operation_latency_seconds", o.latency, o.latency_sum_s),
                                         ("keyramp_operation_service_seconds", o.service, o.service_sum_s)):
            lines = out[family]
            for le, n in zip(_LE, buckets.tolist(), strict=True):
                lines.append(f"{family}_bucket{_labels((*base, ('op', op), ('le', le)))} {n}")
            lines.append(f"{family}_bucket{_labels((*base, ('op', op), ('le', '+Inf')))} {o.recorded}")
            lines.append(f"{family}_sum{op_labels} {_num(total_s)}")
            lines.append(f"{family}_count{op_labels} {o.recorded}")
    add("keyramp_dropped_operations_total", cell.dropped)
    if cell.active:  # rates and users describe a running cell; they go stale after it
        add("keyramp_users", cell.users)
        if cell.target_ops_per_s is not None:
            add("keyramp_target_operations_per_second", cell.target_ops_per_s)
        if cell.achieved_ops_per_s is not None:
            add("keyramp_achieved_operations_per_second", cell.achieved_ops_per_s)
    add("keyramp_cell_elapsed_seconds", cell.elapsed_s)
    add("keyramp_cell_duration_seconds", cell.duration_s)
    add("keyramp_cell_active", 1 if cell.active else 0)
    if cell.generator_limited is not None:
        add("keyramp_generator_limited", 1 if cell.generator_limited else 0)
    return out


def render(state: MetricsState) -> bytes:
    """The exposition of every run in ``state``; a finished cell's samples are rendered once."""
    per_cell: list[dict[str, list[str]]] = []
    runs: list[str] = []
    for run in state.runs.values():
        runs.append(f"keyramp_run_active{_labels((('run', run.run_id), ('profile', run.profile)))} "
                    f"{1 if run.active else 0}")
        for cell in run.cells.values():
            if cell.active or cell.rendered is None:
                lines = _cell_lines(run, cell)
                if not cell.active:
                    cell.rendered = lines  # final: it never changes again
            else:
                lines = cell.rendered
            per_cell.append(lines)
    parts: list[str] = []
    for name, kind, help_text in FAMILIES:
        parts.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")
        samples = runs if name == "keyramp_run_active" else [line for cell in per_cell for line in cell[name]]
        if samples:
            parts.append("\n".join(samples) + "\n")
    return "".join(parts).encode()
