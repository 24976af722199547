"""Compare 2..N runs (``/compare?runs=a,b&baseline=a`` and ``/compare.json``).

The page answers first, as ``keyramp compare`` does: its verdict line and the thresholds table,
then its warnings grouped and folded, then the evidence. Cells are matched by identity (the cell
id without its ``cNN-`` index, i.e. backend + strategy + extras). The table shows each run's value
and its ratio to the baseline with its interval; when ``keyramp.compare`` offers verdicts they are
shown too, else the ratio table stands alone. A cell's total is left out: compare judges operations
(each has its interval histograms), and an unjudged total row would read as "same".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flask import Flask, Response, current_app, jsonify, render_template, request

from keyramp.compare import (
    LATENCY_METRICS,
    Comparison,
    build_comparison,
    headline,
    keyspace_table,
    threshold_rows,
    verdict_label,
    verdict_rule,
    warning_groups,
)
from keyramp.compare import METRICS as COMPARE_METRICS
from keyramp.core import UsageError

__all__ = ["METRICS", "add_routes", "compare_model"]

_LABELS = {"ops_per_s": "ops/s", "error_rate": "error rate"}
_HIGHER_IS_BETTER = frozenset({"ops_per_s"})

#: (key, label, getter path in a cell's op stats, higher is better), in keyramp.compare's order
#: and under its names, so the verdicts it returns line up with these rows.
METRICS: tuple[tuple[str, str, tuple[str, ...], bool], ...] = tuple(
    (name, f"p{LATENCY_METRICS[name][1]:g} ms", ("latency_ms", LATENCY_METRICS[name][0]), False)
    if name in LATENCY_METRICS else (name, _LABELS.get(name, name), (name,), name in _HIGHER_IS_BETTER)
    for name in COMPARE_METRICS
)
MAX_RUNS = 8


def _get(stats: dict[str, Any] | None, path: tuple[str, ...]) -> float | None:
    value: Any = stats
    for part in path:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _parse_ids() -> list[str]:
    ids: list[str] = []
    for value in request.args.getlist("runs"):
        ids.extend(part.strip() for part in value.split(",") if part.strip())
    seen: list[str] = []
    for run_id in ids:
        if run_id not in seen:
            seen.append(run_id)
    if len(seen) < 2:
        raise UsageError("compare needs at least two runs: /compare?runs=RUN_A,RUN_B[&baseline=RUN_A]")
    if len(seen) > MAX_RUNS:
        raise UsageError(f"compare shows at most {MAX_RUNS} runs, got {len(seen)}")
    return seen


def _align(runs: list[tuple[str, dict[str, Any]]], fields: tuple[str, ...]) -> dict[str, Any]:
    """Put several runs' series on one x axis (uPlot needs a shared x); gaps become null."""
    xs = sorted({t for _, s in runs for t in s.get("t", [])})
    out: dict[str, Any] = {"t": xs, "runs": []}
    for run_id, s in runs:
        index = {t: i for i, t in enumerate(s.get("t", []))}
        entry: dict[str, Any] = {"run_id": run_id}
        for name in fields:
            values = s.get(name) or []
            entry[name] = [values[index[t]] if t in index and index[t] < len(values) else None for t in xs]
        out["runs"].append(entry)
    return out


@dataclass(frozen=True)
class _Judged:
    """What ``keyramp compare`` says about these runs, as the page shows it."""

    #: (run, identity, op, metric) -> {verdict, ci_low, ci_high, note}
    verdicts: dict[tuple[str, str, str, str], dict[str, Any]] = field(default_factory=dict)
    note: str | None = None
    #: when a row is worse/better, from the options the verdicts were judged with
    rule: str = ""
    #: identity -> [(label, modelled, text per run in the page's order)]
    keyspace: dict[str, list[tuple[str, bool, list[str]]]] = field(default_factory=dict)
    #: identity -> [{"text", "verdict", "worse"} per run in the page's order]
    forecast: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: the CLI's verdict line and its verdict (pass | fail | inconclusive); empty without verdicts
    headline: str = ""
    verdict: str = ""
    #: the thresholds table: [{run_id, cell, threshold, value, result, note}], failures first
    thresholds: list[dict[str, str]] = field(default_factory=list)
    #: the warnings, similar ones grouped: [{heading, line, kind, run_id, role, where}]
    warnings: list[dict[str, Any]] = field(default_factory=list)


def _judged(cmp: Comparison, run_ids: list[str]) -> _Judged:
    verdicts = {(row.run_id, row.cell, row.op, row.metric): {"verdict": row.verdict, "label": verdict_label(row),
                                                              "ci_low": row.ci_low, "ci_high": row.ci_high,
                                                              "note": row.note}
                for row in cmp.rows}
    keyspace: dict[str, list[tuple[str, bool, list[str]]]] = {}
    for ident, label, modelled, texts in keyspace_table(cmp, run_ids):
        keyspace.setdefault(ident, []).append((label, modelled, texts))
    worse = {(ident, run_id) for ident, run_id, _, _ in cmp.forecast_regressions}
    forecast = {ident: [{"text": per_run.get(r, {}).get("short"), "verdict": per_run.get(r, {}).get("verdict"),
                         "worse": (ident, r) in worse} for r in run_ids]
                for ident, per_run in cmp.forecast.items()}
    thresholds = [dict(zip(("run_id", "cell", "threshold", "value", "result", "note"), row, strict=True))
                  for row in threshold_rows(cmp)]
    return _Judged(verdicts, None, verdict_rule(cmp.options), keyspace, forecast, headline(cmp), cmp.verdict,
                   thresholds, [g.to_dict() for g in warning_groups(cmp)])


def _verdicts(run_ids: list[str], baseline: str) -> _Judged:
    """Statistical verdicts, key-space and forecast tables from keyramp.compare (bootstrap CIs
    over the .hlog intervals), cached per run files: the bootstrap costs far more than rendering."""
    store = current_app.extensions["keyramp_store"]
    paths = [store.run_path(r) for r in run_ids]

    def build() -> _Judged:
        runs = [store.run(r) for r in run_ids]
        unusable = [r.run_id for r in runs if not r.ok]
        if unusable:
            return _Judged(note=f"no verdicts: {'an unusable run' if len(unusable) == 1 else 'unusable runs'} "
                                f"{', '.join(unusable)}")
        try:
            result = build_comparison(runs, baseline=next(r for r in runs if r.run_id == baseline))
        except Exception as exc:  # noqa: BLE001 - verdicts are an extra; the ratio table still stands
            return _Judged(note=f"verdicts unavailable: {type(exc).__name__}: {exc}")
        return _judged(result, run_ids)

    files = tuple(f for p in paths for f in (p / "manifest.json", p / "summary.json", p / "histograms"))
    return store.cache.get(("verdicts", tuple(run_ids), baseline), files, build)


def compare_model(run_ids: list[str], baseline: str | None) -> dict[str, Any]:
    store = current_app.extensions["keyramp_store"]
    baseline = baseline or run_ids[0]
    if baseline not in run_ids:
        raise UsageError(f"baseline {baseline!r} is not one of the compared runs")
    details = {run_id: store.detail(run_id) for run_id in run_ids}
    series = {run_id: store.series(run_id) for run_id in run_ids}
    judged = _verdicts(run_ids, baseline)

    identities: list[str] = []
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for run_id, detail in details.items():
        for cell in detail["cells"]:
            if cell["identity"] not in identities:
                identities.append(cell["identity"])
            cells.setdefault((run_id, cell["identity"]), cell)  # first cell wins on duplicates

    groups = []
    for identity in identities:
        ops: list[str] = []
        for run_id in run_ids:
            cell = cells.get((run_id, identity))
            for op in [o["op"] for o in cell["operations"]] if cell else []:
                if op not in ops:
                    ops.append(op)
        rows = []
        for op in ops:
            for key, label, path, higher_better in METRICS:
                values = []
                for run_id in run_ids:
                    cell = cells.get((run_id, identity))
                    stats = None
                    if cell:
                        stats = next((o for o in cell["operations"] if o["op"] == op), None)
                    values.append(_get(stats, path))
                base_value = values[run_ids.index(baseline)]
                # colour and arrows come only from the comparison's verdict: a ratio it did not
                # judge (no verdicts at all) is shown, never painted
                entries = [{"run_id": run_id, "value": value,
                            "ratio": value / base_value if value is not None and base_value else None,
                            **(judged.verdicts.get((run_id, identity, op, key))
                               or {"verdict": None, "label": None, "ci_low": None, "ci_high": None, "note": None})}
                           for run_id, value in zip(run_ids, values, strict=True)]
                rows.append({"op": op, "metric": key, "label": label, "higher_is_better": higher_better,
                             "values": entries})
        chart_ops = sorted({op for run_id in run_ids for cell in [cells.get((run_id, identity))] if cell
                            for op in series[run_id].get(cell["id"], {})}, key=lambda o: (o != "*", o))
        charts = {}
        for op in chart_ops:
            per_run = []
            for run_id in run_ids:
                cell = cells.get((run_id, identity))
                s = series[run_id].get(cell["id"], {}).get(op) if cell else None
                if s:
                    per_run.append((run_id, s))
            charts[op] = _align(per_run, ("p50_ms", "p99_ms", "ops_per_s"))
        groups.append({
            "identity": identity,
            "present_in": [r for r in run_ids if (r, identity) in cells],
            "cell_ids": {r: cells[(r, identity)]["id"] for r in run_ids if (r, identity) in cells},
            # the cell's limit word per run (generator- or machine-limited), as every view shows it
            "limits": {r: cells[(r, identity)]["limit"] for r in run_ids
                       if (r, identity) in cells and cells[(r, identity)].get("limit")},
            "rows": rows,
            "charts": charts,
            "keyspace": [{"label": label, "modelled": modelled, "values": texts}
                         for label, modelled, texts in judged.keyspace.get(identity, [])],
            "forecast": judged.forecast.get(identity),
        })
    runs = [{k: details[r][k] for k in ("run_id", "profile_name", "status", "reason", "started_at", "warnings", "ok")}
            | {"is_baseline": r == baseline} for r in run_ids]
    return {"baseline": baseline, "runs": runs, "groups": groups, "verdicts_available": bool(judged.verdicts),
            "verdict_note": judged.note, "verdict_rule": judged.rule or verdict_rule(), "headline": judged.headline,
            "verdict": judged.verdict, "thresholds": judged.thresholds, "warnings": judged.warnings}


def add_routes(app: Flask) -> None:
    @app.get("/compare")
    def compare_page() -> str:
        run_ids = _parse_ids()
        return render_template("compare.html", data=compare_model(run_ids, request.args.get("baseline")))

    @app.get("/compare.json")
    def compare_json() -> Response:
        run_ids = _parse_ids()
        return jsonify(compare_model(run_ids, request.args.get("baseline")))
