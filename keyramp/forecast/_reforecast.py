"""Re-project a finished run to a launch without re-running it (``keyramp forecast RUN``)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keyramp.core import UsageError
from keyramp.forecast._text import band_text, figure_text, forecast_short, keys_note
from keyramp.results import CellForecast, Run

__all__ = ["format_table", "reforecast"]


def _launch_table(path: Path) -> dict[str, Any]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: cannot read TOML: {exc}") from None
    table = raw.get("launch")
    if not isinstance(table, dict):
        raise UsageError(f"{path}: no [launch] table")
    return table


def reforecast(run: Run, *, launch_file: Path | None = None, rate: float | None = None, nodes: int | None = None,
               storage: str | None = None, duration_s: float | None = None, params: Path | None = None,
               cell: str | None = None) -> dict[str, CellForecast]:
    """Cell id -> forecast for a loaded run (``keyramp.results._catalog.Run``)."""
    # deferred: start-up cost (the stores, the profile schema, numpy, pyarrow: `keyramp forecast --help`
    # imports this module and needs none of them)
    from keyramp.backends import (
        default_boxes,  # deferred: start-up cost
        load_params_file,  # deferred: start-up cost
    )
    from keyramp.forecast._forecast import Forecaster  # deferred: start-up cost
    from keyramp.forecast._launch import Launch, cluster_stores, parse_launch  # deferred: start-up cost
    from keyramp.forecast._run_designs import run_designs  # deferred: start-up cost

    designs = run_designs(run, cell=cell)
    backends = designs.backends
    if (nodes is not None or storage is not None) and not cluster_stores(backends):
        raise UsageError(f"--nodes/--storage apply to stores with nodes (bigtable) only; this run's backends: "
                         f"{', '.join(backends)}")
    if launch_file is not None:
        launch = Launch.from_resolved(parse_launch(_launch_table(launch_file), src=str(launch_file),
                                                   backends=backends))
    elif designs.launch is not None:
        launch = designs.launch
    elif rate is not None:
        launch = Launch.constant(rate)
    else:
        raise UsageError(f"{run.path}: the run's profile has no [launch]; give --launch FILE or --rate N")
    launch = launch.with_overrides(peak=rate if (launch_file or designs.launch) else None,
                                   nodes=nodes, storage=storage, duration_s=duration_s)
    boxes = load_params_file(params, default_boxes()) if params else launch.boxes()
    return {c.cell_id: Forecaster(c.design, recorded=c.samples).forecast(launch, boxes=boxes).to_doc()
            for c in designs.cells}


def format_table(results: Mapping[str, CellForecast]) -> str:
    head = ("cell", "forecast*", "mid", "peak step", "adapts in", "added p99", "keys", "decided by")
    rows = [head]
    for cell_id, fc in results.items():
        mid = fc.throttled_fraction.mid if fc.throttled_fraction is not None else None
        rows.append((
            cell_id, forecast_short(fc), "-" if mid is None else f"{100 * mid:.1f}%",
            band_text(fc.peak_throttled_fraction), band_text(fc.adapt_s, unit=" s"),
            figure_text(fc, "added_p99_ms"), _keys_from(fc), _decided_by(fc),
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    launch = next((fc.launch for fc in results.values() if fc.launch is not None), None)
    if launch is not None:
        lines.insert(0, f"launch: {launch.description} (peak {launch.peak_ops_per_s:,.0f} ops/s, "
                        f"{launch.total_ops:,} operations)")
    lines.append("* modelled: share of launch operations throttled, low–high over the parameter ranges "
                 "(docs/keyspace-model.md); at_risk-hotspot: every point throttles; uncertain: the band reaches ok")
    for cell_id, fc in results.items():  # why a verdict is uncertain or missing, and recorded keys
        note = keys_note(fc) if fc.throttled_fraction is not None else ""
        lines += [f"{cell_id}: {text}" for text in (fc.reason, note and f"forecast {note}") if text]
    return "\n".join(lines)


def _decided_by(fc: CellForecast) -> str:
    """The parameter that splits the verdict; where none does but something throttles, the limit that
    throttles the most at the mid point (``projection.limited_by``: a range, an index or one key)."""
    if fc.deciding_param:
        return fc.deciding_param
    limit = fc.projection.limited_by if fc.projection is not None else None
    return f"limit: {limit}" if limit else "-"


def _keys_from(fc: CellForecast) -> str:
    keys = fc.projection.keys if fc.projection is not None else None
    return "-" if keys is None else keys
