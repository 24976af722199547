"""Heatmaps, hotspot metrics and the tablet model for each cell of a run (``keyramp keyspace RUN``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from keyramp.backends import DEFAULT_BACKEND
from keyramp.core import UsageError
from keyramp.keyspace._analyse import analyse_samples, cell_duration, cell_existing, total_count
from keyramp.keyspace._heatmap import heatmap_data, render_png
from keyramp.keyspace._load import load_keys, target_rate_fn
from keyramp.results import KeyspaceFigures, ManifestCell, Run, RunManifest, TabletModel, load_run

__all__ = ["format_table", "run_keyspace"]


def _safe_name(cell: str) -> str:
    # Cell ids are [a-z0-9_-] by contract; refuse anything that could escape --out.
    if not cell or os.sep in cell or cell.startswith(".") or (os.altsep and os.altsep in cell):
        raise UsageError(f"unsafe cell id in the key samples: {cell!r}")
    return cell


def run_keyspace(
    run: Path | Run,
    *,
    cell: str | None = None,
    buckets: int = 1000,
    time_bins: int | None = None,
    out_dir: Path | None = None,
    png: bool = True,
) -> dict[str, dict[str, Any]]:
    """Analyse every (or one) cell of a run; write JSON (+ PNG); return cell -> result.

    ``run``: a run directory or a catalog ``Run``. Cell metadata comes from manifest.json,
    operation counts and scheduled rates from summary.json; without them (a bare directory
    holding key samples) the sampled keys stand alone.
    """
    if buckets < 1:
        raise UsageError("--buckets must be >= 1")
    if time_bins is not None and time_bins < 1:
        raise UsageError("--time-bins must be >= 1")
    if not isinstance(run, Run):
        if not Path(run).is_dir():
            raise UsageError(f"not a run directory: {run}")
        run = load_run(Path(run))
    if run.manifest is None and (run.path / "manifest.json").exists():
        raise UsageError(f"{run.path / 'manifest.json'}: {run.manifest_error or 'unreadable or invalid JSON'}")
    manifest = run.manifest or RunManifest()
    cells_meta = {c.id: c for c in manifest.cells}
    if cell is not None and cells_meta and cell not in cells_meta:
        raise UsageError(f"unknown cell {cell!r}; cells: {', '.join(sorted(cells_meta))}")
    keys = load_keys(run, cell=cell)
    if not keys:
        raise UsageError(f"{run.path} holds no sampled keys")
    if cell is not None and cell not in keys:
        raise UsageError(f"no sampled keys for cell {cell!r}")
    out_dir = out_dir or run.path / "keyspace"
    results: dict[str, dict[str, Any]] = {}
    settings = manifest.settings
    for name in sorted(keys):
        ck = keys[name]
        meta = cells_meta.get(name) or ManifestCell(id=name)
        cell_summary = run.cell(name)
        backend = meta.backend or DEFAULT_BACKEND
        strategy = meta.strategy or "?"
        time_scale = float(meta.time_scale or 1.0)
        rate_fn = target_rate_fn([p.to_json() for p in cell_summary.target_ops_per_s], time_scale=time_scale)
        # The range the cell ran against, rebuilt from the resolved profile in the manifest
        # (as the runner did for summary.json); without one, the sampled keys alone.
        kp, t, metrics, timeline = analyse_samples(
            ck, settings=settings, backend=backend, strategy=strategy, time_scale=time_scale, rate_fn=rate_fn,
            total_count=total_count(cell_summary, len(ck)), buckets=buckets,
            existing=cell_existing(cell_summary, manifest.run_cell(name)), duration_s=cell_duration(cell_summary),
        )
        duration = float(meta.duration_s or (t[-1] if len(t) else 1.0))
        heat = heatmap_data(kp, t, buckets=buckets, time_bins=time_bins, duration_s=max(duration, float(t[-1])))
        doc = {
            "schema": 1,
            "run_id": manifest.run_id,
            "cell": name,
            "backend": backend,
            "strategy": strategy,
            "time_scale": time_scale,
            **heat,
            "metrics": metrics,
            "model": None if timeline is None else {**timeline.summary(), "timeline": timeline.to_json()},
        }
        safe = _safe_name(name)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{safe}.json").write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
        if png:
            render_png(
                heat,
                out_dir / f"{safe}.png",
                title=f"{name} — {strategy} keys on {backend} ({metrics['samples']:,} sampled ops)",
                time_scale=time_scale,
            )
        results[name] = doc
    return results


def format_table(results: dict[str, dict[str, Any]]) -> str:
    head = ("cell", "samples", "hot bucket", "hot 1%", "hot ops/s", "gini", "append", "points", "moving",
            "tablets*", "throttled*")
    rows = [head]
    for name, doc in results.items():
        m = KeyspaceFigures.from_json(doc["metrics"], where=f"{name}.metrics")
        model = None if doc["model"] is None else TabletModel.from_json(doc["model"], where=f"{name}.model")
        rows.append(
            (
                name,
                f"{m.samples:,}",
                f"{m.hottest_bucket_share:.3f}",
                f"{m.hottest_1pct_share:.3f}",
                "-" if m.hottest_1pct_ops_per_s is None else f"{m.hottest_1pct_ops_per_s:,.0f}",
                f"{m.gini:.2f}",
                f"{m.append_fraction:.2f}",
                "spread" if m.append_points is None else str(m.append_points),
                "yes" if m.moving_hotspot else "no",
                "-" if model is None or model.peak_tablets is None else str(model.peak_tablets),
                "-" if model is None else f"{model.max_throttled_fraction:.1%}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]
    lines.append("* modelled: a range-partitioned store simulated from the key stream (docs/keyspace-model.md)")
    return "\n".join(lines)
