"""``keyramp keyspace RUN``: heatmaps, hotspot metrics and the tablet model for a run."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from keyramp._errors import UsageError
from keyramp.keyspace._analyse import reference_or_none
from keyramp.keyspace._heatmap import heatmap_data, render_png
from keyramp.keyspace._load import load_run, target_rate_fn
from keyramp.keyspace._metrics import analyze_cell

__all__ = ["register", "run_keyspace"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "keyspace",
        help="key-space heatmap, hotspot metrics and modelled tablet splits for a run",
        description=(
            "Where the load of each cell landed in the key space (measured from keys.csv) and what "
            "a range-partitioned store would do with it (modelled). Writes RUN/keyspace/<cell>.png "
            "and <cell>.json and prints the metrics."
        ),
    )
    parser.add_argument("run", metavar="RUN", help="run directory (or run id under ./results)")
    parser.add_argument("--cell", help="only this cell id")
    parser.add_argument("--buckets", type=int, default=1000, help="key-range buckets (default 1000)")
    parser.add_argument("--time-bins", type=int, default=None, help="heatmap time bins (default: 1 per second, max 300)")
    parser.add_argument("--out", default=None, help="output directory (default RUN/keyspace)")
    parser.add_argument("--no-png", action="store_true", help="write the JSON only")
    parser.set_defaults(func=_main)


def _resolve_run(text: str) -> Path:
    path = Path(text)
    if path.is_dir():
        return path
    alt = Path("results") / text
    if alt.is_dir():
        return alt
    raise UsageError(f"not a run directory: {text}")


def _safe_name(cell: str) -> str:
    # Cell ids are [a-z0-9_-] by contract; refuse anything that could escape --out.
    if not cell or os.sep in cell or cell.startswith(".") or (os.altsep and os.altsep in cell):
        raise UsageError(f"unsafe cell id in keys.csv: {cell!r}")
    return cell


def _keyed_counts(run_dir: Path) -> dict[str, int]:
    """Cell id -> operations counted in summary.json (the denominator of the sample rate)."""
    path = run_dir / "summary.json"
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", {})
        return {str(k): int(v["total"]["count"]) for k, v in cells.items() if isinstance(v, dict) and "total" in v}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def run_keyspace(
    run_dir: Path,
    *,
    cell: str | None = None,
    buckets: int = 1000,
    time_bins: int | None = None,
    out_dir: Path | None = None,
    png: bool = True,
) -> dict[str, dict[str, Any]]:
    """Analyse every (or one) cell of a run; write JSON (+ PNG); return cell -> result."""
    if buckets < 1:
        raise UsageError("--buckets must be >= 1")
    if time_bins is not None and time_bins < 1:
        raise UsageError("--time-bins must be >= 1")
    data = load_run(run_dir, cell=cell)
    out_dir = out_dir or run_dir / "keyspace"
    results: dict[str, dict[str, Any]] = {}
    counts = _keyed_counts(run_dir)
    profile = data.manifest.get("profile") if isinstance(data.manifest.get("profile"), dict) else None
    for name in sorted(data.keys):
        ck = data.keys[name]
        meta = data.cells_meta.get(name, {})
        backend = str(meta.get("backend", "datastore"))
        strategy = str(meta.get("strategy", "?"))
        time_scale = float(meta.get("time_scale", 1.0) or 1.0)
        rate_fn = target_rate_fn(data.targets.get(name), time_scale=time_scale)
        sample_rate = min(1.0, len(ck) / max(counts.get(name, len(ck)), 1))
        # The range the cell ran against, rebuilt from the resolved profile in the manifest
        # (as the runner did for summary.json); without one, the sampled keys alone.
        reference = reference_or_none(profile=profile, backend=backend, strategy=strategy, samples=ck,
                                      sample_rate=sample_rate)
        kp, t, metrics, timeline = analyze_cell(
            ck.key, ck.t, ck.op, backend=backend, time_scale=time_scale, rate_fn=rate_fn, buckets=buckets,
            sample_rate=sample_rate, reference=reference,
        )
        metrics = {**metrics, "range_from": "profile" if reference is not None else "samples"}
        duration = float(meta.get("duration_s") or (t[-1] if len(t) else 1.0))
        heat = heatmap_data(kp, t, buckets=buckets, time_bins=time_bins, duration_s=max(duration, float(t[-1])))
        doc = {
            "schema": 1,
            "run_id": data.manifest.get("run_id"),
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
    head = ("cell", "samples", "hot bucket", "hot 1%", "gini", "append", "moving", "tablets*", "throttled*")
    rows = [head]
    for name, doc in results.items():
        m, model = doc["metrics"], doc["model"] or {}
        rows.append(
            (
                name,
                f"{m['samples']:,}",
                f"{m['hottest_bucket_share']:.3f}",
                f"{m['hottest_1pct_share']:.3f}",
                f"{m['gini']:.2f}",
                f"{m['append_fraction']:.2f}",
                "yes" if m["moving_hotspot"] else "no",
                str(model.get("peak_tablets", "-")),
                f"{model['max_throttled_fraction']:.1%}" if model else "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.append("* modelled: a range-partitioned store simulated from the key stream (docs/keyspace-model.md)")
    return "\n".join(lines)


def _main(args: argparse.Namespace) -> int:
    run_dir = _resolve_run(args.run)
    results = run_keyspace(
        run_dir,
        cell=args.cell,
        buckets=args.buckets,
        time_bins=args.time_bins,
        out_dir=Path(args.out) if args.out else None,
        png=not args.no_png,
    )
    if not results:
        raise UsageError(f"{run_dir}/keys.csv holds no sampled keys")
    print(format_table(results))
    return 0
