"""Fitting the model's parameters to what a real service did (``keyramp calibrate fit``).

A calibration run (``_calibrate`` writes the suite) schedules a known load on a new key
range of the real service and records, per second, what was scheduled and what the store
served. The tablet model, driven by the same key pattern and schedule, predicts the
throttled share per 10-s step for any parameter point; the fit is the grid point that
predicts the observed shares best (least squares over all runs), and each parameter's
range is the span of grid points that fit almost as well. Stages: the one-tablet capacity
first (an append point's plateau shows it directly), then the split trigger, delay and
fan-out with the capacity fixed (a 0 -> N jump on a new range shows those).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from keyramp.backends import ParamRange, store_key, store_params
from keyramp.core import ALL_OPS, UsageError
from keyramp.forecast._mix import op_mix
from keyramp.forecast._model import run_point
from keyramp.forecast._project import regenerated_projection
from keyramp.keys import make_strategy
from keyramp.profile import Settings
from keyramp.results import Run, read_timeseries

__all__ = ["FitResult", "Trace", "fit", "model_throttled", "traces_from_runs", "write_params_file"]

_STEP_S = 10.0
_SAMPLES_PER_S = 20
#: Grid points within this share of the best loss (plus a floor) count as "fits as well".
_TOLERANCE = 0.25
_FLOOR_PER_STEP = 2e-4


@dataclass(frozen=True, kw_only=True)
class Trace:
    """One calibration cell: per second, the scheduled ops/s and the operations the store served."""

    name: str
    backend: str
    strategy: str
    settings: Settings  # the run's profile, typed (keys are regenerated from it)
    target: np.ndarray
    served: np.ndarray

    def observed(self) -> np.ndarray:
        """Throttled share per 10-s step: 1 - served / scheduled."""
        n = int(len(self.target) // _STEP_S)
        tgt = self.target[: int(n * _STEP_S)].reshape(n, -1).sum(axis=1)
        ok = self.served[: int(n * _STEP_S)].reshape(n, -1).sum(axis=1)
        return np.clip(1.0 - ok / np.maximum(tgt, 1e-9), 0.0, 1.0)


def traces_from_runs(runs: Iterable[Run]) -> list[Trace]:
    """Traces of finished runs (``keyramp.results._catalog.Run``): every cell with a schedule.

    Served = operations without errors, per second (the time series' all-operations rows);
    errors of every class count as not served (the service refused, timed out or aborted).
    """
    out = []
    for run in runs:
        manifest = run.manifest
        settings = None if manifest is None else manifest.settings
        # A keyramp run's manifest keeps its resolved profile, workload and all (an older one too).
        if manifest is None or settings is None or "workload" not in (manifest.profile or {}):
            raise UsageError(f"{run.path}: no resolved profile in manifest.json: not a keyramp run")
        for cell in manifest.cells:
            rows = [r for r in read_timeseries(run, cell=cell.id, op=ALL_OPS).to_pylist() if r["target_ops_per_s"]]
            if not rows:
                continue
            length = max(int(r["second"]) for r in rows) + 1
            target, served = np.zeros(length), np.zeros(length)
            for r in rows:
                target[int(r["second"])] = float(r["target_ops_per_s"] or 0.0)
                served[int(r["second"])] = max(0.0, float(r["count"] or 0) - float(r["errors"] or 0))
            out.append(Trace(name=f"{run.run_id}/{cell.id}", backend=str(cell.backend),
                             strategy=str(cell.strategy), settings=settings, target=target, served=served))
    if not out:
        raise UsageError("no calibration cells with a scheduled rate in these runs")
    return out


class _Model:
    """One trace's projection, built once and simulated at many parameter points."""

    def __init__(self, trace: Trace, *, seed: int, nodes: int, storage: str | None = None) -> None:
        self.trace = trace
        self.nodes = nodes
        kind = store_params(trace.backend, storage).kind
        if kind is None:
            raise ValueError(f"{trace.backend}: its parameter box names no tablet model to fit")
        self.kind = kind
        self.duration = float(len(trace.target))
        target = trace.target
        self.rate = lambda t: float(target[min(int(t), len(target) - 1)])
        workload = trace.settings.workload
        mix = op_mix(dict(workload.ops), workload)
        self.projection = regenerated_projection(
            settings=trace.settings, backend=trace.backend, strategy=trace.strategy, mix=mix, rate=self.rate,
            duration_s=self.duration, existing=int(workload.record_count),
            samples=int(max(2_000, _SAMPLES_PER_S * self.duration)), seed=seed)

    def throttled(self, point: Mapping[str, float]) -> np.ndarray:
        out = run_point(self.projection, kind=self.kind, point=point, rate=self.rate,
                        duration_s=self.duration, nodes=self.nodes)
        return out.throttled


def model_throttled(trace: Trace, point: Mapping[str, float], *, seed: int = 0, nodes: int = 1) -> np.ndarray:
    """The model's throttled share per 10-s step for ``trace``'s pattern and schedule at ``point``."""
    return _Model(trace, seed=seed, nodes=nodes).throttled(point)


@dataclass(frozen=True, kw_only=True)
class FitResult:
    store: str
    ranges: dict[str, ParamRange]
    best: dict[str, float]
    loss: float
    traces: tuple[str, ...]


def _loss(models: Sequence[_Model], observed: Sequence[np.ndarray], point: Mapping[str, float]) -> float:
    total = 0.0
    for model, obs in zip(models, observed, strict=True):
        pred = model.throttled(point)
        n = min(len(pred), len(obs))
        total += float(((pred[:n] - obs[:n]) ** 2).sum())
    return total


def _search(
    models: Sequence[_Model],
    observed: Sequence[np.ndarray],
    base: Mapping[str, float],
    grid: Mapping[str, Sequence[float]],
) -> tuple[dict[str, float], float, list[tuple[dict[str, float], float]]]:
    names = list(grid)
    scored = []
    for values in itertools.product(*(grid[n] for n in names)):
        point = {**base, **dict(zip(names, values, strict=True))}
        scored.append((point, _loss(models, observed, point)))
    best, loss = min(scored, key=lambda s: s[1])
    return best, loss, scored


def _near(scored: list[tuple[dict[str, float], float]], best: float, steps: int) -> list[dict[str, float]]:
    limit = best * (1 + _TOLERANCE) + _FLOOR_PER_STEP * steps
    return [p for p, loss in scored if loss <= limit]


def _span(values: Sequence[float], grid: Sequence[float]) -> tuple[float, float]:
    """The near-optimal values widened to the neighbouring grid points: no range is narrower than the grid."""
    ordered = sorted(grid)
    lo_i, hi_i = ordered.index(min(values)), ordered.index(max(values))
    return ordered[max(0, lo_i - 1)], ordered[min(len(ordered) - 1, hi_i + 1)]


def fit(traces: Sequence[Trace], *, storage: str | None = None, nodes: int = 1, seed: int = 0,
        grid: Mapping[str, Sequence[float]] | None = None) -> FitResult:
    """Fit one store's parameters to ``traces`` (all from the same backend)."""
    backends = {t.backend for t in traces}
    if len(backends) != 1:
        raise UsageError(f"fit one store at a time; these traces are from {', '.join(sorted(backends))}")
    backend = backends.pop()
    box = store_params(backend, storage)
    cap_name = box.capacity_param
    g = {
        cap_name: list(np.geomspace(100.0, 40_000.0 if box.kind == "nodes" else 8_000.0, 31)),
        "split_delay_s": [10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 240.0, 300.0, 450.0, 600.0, 900.0],
        "split_threshold_frac": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
        "split_fanout": [2.0, 3.0, 4.0],
        **(grid or {}),
    }
    models = [_Model(t, seed=seed, nodes=nodes, storage=storage) for t in traces]
    observed = [t.observed() for t in traces]
    steps = sum(len(o) for o in observed)
    base = box.mid()
    # Stage 1: capacity, from the cells with one append point if there are any (they show it alone).

    # Monotonic as the strategy declares it (a template's traits follow its format: yyyymmddhh#seq appends).
    appending = [i for i, t in enumerate(traces) if make_strategy(t.strategy).traits.monotonic]
    pick = appending or list(range(len(traces)))
    best1, loss1, scored1 = _search(
        [models[i] for i in pick], [observed[i] for i in pick], base, {cap_name: g[cap_name]}
    )
    caps = _span([p[cap_name] for p in _near(scored1, loss1, sum(len(observed[i]) for i in pick))], g[cap_name])
    # Stage 2: the split mechanics with the capacity fixed, on every trace.
    split_grid = {k: g[k] for k in ("split_delay_s", "split_threshold_frac", "split_fanout")}
    best2, loss2, scored2 = _search(models, observed, best1, split_grid)
    near2 = _near(scored2, loss2, steps)
    source = "keyramp calibrate fit of " + ", ".join(t.name for t in traces)
    ranges = {cap_name: ParamRange(low=min(caps), mid=best1[cap_name], high=max(caps), unit=box.ranges[cap_name].unit,
                                   source=source, note="fitted: the append point's plateau", better="high")}
    for name in split_grid:
        low, high = _span([p[name] for p in near2], split_grid[name])
        r = box.ranges[name]
        ranges[name] = ParamRange(low=low, mid=best2[name], high=high, unit=r.unit, source=source,
                                  note=f"fitted: grid points within {_TOLERANCE:.0%} of the best loss",
                                  better=r.better)
    return FitResult(store=store_key(backend, storage), ranges=ranges, best=dict(best2), loss=loss2,
                     traces=tuple(t.name for t in traces))


def write_params_file(path: Path, results: Sequence[FitResult]) -> Path:
    """The calibration file ``[launch] params`` and ``keyramp forecast --params`` read."""
    doc: dict[str, Any] = {
        "schema": 1,
        "stores": {r.store: {name: {**rng.to_json()} for name, rng in r.ranges.items()} for r in results},
        "fits": {r.store: {"loss": round(r.loss, 6), "best": r.best, "traces": list(r.traces)} for r in results},
    }
    for store in doc["stores"].values():
        for spec in store.values():
            for key in ("low", "mid", "high"):
                spec[key] = round(float(spec[key]), 3) if math.isfinite(spec[key]) else spec[key]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path
