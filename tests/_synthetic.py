"""Synthetic, format-valid run directories (docs/run-format.md) for tests.

``make_run`` writes manifest, summary, real HdrHistogram interval logs, the time series
and key samples (Parquet, or the CSV files of runs before it) and the locust/ files,
deterministic per ``seed``.
Latencies are lognormal around ``latency_ms`` (the median); summary figures are computed from the same
histograms that go into the ``.hlog`` files, so both agree as in a real run.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

__all__ = ["DEFAULT_CELLS", "make_run"]

DEFAULT_CELLS: tuple[tuple[str, str], ...] = (("datastore", "sequential"), ("datastore", "random"))

_PCTS = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}


def _new_hist() -> HdrHistogram:
    return HdrHistogram(1, 60_000_000, 3)


def _record(hist: HdrHistogram, values_us: np.ndarray) -> None:
    # One record_value per distinct value: pure-Python hdrh is slow per call.
    uniq, counts = np.unique(np.maximum(values_us.astype(np.int64), 1), return_counts=True)
    for value, count in zip(uniq.tolist(), counts.tolist(), strict=True):
        hist.record_value(value, count)


def _mean(hist: HdrHistogram) -> float:
    """``hist.get_mean_value()``, exactly, from its non-zero counters at once (pure-Python hdrh
    walks every sub-bucket up to the maximum: ~3/4 of a synthetic run's CPU time)."""
    counts = np.ctypeslib.as_array(hist.counts)[:hist.counts_len].astype(np.int64)
    index = np.flatnonzero(counts)
    bucket = (index >> hist.sub_bucket_half_count_magnitude) - 1
    sub = (index & (hist.sub_bucket_half_count - 1)) + hist.sub_bucket_half_count
    first = bucket < 0
    sub[first] -= hist.sub_bucket_half_count
    bucket[first] = 0
    shift = bucket + hist.unit_magnitude
    median = (sub << shift) + ((1 << shift) >> 1)  # the middle of each counter's range
    return float(int((counts[index] * median).sum())) / hist.total_count


def _latency_block(hist: HdrHistogram) -> dict[str, float | None]:
    if hist.get_total_count() == 0:
        return {k: None for k in (*_PCTS, "max", "mean")}
    out: dict[str, float | None] = {k: hist.get_value_at_percentile(p) / 1000.0 for k, p in _PCTS.items()}
    out["max"] = hist.get_max_value() / 1000.0
    out["mean"] = round(_mean(hist) / 1000.0, 4)
    return out


def _per_op(value: float | Mapping[str, float], op: str, default: float) -> float:
    if isinstance(value, Mapping):
        return float(value.get(op, default))
    return float(value)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-") or "run"


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _op_stats(hist: HdrHistogram, service: HdrHistogram, count: int, errors: int, duration: float) -> dict[str, Any]:
    return {
        "count": count,
        "errors": errors,
        "error_rate": errors / count if count else 0.0,
        "errors_by_class": {"UNAVAILABLE": errors} if errors else {},
        "attempts": count,
        "ops_per_s": round(count / duration, 3),
        "latency_ms": _latency_block(hist),
        "service_ms": _latency_block(service),
        "late": 0,
        "dropped": 0,
    }


def make_run(
    results_dir: Path,
    *,
    profile_name: str = "synthetic",
    cells: Sequence[tuple[str, str]] = DEFAULT_CELLS,
    seconds: int = 10,
    ops: Sequence[str] = ("insert", "read"),
    latency_ms: float | Mapping[str, float] = 2.0,
    rate: float | Mapping[str, float] = 200.0,
    error_rate: float | Mapping[str, float] = 0.0,
    sigma: float = 0.5,
    status: str = "complete",
    seed: int = 0,
    run_id: str | None = None,
    keyspace: Mapping[str, Any] | None = None,
    thresholds: Mapping[str, Any] | None = None,
    started_at: datetime | None = None,
    fmt: str = "parquet",
) -> Path:
    """Write one synthetic run under ``results_dir`` and return its directory.

    ``latency_ms`` (median), ``rate`` (ops/s) and ``error_rate`` are per operation when
    given as a mapping op -> value. ``status="running"`` writes no summary.json (and leaves the
    last cell's Parquet parts uncompacted). ``fmt="csv"``: the format of runs before Parquet.
    """
    rng = np.random.default_rng(seed)
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    start = started_at or datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=seed)
    suffix = f"{int(rng.integers(0, 0x10000)):04x}"
    if run_id is None:
        while True:
            run_id = f"{start:%Y%m%dT%H%M%S}{start.microsecond // 1000:03d}Z-{_slug(profile_name)}-{suffix}"
            if not (results_dir / run_id).exists():
                break
            start += timedelta(milliseconds=1)
    run_dir = results_dir / run_id
    (run_dir / "histograms").mkdir(parents=True)
    (run_dir / "locust").mkdir()

    cell_ids = [f"c{i:02d}-{_slug(b)}-{_slug(s)}" for i, (b, s) in enumerate(cells)]
    mix = {op: round(1.0 / len(ops), 6) for op in ops}
    profile = {
        "name": profile_name, "backend": sorted({b for b, _ in cells}), "target": "emulator",
        "duration": f"{seconds}s", "seed": seed,
        "workload": {"ops": mix, "record_count": 1000, "value_size": 256, "read_distribution": "uniform"},
        "keys": {"strategy": sorted({s for _, s in cells})},
        "schedule": {"kind": "constant", "start_ops": sum(_per_op(rate, op, 200.0) for op in ops)},
        "thresholds": dict(thresholds or {}),
    }
    ended = start + timedelta(seconds=seconds * len(cells) + 1)
    manifest: dict[str, Any] = {
        "schema": 1, "run_id": run_id, "profile_name": profile_name,
        "profile_path": f"profiles/{_slug(profile_name)}.toml", "profile": profile,
        "cells": [
            {"id": cid, "backend": b, "strategy": s, "schedule": dict(profile["schedule"]),
             "distribution": "uniform", "ops": mix, "duration_s": float(seconds), "time_scale": 1.0,
             "target": "emulator", "endpoint": "127.0.0.1:8081", "namespace": f"kr-{suffix}-{i}"}
            for i, (cid, (b, s)) in enumerate(zip(cell_ids, cells, strict=True))
        ],
        "versions": {"keyramp": "0.1.0", "python": "3.11.7", "locust": "2.47.0"},
        "git_sha": None, "host": "synthetic", "seed": seed,
        "started_at": start.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "ended_at": None if status == "running" else ended.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "status": status,
        "reason": None if status in ("complete", "running") else f"synthetic {status}",
        "lint": [],
    }
    _write_json(run_dir / "manifest.json", manifest)

    summary_cells: dict[str, Any] = {}
    ts_rows: list[list[Any]] = []
    key_rows: list[list[Any]] = []
    for cid, (backend, strategy) in zip(cell_ids, cells, strict=True):
        total_hist, total_service = _new_hist(), _new_hist()
        per_second_all: list[list[tuple[HdrHistogram, int, int, float]]] = [[] for _ in range(seconds)]
        operations: dict[str, Any] = {}
        total_count = total_errors = 0
        for op in ops:
            median_us = _per_op(latency_ms, op, 2.0) * 1000.0
            op_rate = _per_op(rate, op, 200.0)
            op_err = _per_op(error_rate, op, 0.0)
            op_hist, op_service = _new_hist(), _new_hist()
            count = errors = 0
            with (run_dir / "histograms" / f"{cid}.{op}.hlog").open("w", encoding="utf-8") as lat_f, \
                    (run_dir / "histograms" / f"{cid}.{op}.service.hlog").open("w", encoding="utf-8") as svc_f:
                writers = [HistogramLogWriter(lat_f), HistogramLogWriter(svc_f)]
                for w in writers:
                    w.output_log_format_version()
                    w.output_comment(f"[StartTime: {start.timestamp():.3f} (seconds since epoch)]")
                    w.output_base_time(start.timestamp() * 1000.0)
                    w.output_legend()
                for second in range(seconds):
                    n = int(rng.poisson(op_rate))
                    lat = rng.lognormal(math.log(median_us), sigma, n)
                    svc = lat * rng.uniform(0.85, 1.0, n)
                    n_err = int(rng.binomial(n, op_err)) if n and op_err > 0 else 0
                    h, hs = _new_hist(), _new_hist()
                    _record(h, lat)
                    _record(hs, svc)
                    for w, hist in zip(writers, (h, hs), strict=True):
                        hist.set_start_time_stamp((start.timestamp() + second) * 1000.0)
                        hist.set_end_time_stamp((start.timestamp() + second + 1) * 1000.0)
                        w.output_interval_histogram(hist, start_time_stamp_sec=float(second) or 1e-9,
                                                    end_time_stamp_sec=float(second + 1), max_value_unit_ratio=1000.0)
                    op_hist.add(h)
                    op_service.add(hs)
                    count += n
                    errors += n_err
                    per_second_all[second].append((h, n, n_err, float(svc.sum()) / 1e6))
                    ts_rows.append([cid, op, second, n, n_err, _pct(h, 50), _pct(h, 99), _pct(hs, 99),
                                    h.get_max_value() / 1000.0 if n else "", op_rate, 0, 0,
                                    f"UNAVAILABLE:{n_err}" if n_err else "", _pct(h, 95),
                                    round(float(svc.sum()) / 1e6, 3) if n else ""])
                    for i in range(min(n, 20)):
                        key_rows.append([cid, round(second + i / 20, 3), op, f"{int(rng.integers(0, 10**6)):020d}"])
            operations[op] = _op_stats(op_hist, op_service, count, errors, float(seconds))
            total_hist.add(op_hist)
            total_service.add(op_service)
            total_count += count
            total_errors += errors
        target = sum(_per_op(rate, op, 200.0) for op in ops)
        timeline = []
        for second, parts in enumerate(per_second_all):
            merged = _new_hist()
            for h, *_ in parts:
                merged.add(h)
            n = sum(p[1] for p in parts)
            n_err = sum(p[2] for p in parts)
            in_flight = sum(p[3] for p in parts)
            ts_rows.append([cid, "*", second, n, n_err, _pct(merged, 50), _pct(merged, 99), _pct(merged, 99),
                            merged.get_max_value() / 1000.0 if n else "", target, 0, 0,
                            f"UNAVAILABLE:{n_err}" if n_err else "", _pct(merged, 95),
                            round(in_flight, 3) if n else ""])
            timeline.append({"t": second, "target": target, "achieved": float(n)})
        cell: dict[str, Any] = {
            "backend": backend, "strategy": strategy, "schedule": "constant", "distribution": "uniform",
            "duration_s": float(seconds), "time_scale": 1.0, "operations": operations,
            "total": _op_stats(total_hist, total_service, total_count, total_errors, float(seconds)),
            "target_ops_per_s": timeline, "thresholds": [],
        }
        if keyspace is not None:
            cell["keyspace"] = dict(keyspace)
        summary_cells[cid] = cell
        with (run_dir / "locust" / f"{cid}_stats.csv").open("w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow(["Type", "Name", "Request Count", "Failure Count"])

    if fmt == "csv":
        _write_csv(run_dir, ts_rows, key_rows)
    else:
        _write_parquet(run_dir, cell_ids, ts_rows, key_rows, finished=status != "running")
    (run_dir / "report.txt").write_text(f"synthetic run {run_id}\n", encoding="utf-8")
    if status != "running":
        _write_json(run_dir / "summary.json", {
            "schema": 1, "run_id": run_id, "profile_name": profile_name, "status": status,
            "reason": manifest["reason"], "cells": summary_cells, "thresholds_passed": True,
        })
    return run_dir


#: the columns of runs written as CSV (before Parquet); Parquet runs have p95_ms and in_flight too
_TS_HEADER = ["cell", "op", "second", "count", "errors", "p50_ms", "p99_ms", "service_p99_ms", "max_ms",
              "target_ops_per_s", "late", "dropped", "error_classes"]
_TS_COLUMNS = [*_TS_HEADER, "p95_ms", "in_flight"]


def _write_csv(run_dir: Path, ts_rows: list[list[Any]], key_rows: list[list[Any]]) -> None:
    """The format before Parquet: one timeseries.csv and one keys.csv for every cell."""
    with (run_dir / "timeseries.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(_TS_HEADER)
        writer.writerows(row[:len(_TS_HEADER)] for row in ts_rows)
    with (run_dir / "keys.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["cell", "t", "op", "key"])
        writer.writerows(key_rows)


def _write_parquet(run_dir: Path, cell_ids: list[str], ts_rows: list[list[Any]], key_rows: list[list[Any]], *,
                   finished: bool) -> None:
    """The same rows through the run directory's Parquet writer, compacted per finished cell; a
    running run's last cell stays in parts, one per second, as on disk during a real run."""
    from keyramp.results._legacy import parse_classes
    from keyramp.results._parquet import KEYS_SCHEMA, TIMESERIES_SCHEMA, CellWriter

    for kind in ("timeseries", "keys"):
        (run_dir / kind).mkdir()
    for i, cid in enumerate(cell_ids):
        running = not finished and i == len(cell_ids) - 1
        ts = CellWriter(run_dir / "timeseries", cid, "timeseries")
        keys = CellWriter(run_dir / "keys", cid, "keys")
        by_second: dict[int, tuple[list[dict[str, Any]], list[list[Any]]]] = {}
        for r in ts_rows:
            if r[0] == cid:
                by_second.setdefault(r[2], ([], []))[0].append(dict(zip(_TS_COLUMNS, r, strict=True)))
        for k in key_rows:
            if k[0] == cid:
                by_second.setdefault(int(k[1]), ([], []))[1].append(k)
        for second in sorted(by_second):
            now, sampled = by_second[second]
            cols = {name: [None if r[name] == "" else r[name] for r in now] for name in _TS_COLUMNS}
            cols["error_classes"] = [parse_classes(r["error_classes"]) for r in now]
            ts.append(pa.Table.from_pydict(cols, schema=TIMESERIES_SCHEMA))
            if sampled:
                keys.append(pa.Table.from_pydict({"cell": [k[0] for k in sampled],
                                                  "t_us": [round(k[1] * 1e6) for k in sampled],
                                                  "op": [k[2] for k in sampled], "key": [k[3] for k in sampled],
                                                  # as a run before the kind column: read from the op's name
                                                  "kind": [None] * len(sampled), "index": [None] * len(sampled),
                                                  "access": [None] * len(sampled)},
                                                 schema=KEYS_SCHEMA))
            if running:
                ts.flush()
                keys.flush()
        if not running:
            ts.finish()
            keys.finish()


def _pct(hist: HdrHistogram, percentile: float) -> float | str:
    return hist.get_value_at_percentile(percentile) / 1000.0 if hist.get_total_count() else ""
