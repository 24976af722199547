"""View models: plain JSON-safe dicts built from a run's manifest and summary.

The same dicts feed the HTML templates and the JSON twins, so both always agree.
The summary is read through the results model (``Run.typed_summary``): a summary without
the model's shape shows no cells but the manifest's, and the run's warnings say which
field is wrong; a hand-edited or truncated file degrades to missing values, never to a 500.
"""

from __future__ import annotations

from typing import Any

from keyramp import _format as fmt
from keyramp.profile._lint import Finding, group_findings
from keyramp.profile._thresholds import WORKLOAD_ERRORS
from keyramp.results._catalog import Run, cell_identity
from keyramp.results._exceptions import cell_exceptions
from keyramp.results._generator import check_generator, machine_limited
from keyramp.results._index import run_row
from keyramp.results._summary import CellSummary, Latency, OpStats, RunSummary, ThresholdRow
from keyramp.results._values import as_dict, as_list, num, text
from keyramp.web._forecast import forecast_view
from keyramp.web._keyspace import explain_keyspace

__all__ = ["LATENCY_KEYS", "as_dict", "as_list", "num", "run_detail", "run_row"]

LATENCY_KEYS = ("p50", "p90", "p95", "p99", "p999", "max", "mean")


def _error_class(raw: object) -> dict[str, Any]:
    """An ``errors_by_class`` entry: ``{"count", …}`` (older runs: the count alone)."""
    return as_dict(raw) if isinstance(raw, dict) else {"count": raw}


def _latency(block: Latency | None) -> dict[str, float | None]:
    return {k: num(getattr(block, k)) if block is not None else None for k in LATENCY_KEYS}


def _workload_exceptions(s: dict[str, Any]) -> dict[str, Any]:
    """What the workload itself raised (``results._exceptions``): each class's first occurrence
    with its traceback and count, and whether the cell stopped on it in its warm-up."""
    examples = [{"class": e.error_class, "count": n, "op": e.op, "message": e.message, "where": e.where,
                 "traceback": list(e.traceback)} for e, n in cell_exceptions(s)]
    return {"exceptions": examples, "workload_failed": s.get("reason") == "workload error"}


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


def _no_keys_reason(s: dict[str, Any], profile: dict[str, Any]) -> str:
    """Why a cell has no sampled keys, from what its summary says happened (the heatmap's place)."""
    if s.get("probe") is not None:
        return "A probe cell: it measures with its own probe, not with a key stream, so there are no sampled keys."
    total = as_dict(s.get("total"))
    count, errors = num(total.get("count")) or 0, num(total.get("errors")) or 0
    if count and errors >= count:
        by_class = as_dict(total.get("errors_by_class"))
        classes = {str(k): num(_error_class(v).get("count")) or 0 for k, v in by_class.items()}
        first = max(classes, key=lambda k: classes[k], default=None)
        example = as_dict(by_class.get(first)) if first else {}
        what = f"{first} ×{fmt.count(classes[first])}" if first else "no error class recorded"
        message = text(example.get("message"))
        return (f"No sampled keys: all {fmt.plural(count, 'operation')} failed (most often {what}"
                f"{': ' + message if message else ''}), so no key was written or read.")
    if not count:
        warmup = as_dict(s.get("warmup_failure"))
        if warmup:
            raised = " ".join(filter(None, (text(warmup.get("error_class")), text(warmup.get("message")))))
            return ("No sampled keys: the cell stopped in its warm-up, where every operation raised "
                    f"{raised or 'an exception'}.")
        reason = text(s.get("reason"))
        return f"No sampled keys: the cell completed no operations{f' ({reason})' if reason else ''}."
    if num(as_dict(profile.get("workload")).get("key_samples_per_s")) == 0:
        return "No sampled keys: key sampling was off (workload.key_samples_per_s = 0)."
    return "No sampled keys were recorded for this cell."


def _cells(manifest: dict[str, Any], summary: RunSummary | None, raw: dict[str, Any]) -> list[dict[str, Any]]:
    """``raw``: the summary's cells as stored, for the results layer's checks that read mappings."""
    m_cells = {str(c.get("id")): c for c in map(as_dict, as_list(manifest.get("cells"))) if c.get("id")}
    s_cells = summary.cells if summary is not None else {}
    order = list(s_cells) + [cid for cid in m_cells if cid not in s_cells]
    out = []
    for cid in order:
        c = s_cells.get(cid) or CellSummary()
        s = as_dict(raw.get(cid))
        m = m_cells.get(cid, {})
        sched = m.get("schedule")
        schedule = c.schedule or (as_dict(sched).get("kind") if sched else None)
        ratios = [a / t for p in c.target_ops_per_s if (t := num(p.target)) and (a := num(p.achieved)) is not None]
        keyspace = c.keyspace.to_json() if c.keyspace is not None else {}
        cell = {
            "id": cid,
            "backend": text(c.backend or m.get("backend")),
            "strategy": text(c.strategy or m.get("strategy")),
            "schedule": text(schedule),
            "distribution": text(c.distribution or m.get("distribution")),
            "duration_s": num(c.duration_s) or num(m.get("duration_s")),
            "time_scale": num(c.time_scale) or num(m.get("time_scale")),
            "endpoint": text(m.get("endpoint")),
            "operations": [_op_stats(op, stats) for op, stats in c.operations.items()],
            "total": _op_stats("total", c.total) if c.total is not None else None,
            "target_ratio_mean": (sum(ratios) / len(ratios)) if ratios else None,
            "target_ratio_min": min(ratios) if ratios else None,
            # explained rows for the page; the summary's own fields in ``keyspace_fields``
            "keyspace": explain_keyspace(c.keyspace),
            "keyspace_fields": keyspace or None,
            "keyspace_missing": None if keyspace else _no_keys_reason(s, as_dict(manifest.get("profile"))),
            "finished": c.total is not None and not c.incomplete,
            "thresholds": [_threshold(t) for t in c.thresholds],
            "forecast": forecast_view(c.forecast),
            **_generator(c, s),
            **_workload_exceptions(s),
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


def _generator(c: CellSummary, s: dict[str, Any]) -> dict[str, Any]:
    """Whether the generator kept up (the recorded verdict, or the rule applied to an older
    summary); None for a cell without a load phase (a probe) or without a total."""
    if c.total is None or c.probe is not None:
        return {"generator_limited": None, "generator": None}
    recorded = c.generator.to_json() if c.generator is not None else {}
    check = recorded if recorded else check_generator(s).to_dict()
    limited = c.generator_limited
    return {
        "generator_limited": limited if isinstance(limited, bool) else bool(check.get("limited")),
        "generator": {"reason": text(check.get("reason")), "machine_limited": machine_limited(s),
                      **{k: num(check.get(k)) for k in ("late_fraction", "dropped_fraction", "users_busy",
                                                         "cpu_cores", "max_process_cores", "machine_busy")}},
    }


def run_detail(run: Run) -> dict[str, Any]:
    """Everything the run page shows except the time series (served separately, cached)."""
    manifest = as_dict(run.manifest)
    summary = as_dict(run.summary)
    profile = as_dict(manifest.get("profile"))
    row = run_row(run)
    versions = {str(k): text(v) for k, v in as_dict(manifest.get("versions")).items()}
    lint = [{"rule": g.rule, "severity": g.severity, "message": g.message, "cells": list(g.cells)}
            for g in group_findings(_finding(as_dict(item)) for item in as_list(manifest.get("lint")))]
    typed = run.typed_summary  # None: no summary, or one without the model's shape (the warnings say which)
    cells = _cells(manifest, typed, as_dict(summary.get("cells")) if typed is not None else {})
    return {
        **row,
        "description": text(profile.get("description")),
        "rules": [str(r) for r in as_list(profile.get("rules"))],
        "profile_path": text(manifest.get("profile_path")),
        "seed": manifest.get("seed") if isinstance(manifest.get("seed"), (int, str)) else None,
        "git_sha": text(manifest.get("git_sha")),
        "host": text(manifest.get("host")),
        "versions": versions,
        "lint": lint,
        "cells": cells,
        "cell_count": row["cells"],
        # the workload's own exceptions beyond what the profile allows (or a cell stopped on them)
        "workload_error_cells": [c["id"] for c in cells if c["workload_failed"] or any(
            t["verdict"] == "fail" and _is_workload_errors(t["name"]) for t in c["thresholds"])],
        "other_threshold_failed": any(t["verdict"] == "fail" and not _is_workload_errors(t["name"])
                                      for c in cells for t in c["thresholds"]),
    }


def _is_workload_errors(name: str | None) -> bool:
    return (name or "").rpartition(".")[2] == WORKLOAD_ERRORS


def _finding(d: dict[str, Any]) -> Finding:
    return Finding(text(d.get("rule")) or "?", text(d.get("severity")) or "info", text(d.get("message")) or "",
                   text(d.get("cell")))
