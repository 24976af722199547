"""Finished runs of one cell each, shaped like `keyramp run` leaves them, for forecasting key designs.

``DesignRuns(root).run(backend, strategy, ...)`` writes (once per design) a run directory whose
manifest holds the resolved profile and whose summary holds the cell's operation counts: what
``keyramp forecast RUN`` reads. ``launch_file(kind, ...)`` writes a ``[launch]`` file for
``--launch``; the peak then comes from ``--rate``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from keyramp.profile._profile import parse_profile

__all__ = ["LAUNCH_KINDS", "DesignRuns", "diagonal_line", "forecast_json"]

#: A [launch] per kind; ``--rate`` sets its peak (a ramp's ceiling, the others scale).
LAUNCH_KINDS: Mapping[str, Mapping[str, Any]] = {
    "constant": {"kind": "constant", "rate": 1000},
    "ramp_500_50_5": {"kind": "ramp_500_50_5", "ceiling": 10_000},
    "linear": {"kind": "linear", "start_ops": 100, "end_ops": 1000},
    "step": {"kind": "step", "start_ops": 250, "increment": 250, "step": "10m"},
}


class DesignRuns:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._runs: dict[str, Any] = {}
        #: answers worth keeping per design, by the caller's key (the differential suite's reference runs)
        self.memo: dict[Any, Any] = {}

    def run(self, backend: str, strategy: str, *, params: Mapping[str, Any] | None = None,
            ops: Mapping[str, float] | None = None, workload: Mapping[str, Any] | None = None) -> Any:
        """The loaded run (``keyramp.results._catalog.Run``) of one cell with this design."""
        from keyramp.results._catalog import load_run

        ops = dict(ops or {"insert": 1.0})
        key = json.dumps([backend, strategy, params, ops, workload], sort_keys=True)
        if key not in self._runs:
            raw = {"name": "design", "backend": backend, "duration": "10s", "seed": 3,
                   "workload": {"ops": ops, "record_count": 500, **(workload or {})},
                   "keys": {"strategy": strategy, **({"params": dict(params)} if params else {})},
                   "schedule": {"kind": "constant", "rate": 300},
                   "launch": {"kind": "constant", "rate": 1000, "duration": "1h"}}
            profile = parse_profile(raw)
            cell = profile.cells[0]
            run_dir = self.root / f"20260101T000000{len(self._runs):03d}Z-design-{len(self._runs):04x}"
            run_dir.mkdir(parents=True)
            manifest = {"schema": 1, "run_id": run_dir.name, "profile_name": "design", "status": "complete",
                        "profile": json.loads(json.dumps(profile.data)),
                        "cells": [{"id": cell.id, "backend": backend, "strategy": cell.strategy,
                                   "duration_s": 10.0, "time_scale": 1.0}]}
            summary = {"schema": 1, "run_id": run_dir.name, "status": "complete", "cells": {cell.id: {
                "backend": backend, "strategy": cell.strategy, "duration_s": 10.0,
                "operations": {op: {"count": round(3000 * share)} for op, share in ops.items()},
                "total": {"count": 3000}}}}
            (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
            (run_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
            self._runs[key] = load_run(run_dir)
        return self._runs[key]

    def recorded(self, backend: str, name: str, accesses: Sequence[tuple[float, str, str, str, tuple[str, ...]]], *,
                 counts: Mapping[str, float], record_count: int = 100) -> Any:
        """The loaded run of a Python workload (``[workload] user``: its keys are its own) that recorded
        ``accesses`` — ``(t, op, key, kind, index entries)``, one operation each, as the recorder samples a
        workload's captured requests — with ``counts`` operations per op (its summary)."""
        from keyramp.results._catalog import load_run
        from keyramp.results._parquet import KEYS_SCHEMA

        if name in self._runs:
            return self._runs[name]
        raw = {"name": "own", "backend": backend, "duration": "10s", "seed": 3,
               "workload": {"ops": {"insert": 1.0}, "record_count": record_count}, "keys": {"strategy": "random"},
               "schedule": {"kind": "constant", "rate": 300},
               "launch": {"kind": "constant", "rate": 1000, "duration": "1h"}}
        profile = parse_profile(raw)
        data = json.loads(json.dumps(profile.data))  # as a manifest keeps it, the workload the app's
        data["workload"].update(user="/app/own.py:Own", ops={op: 1.0 for op in counts}, insert_ops=[])
        cell = profile.cells[0]
        run_dir = self.root / f"20260102T000000{len(self._runs):03d}Z-own-{len(self._runs):04x}"
        (run_dir / "keys").mkdir(parents=True)
        manifest = {"schema": 1, "run_id": run_dir.name, "profile_name": "own", "status": "complete", "profile": data,
                    "cells": [{"id": cell.id, "backend": backend, "strategy": cell.strategy, "duration_s": 10.0,
                               "time_scale": 1.0}]}
        summary = {"schema": 1, "run_id": run_dir.name, "status": "complete", "cells": {cell.id: {
            "backend": backend, "strategy": cell.strategy, "duration_s": 10.0,
            "operations": {op: {"count": round(n)} for op, n in counts.items()},
            "total": {"count": round(sum(counts.values()))}}}}
        (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        (run_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
        n = len(accesses)
        table = pa.Table.from_pydict({
            "cell": [cell.id] * n, "t_us": [round(a[0] * 1e6) for a in accesses], "op": [a[1] for a in accesses],
            "key": [a[2] for a in accesses], "kind": [a[3] for a in accesses],
            "index": [list(a[4]) or None for a in accesses], "access": [0] * n}, schema=KEYS_SCHEMA)
        pq.write_table(table, run_dir / "keys" / f"{cell.id}.parquet")
        self._runs[name] = load_run(run_dir)
        return self._runs[name]

    def launch_file(self, kind: str, *, duration: str = "1h", nodes: int | None = None) -> Path:
        """A TOML file with the ``[launch]`` of ``kind`` (``LAUNCH_KINDS``)."""
        from keyramp.profile._files import toml_value

        table = {**LAUNCH_KINDS[kind], "duration": duration, **({"nodes": nodes} if nodes else {})}
        path = self.root / f"launch-{kind}-{duration}-{nodes or 0}.toml"
        if not path.exists():
            path.write_text("[launch]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in table.items()),
                            encoding="utf-8")
        return path


def forecast_json(run: Any, launch_file: Path, rate: float, *, nodes: int | None = None,
                  stability: bool = True) -> dict[str, Any]:
    """One forecast exactly as ``keyramp forecast RUN --launch FILE --rate R [--nodes N] --json`` makes it.

    Every forecast with a band carries its stability re-run (twice the samples, another draw): it must
    be there, and must keep the verdict (a missing ``stability`` is a failure, never a pass).
    ``stability=False``: a test that turned the re-run off on purpose (and says so)."""
    from keyramp.forecast._reforecast import reforecast

    backend = run.manifest.cells[0].backend
    out = reforecast(run, launch_file=launch_file, rate=rate, nodes=nodes if backend == "bigtable" else None)
    (fc,) = (doc.to_json() for doc in out.values())
    if stability and fc.get("throttled_fraction") is not None:
        assert "stability" in fc, "a forecast with a band and no stability re-run"
        assert fc["stability"]["same_verdict"] is True, fc["stability"]
    return fc


def diagonal_line(counts: Any) -> tuple[float, float]:
    """Key Visualizer's "bright diagonal line" in a heatmap (``counts[time_bin][bucket]``): the
    correlation of the hottest bucket with time, and the mean share of each time bin's accesses
    within a band of 10 % of the buckets (a line: both near 1; spread keys: neither)."""
    counts = np.asarray(counts, dtype=np.float64)
    counts = counts[counts.sum(axis=1) > 0]
    hottest = counts.argmax(axis=1)
    corr = float(np.corrcoef(np.arange(len(hottest)), hottest)[0, 1]) if hottest.std() else 0.0
    width = max(1, counts.shape[1] // 10)
    band = np.array([np.convolve(row, np.ones(width), mode="valid").max() for row in counts])
    return corr, float((band / counts.sum(axis=1)).mean())
