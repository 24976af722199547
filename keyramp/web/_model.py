"""View models: plain JSON-safe dicts built from a run's manifest and summary.

The same dicts feed the HTML templates and the JSON twins, so both always agree.
The summary is read through the results model (``Run.summary``): a summary without
the model's shape shows no cells but the manifest's, and the run's warnings say which
field is wrong; a hand-edited or truncated file degrades to missing values, never to a 500.
"""

from __future__ import annotations

from typing import Any

from keyramp.core import fmt
from keyramp.profile import WORKLOAD_ERRORS, Finding, Settings, group_findings
from keyramp.results import (
    LIMIT_WORDS,
    CellSummary,
    Latency,
    ManifestCell,
    OpStats,
    Run,
    RunManifest,
    RunSummary,
    ThresholdRow,
    as_dict,
    as_list,
    cell_exceptions,
    cell_identity,
    check_generator,
    limit_reason,
    limit_word,
    machine_limited,
    num,
    run_row,
    text,
    workload_error_cells,
)
from keyramp.web._forecast import forecast_view
from keyramp.web._keyspace import explain_keyspace

__all__ = ["LATENCY_KEYS", "as_dict", "as_list", "num", "run_detail", "run_row"]

LATENCY_KEYS = ("p50", "p90", "p95", "p99", "p999", "max", "mean")


def _latency(block: Latency | None) -> dict[str, float | None]:
    return {k: num(getattr(block, k)) if block is not None else None for k in LATENCY_KEYS}


def _workload_exceptions(c: CellSummary) -> dict[str, Any]:
    """What the workload itself raised (``results._exceptions``): each class's first occurrence
    with its traceback and count, and whether the cell stopped on it in its warm-up."""
    examples = [{"class": e.error_class, "count": n, "op": e.op, "message": e.message, "where": e.where,
                 "traceback": list(e.traceback)} for e, n in cell_exceptions(c)]
    return {"exceptions": examples, "workload_failed": c.reason == "workload error"}


def _op_stats(name: str, d: OpStats) -> dict[str, Any]:
    return {
        "op": name,
        "count": num(d.count),
        "errors": num(d.errors),
        "error_rate": num(d.error_rate),
        "errors_by_class": {k: n for k, v in d.errors_by_class.items() if (n := num(v.count))},
        "ops_per_s": num(d.ops_per_s),
        "latency_ms": _latency(d.latency_ms),
        "service_ms": _latency(d.service_ms),
        "late": num(d.late),
        "dropped": num(d.dropped),
    }


def _no_keys_reason(c: CellSummary, settings: Settings | None) -> str:
    """Why a cell has no sampled keys, from what its summary says happened (the heatmap's place)."""
    if c.probe is not None:
        return "A probe cell: it measures with its own probe, not with a key stream, so there are no sampled keys."
    total = c.total or OpStats(count=0)
    count, errors = num(total.count) or 0, num(total.errors) or 0
    if count and errors >= count:
        classes = {k: num(v.count) or 0 for k, v in total.errors_by_class.items()}
        first = max(classes, key=lambda k: classes[k], default=None)
        what = f"{first} ×{fmt.count(classes[first])}" if first else "no error class recorded"
        message = text(total.errors_by_class[first].message) if first else None
        return (f"No sampled keys: all {fmt.plural(count, 'operation')} failed (most often {what}"
                f"{': ' + message if message else ''}), so no key was written or read.")
    if not count:
        warmup = c.warmup_failure
        if warmup is not None:
            raised = " ".join(filter(None, (warmup.error_class, warmup.message)))
            return ("No sampled keys: the cell stopped in its warm-up, where every operation raised "
                    f"{raised or 'an exception'}.")
        reason = text(c.reason)
        return f"No sampled keys: the cell completed no operations{f' ({reason})' if reason else ''}."
    if settings is not None and settings.workload.key_samples_per_s == 0:
        return "No sampled keys: key sampling was off (workload.key_samples_per_s = 0)."
    return "No sampled keys were recorded for this cell."


def _cells(manifest: RunManifest, summary: RunSummary | None) -> list[dict[str, Any]]:
    m_cells = {c.id: c for c in manifest.cells if c.id}
    s_cells = summary.cells if summary is not None else {}
    order = list(s_cells) + [cid for cid in m_cells if cid not in s_cells]
    settings = manifest.settings
    out = []
    for cid in order:
        c = s_cells.get(cid) or CellSummary()
        m = m_cells.get(cid) or ManifestCell(id=cid)
        schedule = c.schedule or (as_dict(m.schedule).get("kind") if m.schedule else None)
        ratios = [a / t for p in c.target_ops_per_s if (t := num(p.target)) and (a := num(p.achieved)) is not None]
        keyspace = c.keyspace.to_json() if c.keyspace is not None else {}
        cell = {
            "id": cid,
            "backend": text(c.backend or m.backend),
            "strategy": text(c.strategy or m.strategy),
            "schedule": text(schedule),
            "distribution": text(c.distribution or m.distribution),
            "duration_s": num(c.duration_s) or num(m.duration_s),
            "time_scale": num(c.time_scale) or num(m.time_scale),
            "endpoint": text(m.endpoint),
            "operations": [_op_stats(op, stats) for op, stats in c.operations.items()],
            "total": _op_stats("total", c.total) if c.total is not None else None,
            "target_ratio_mean": (sum(ratios) / len(ratios)) if ratios else None,
            "target_ratio_min": min(ratios) if ratios else None,
            # explained rows for the page; the summary's own fields in ``keyspace_fields``
            "keyspace": explain_keyspace(c.keyspace),
            "keyspace_fields": keyspace or None,
            "keyspace_missing": None if keyspace else _no_keys_reason(c, settings),
            "finished": c.total is not None and not c.incomplete,
            "thresholds": [_threshold(t) for t in c.thresholds],
            "forecast": forecast_view(c.forecast),
            # the store-like target: what its proxy throttled (docs/fidelity.md)
            "store_model": c.store_model.to_json() if c.store_model is not None else None,
            "store_model_line": c.store_model.line() if c.store_model is not None else None,
            **_generator(c),
            **_workload_exceptions(c),
        }
        # what matches cells across runs: the id without its cNN- index (backend, strategy, extras)
        cell["identity"] = cell_identity(cid)
        out.append(cell)
    return out


def _threshold(d: ThresholdRow) -> dict[str, Any]:
    verdict = text(d.verdict)
    if verdict not in ("pass", "fail", "inconclusive"):
        verdict = "pass" if d.passed else "fail"
    return {
        "name": text(d.name),
        "op": text(d.op),
        "limit": num(d.limit),
        "value": num(d.value),
        "passed": d.passed,
        "verdict": verdict,
        "note": text(d.note),
    }


def _generator(c: CellSummary) -> dict[str, Any]:
    """Whether the generator kept up (the recorded verdict, or the rule applied to an older
    summary); None for a cell without a load phase (a probe) or without a total."""
    if c.total is None or c.probe is not None:
        return {"generator_limited": None, "generator": None, "limit": None}
    recorded = c.generator
    if recorded is None or not recorded.to_json():  # an older summary: the rule applied now
        recorded = check_generator(c)
    limited = c.generator_limited
    word = limit_word(c)
    return {
        # the one word for the state (results._generator.LIMIT_WORDS), its reason and what it means
        "limit": {"word": word, "reason": limit_reason(c), "meaning": LIMIT_WORDS[word]} if word else None,
        "generator_limited": limited if isinstance(limited, bool) else bool(recorded.limited),
        "generator": {"reason": text(recorded.reason), "machine_limited": machine_limited(c),
                      "store_errors": bool(recorded.store_errors),
                      **{k: num(getattr(recorded, k)) for k in ("late_fraction", "dropped_fraction", "users_busy",
                                                                "cpu_cores", "max_process_cores", "machine_busy")}},
    }


def run_detail(run: Run) -> dict[str, Any]:
    """Everything the run page shows except the time series (served separately, cached)."""
    # None: no manifest, or one without the model's shape; likewise the summary (the warnings say which)
    manifest = run.manifest or RunManifest()
    settings = manifest.settings  # the resolved profile, typed (None: the run kept none that reads)
    row = run_row(run)
    versions = {str(k): text(v) for k, v in manifest.versions.items()}
    lint = [{"rule": g.rule, "severity": g.severity, "message": g.message, "cells": list(g.cells)}
            for g in group_findings(_finding(as_dict(item)) for item in manifest.lint)]
    cells = _cells(manifest, run.summary)
    return {
        **row,
        "description": text(settings.description) if settings is not None else None,
        "rules": list(settings.rules) if settings is not None else [],
        "profile_path": text(manifest.profile_path),
        "seed": manifest.seed,
        "git_sha": text(manifest.git_sha),
        "host": text(manifest.host),
        "versions": versions,
        "lint": lint,
        "cells": cells,
        "cell_count": row["cells"],
        # what the figures were measured against, when it was not the emulator as it is
        "target_model": _target(manifest, run),
        # the workload's own exceptions beyond what the profile allows (or a cell stopped on them)
        "workload_error_cells": workload_error_cells(run.summary),
        "other_threshold_failed": any(t["verdict"] == "fail" and not _is_workload_errors(t["name"])
                                      for c in cells for t in c["thresholds"]),
    }


def _target(manifest: RunManifest, run: Run) -> str | None:
    """One line when a store model stood in front of the emulators (docs/fidelity.md), else None."""
    target = manifest.target or (run.summary.target if run.summary is not None else None)
    return target.describe() if target is not None else None


def _is_workload_errors(name: str | None) -> bool:
    return (name or "").rpartition(".")[2] == WORKLOAD_ERRORS


def _finding(d: dict[str, Any]) -> Finding:
    return Finding(text(d.get("rule")) or "?", text(d.get("severity")) or "info", text(d.get("message")) or "",
                   text(d.get("cell")))
