"""One cell's launch forecast: projection, the band over the parameter box, and the JSON for summary.json."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from keyramp._errors import UsageError
from keyramp.forecast._band import HOTSPOT_MIN, OK_MAX, PEAK_OK_MAX, Band, evaluate_band
from keyramp.forecast._launch import Launch
from keyramp.forecast._model import Outcome, run_point
from keyramp.forecast._params import StoreParams
from keyramp.forecast._project import OpMix, Projection, op_mix, recorded_projection, regenerated_projection
from keyramp.forecast._stores import model_of, store_params

__all__ = ["forecast_cell", "forecast_run_cell", "forecast_step", "projection_for", "recorded_samples", "samples_for",
           "why_not_regenerated"]

_TIMELINE_POINTS = 120


def samples_for(duration_s: float) -> int:
    """Sampled row accesses per projected range: ~6 per launch second (60 per 10-s step), 12,000–30,000."""
    return int(min(30_000, max(12_000, 6 * duration_s)))


def _counts(cell_summary: Mapping[str, Any]) -> dict[str, float]:
    ops = cell_summary.get("operations")
    out: dict[str, float] = {}
    for op, stats in (ops.items() if isinstance(ops, Mapping) else ()):
        count = stats.get("count") if isinstance(stats, Mapping) else None
        if isinstance(count, int | float) and not isinstance(count, bool):
            out[str(op)] = float(count)
    return out


def why_not_regenerated(profile: Mapping[str, Any] | None, backend: str, strategy: str) -> str | None:
    """Why the cell's keys cannot be regenerated, or None if they can."""
    if not profile:
        return "no profile in the run: the recorded positions are replayed"
    try:
        from keyramp.keys import make_strategy

        made = make_strategy(strategy, seed=int(profile["seed"]), params=profile["keys"]["params"], backend=backend)
    except (UsageError, KeyError, TypeError, ValueError) as exc:
        return f"the strategy cannot be rebuilt ({exc}): the recorded positions are replayed"
    if made.server_allocated:
        return "the store allocates the keys: the recorded positions are replayed"
    return None


def projection_for(*, backend: str, strategy: str, profile: Mapping[str, Any] | None, mix: OpMix, launch: Launch,
                   samples: Any = None, recorded_pos: np.ndarray | None = None, seed: int = 0,
                   index_ranges: bool = True) -> Projection | None:
    """The launch stream of a cell: regenerated from its strategy, else its recorded positions replayed.

    ``index_ranges``: project an indexed field's own key range (stores that index every field).
    """
    n = samples_for(launch.duration_s)
    why = why_not_regenerated(profile, backend, strategy)
    if why is None:
        return regenerated_projection(profile=profile, backend=backend, strategy=strategy, mix=mix,  # type: ignore[arg-type]
                                      rate=launch.rate, duration_s=launch.duration_s,
                                      existing=int(profile["workload"]["record_count"]), samples=n, seed=seed,  # type: ignore[index]
                                      index_ranges=index_ranges)
    if samples is None or recorded_pos is None or len(recorded_pos) == 0:
        return None
    return recorded_projection(pos=recorded_pos, ops=samples.op, mix=mix, duration_s=launch.duration_s, samples=n,
                               why=why)


def _timeline(band: Band) -> dict[str, Any]:
    mid = band.outcomes["mid"]
    stride = max(1, math.ceil(len(mid.t) / _TIMELINE_POINTS))
    return {
        "t": [round(float(v), 1) for v in mid.t[::stride]],
        "offered_ops_per_s": [round(float(v), 1) for v in mid.offered[::stride]],
        "throttled": {label: [round(float(v), 4) for v in o.throttled[::stride]] for label, o in band.outcomes.items()},
    }


def _pattern_check(*, backend: str, strategy: str, profile: Mapping[str, Any], mix: OpMix,
                   cell_summary: Mapping[str, Any], cell_schedule: Any, horizon_s: float) -> dict[str, Any] | None:
    """The regenerated stream at the cell's own rate, held against what the cell measured.

    If the projection reproduces the recorded hotspot share at the emulator's scale, the
    launch stream it builds the same way is the cell's pattern, not an invention.
    """
    keyspace = cell_summary.get("keyspace") or {}
    measured, sampled = keyspace.get("hottest_1pct_share"), keyspace.get("samples")
    if measured is None or not sampled or cell_schedule is None or not cell_schedule.open_model or horizon_s <= 0:
        return None
    from keyramp.keyspace._metrics import hotspot_metrics
    from keyramp.keyspace._reference import existing_before

    proj = regenerated_projection(profile=profile, backend=backend, strategy=strategy, mix=mix,
                                  rate=cell_schedule.rate, duration_s=horizon_s,
                                  existing=existing_before(cell_summary, profile),
                                  samples=int(min(20_000, sampled)), index_ranges=False)  # as many as measured
    kp = proj.positions
    assert kp is not None
    m = hotspot_metrics(kp.pos, proj.t, inserts=proj.is_new, distinct=kp.distinct, positions=kp)
    return {"measured_hottest_1pct_share": round(float(measured), 4),
            "regenerated_hottest_1pct_share": round(float(m["hottest_1pct_share"]), 4)}


def forecast_cell(*, backend: str, strategy: str, profile: Mapping[str, Any] | None, launch: Launch,
                  cell_summary: Mapping[str, Any], samples: Any = None, recorded_pos: np.ndarray | None = None,
                  boxes: Mapping[str, StoreParams] | None = None, cell_schedule: Any = None,
                  horizon_s: float = 0.0) -> dict[str, Any]:
    """``cells[id].forecast`` for summary.json: bands, verdict, sensitivity, params, launch, projection.

    ``profile``: the resolved profile (keys are regenerated from it); ``samples`` /
    ``recorded_pos``: the cell's sampled keys and their positions, replayed when the keys
    cannot be regenerated; ``boxes``: parameter boxes of a calibration file (default: the
    published figures and stated guesses).
    """
    workload = (profile or {}).get("workload") or {"ops": {}, "batch_size": 1, "scan_length": 1}
    mix = op_mix(_counts(cell_summary), workload)
    from keyramp.backends import STORES

    model = model_of(backend)
    box = store_params(backend, launch.storage if model.storage_types else None, boxes=dict(boxes) if boxes else None)
    nodes = int(launch.nodes or 1)
    base: dict[str, Any] = {"modelled": True, "launch": launch.for_backend(backend),
                            "params": box.to_json(), "params_from": box.origin}
    indexes = STORES.get(backend).has("secondary_indexes") and "index_append_ops_per_s" in box.ranges
    proj = projection_for(backend=backend, strategy=strategy, profile=profile, mix=mix, launch=launch,
                          samples=samples, recorded_pos=recorded_pos, index_ranges=indexes)
    if proj is None:
        return {**base, "verdict": None, "reason": "no sampled keys to project"}
    if mix.rows_per_op <= 0:
        return {**base, "verdict": None, "reason": "no projectable operations (only " +
                ", ".join(mix.not_projected) + ")"}

    kind = box.kind
    if kind is None:
        raise ValueError(f"{box.store}: its parameter box names no tablet model to run")

    def run(point: Mapping[str, float]) -> Outcome:
        return run_point(proj, kind=kind, point=point, rate=launch.rate, duration_s=launch.duration_s,
                         nodes=nodes)

    band = evaluate_band(box, run)
    projection: dict[str, Any] = {
        "keys": proj.source,
        "why": proj.why,
        "ranges": ["rows" if box.kind == "nodes" else "documents", *proj.index],
        "op_mix": {op: round(v, 4) for op, v in proj.mix.shares.items()},
        "rows_per_op": round(proj.mix.rows_per_op, 4),
        "read_rows_share": round(proj.mix.reads_per_op / proj.mix.rows_per_op, 4),
        "not_projected": list(proj.mix.not_projected),
    }
    if proj.source == "regenerated" and profile:
        try:
            check = _pattern_check(backend=backend, strategy=strategy, profile=profile, mix=mix,
                                   cell_summary=cell_summary, cell_schedule=cell_schedule, horizon_s=horizon_s)
        except (UsageError, KeyError, TypeError, ValueError):
            check = None
        if check is not None:
            projection["check"] = check
    return {
        **base,
        "verdict": band.verdict,
        "deciding_param": band.deciding,
        **band.figures,
        "verdicts": band.verdicts,
        "sensitivity": band.sensitivity,
        "criteria": {"ok": f"throttled ≤ {OK_MAX:.0%} and no 10-s step above {PEAK_OK_MAX:.0%}",
                     "hotspot": f"throttled ≥ {HOTSPOT_MIN:.0%}", "at_risk": "in between"},
        "projection": projection,
        "timeline": _timeline(band),
    }


def recorded_samples(samples: Any, *, profile: Mapping[str, Any] | None, backend: str, strategy: str,
                     launch: Launch) -> tuple[Any, np.ndarray | None]:
    """The sampled keys thinned evenly in time to what a replay uses, and their positions.

    A replay takes ``samples_for(launch)`` accesses: a few times that many recorded ones are
    plenty, so 10 M samples cost no more than 100,000.
    """
    if samples is None or not len(samples):
        return samples, None
    from keyramp.keyspace._analyse import reference_or_none
    from keyramp.keyspace._load import CellKeys, key_positions

    keep = 4 * samples_for(launch.duration_s)
    if len(samples) > keep:
        idx = np.linspace(0, len(samples) - 1, keep).round().astype(np.int64)
        samples = CellKeys(cell=samples.cell, t=samples.t[idx], op=samples.op[idx], key=samples.key[idx])
    ref = reference_or_none(profile=profile, backend=backend, strategy=strategy, samples=samples, sample_rate=1.0)
    return samples, key_positions(samples.key, reference=ref).pos


def forecast_run_cell(*, run_dir: Path, cell: Any, profile: Mapping[str, Any], cell_summary: Mapping[str, Any],
                      launch: Launch, boxes: Mapping[str, StoreParams] | None = None) -> dict[str, Any]:
    """``forecast_cell`` for a cell the runner just finished (``cell``: a profile ``Cell``).

    The sampled keys are read only when the keys cannot be regenerated (replayed instead).
    """
    samples = recorded = None
    if why_not_regenerated(profile, cell.backend, cell.strategy) is not None:
        from keyramp.keyspace._load import load_keys

        samples, recorded = recorded_samples(
            load_keys(run_dir, cell=cell.id).get(cell.id), profile=profile,
            backend=cell.backend, strategy=cell.strategy, launch=launch)
    return forecast_cell(backend=cell.backend, strategy=cell.strategy, profile=profile, launch=launch,
                         cell_summary=cell_summary, samples=samples, recorded_pos=recorded, boxes=boxes,
                         cell_schedule=cell.schedule, horizon_s=cell.horizon_s)


def forecast_step(a: Any) -> None:
    """The run's analysis step after each cell (``keyramp.run._analysis.CellAnalysis``): adds
    ``summary["forecast"]`` when the profile has a ``[launch]``; a probe cell has no key stream."""
    launch = getattr(a.profile, "launch", None)
    if launch is None or not a.measured:
        return
    a.summary["forecast"] = forecast_run_cell(run_dir=a.run_dir, cell=a.cell, profile=a.profile.data,
                                              cell_summary=a.summary, launch=launch, boxes=launch.boxes())
