"""Run catalog: read ``results/<run-id>/`` directories (format: docs/run-format.md).

Reading never raises on a corrupt directory: a truncated or invalid file becomes a
``Run`` with ``warnings`` and ``ok = False``, so ``list``, ``compare`` and the web UI can
show what is there. Only bad *input* (an unsafe run id, an unknown run) raises
``UsageError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from keyramp.core import UsageError
from keyramp.results._alive import DIED, why_dead
from keyramp.results._doc import DocError
from keyramp.results._summary import CellSummary, RunManifest, RunSummary

__all__ = [
    "CELL_ID_RE",
    "RUN_ID_RE",
    "SCHEMA",
    "Run",
    "cell_identity",
    "hlog_path",
    "list_runs",
    "load_run",
    "resolve_run",
    "safe_run_path",
]

SCHEMA = 1

#: ``20261121T140700123Z-<profile-slug>-<4 hex>``; strict so an id can never name a path
#: outside the results directory (no ``/``, no ``..``, no leading dot).
RUN_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{9}Z-[a-z0-9][a-z0-9_-]{0,80}-[0-9a-f]{4}$")
CELL_ID_RE = re.compile(r"^[a-z0-9_-]{1,120}$")
_OP_RE = re.compile(r"^(?:[a-z0-9_]{1,40}|\*)$")
#: One operation's name (histogram files exist per operation; ``*`` is the cell total).
_ONE_OP_RE = re.compile(r"^[a-z0-9_]{1,40}$")
_CELL_INDEX_RE = re.compile(r"^c[0-9]+-")


@dataclass(frozen=True)
class Run:
    """One run directory as read from disk; ``ok`` means usable for ``compare``.

    ``summary`` and ``manifest`` are the results model's documents (older versions upgraded);
    ``raw_summary``/``raw_manifest`` are the files as parsed, kept for the catalog's own checks
    and for byte-level comparisons in tests: nothing outside ``results/`` reads them
    (tests/results/test_model_only.py).
    """

    run_id: str
    path: Path
    raw_manifest: dict[str, Any] | None
    raw_summary: dict[str, Any] | None
    status: str
    started_at: str | None
    profile_name: str | None
    backends: list[str] = field(default_factory=list)
    strategies: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ok: bool = False
    #: Why a run that says "running" is not (its process is gone: ``results._alive``); None otherwise.
    died: str | None = None

    @property
    def summary(self) -> RunSummary | None:
        """summary.json through the results model; None when there is none or it does not
        have the model's shape (``summary_error`` says why)."""
        return self._typed[0]

    @property
    def summary_error(self) -> str | None:
        return self._typed[1]

    @cached_property
    def _typed(self) -> tuple[RunSummary | None, str | None]:
        if self.raw_summary is None:
            return None, None
        try:
            return RunSummary.from_json(self.raw_summary), None
        except DocError as exc:
            return None, f"summary.json: {exc}"

    def cell(self, cell_id: str) -> CellSummary:
        """One cell of ``summary``; an empty ``CellSummary`` (every figure None) when absent."""
        summary = self.summary
        return (summary.cells.get(cell_id) if summary is not None else None) or CellSummary()

    @property
    def manifest(self) -> RunManifest | None:
        """manifest.json through the results model; None when missing or misshapen (``manifest_error``)."""
        return self._typed_manifest[0]

    @property
    def manifest_error(self) -> str | None:
        return self._typed_manifest[1]

    @cached_property
    def _typed_manifest(self) -> tuple[RunManifest | None, str | None]:
        if self.raw_manifest is None:
            return None, None
        try:
            return RunManifest.from_json(self.raw_manifest), None
        except DocError as exc:
            return None, f"manifest.json: {exc}"

    @property
    def cells(self) -> dict[str, CellSummary]:
        """Cell id -> cell summary (empty when there is no usable summary)."""
        summary = self.summary
        return summary.cells if summary is not None else {}

    @property
    def cell_ids(self) -> list[str]:
        """The summary's cells, else (a run that has not finished a cell) the manifest's."""
        summary, manifest = self.summary, self.manifest
        if summary is not None and summary.cells:
            return list(summary.cells)
        return [c.id for c in manifest.cells] if manifest is not None else []

    @property
    def unusable_reason(self) -> str:
        """Why the run is not ``ok``, in one line: its first warning, else its status.

        Not ``to_dict()["reason"]``, which is the run's own recorded reason (e.g. why it was interrupted).
        """
        return self.warnings[0] if self.warnings else self.status

    @property
    def thresholds_passed(self) -> bool | None:
        summary = self.summary
        return summary.thresholds_passed if summary is not None else None

    @property
    def reason(self) -> str | None:
        """The run's own recorded reason (why it was interrupted or failed): the summary's, else the
        manifest's; for a run that died, why it is taken as dead."""
        if self.died:
            return f"died: {self.died}"
        summary, manifest = self.summary, self.manifest
        if summary is not None:
            return summary.reason
        return manifest.reason if manifest is not None else None

    def to_dict(self) -> dict[str, Any]:
        """The catalog entry as JSON-ready data (without the full manifest/summary)."""
        manifest = self.manifest
        return {
            "run_id": self.run_id,
            "path": str(self.path),
            "status": self.status,
            "started_at": self.started_at,
            "ended_at": manifest.ended_at if manifest is not None else None,
            "reason": self.reason,
            "profile_name": self.profile_name,
            "backends": self.backends,
            "strategies": self.strategies,
            "cells": self.cell_ids,
            "thresholds_passed": self.thresholds_passed,
            "warnings": self.warnings,
            "ok": self.ok,
        }


def safe_run_path(results_dir: Path, run_id: str) -> Path:
    """``results_dir/run_id``, refusing anything that is not a well-formed run id."""
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise UsageError(f"invalid run id: {run_id!r}")
    return Path(results_dir) / run_id


def _read_json(path: Path, label: str, warnings: list[str]) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        warnings.append(f"{label} missing")
        return None
    except OSError as exc:
        warnings.append(f"{label} unreadable: {exc.strerror or exc}")
        return None
    except UnicodeDecodeError:
        warnings.append(f"{label} is not UTF-8")
        return None
    if not text.strip():
        warnings.append(f"{label} is empty (truncated?)")
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        warnings.append(f"{label} is not valid JSON (truncated?): line {exc.lineno} col {exc.colno}")
        return None
    if not isinstance(data, dict):
        warnings.append(f"{label} is not a JSON object")
        return None
    schema = data.get("schema")
    if schema != SCHEMA:
        warnings.append(f"{label} has schema {schema!r}, expected {SCHEMA}")
    return data


def _summary_problems(summary: dict[str, Any]) -> list[str]:
    cells = summary.get("cells")
    if not isinstance(cells, dict):
        return ["summary.json has no 'cells' object"]
    problems = []
    for cell_id, cell in cells.items():
        if not isinstance(cell, dict) or not isinstance(cell.get("operations"), dict):
            problems.append(f"summary.json cell {cell_id!r} has no 'operations' object")
            continue
        for op, stats in cell["operations"].items():
            if not isinstance(stats, dict) or not isinstance(stats.get("count"), int | float):
                problems.append(f"summary.json {cell_id}/{op} has no 'count'")
    return problems


def _unique(values: Iterator[Any]) -> list[str]:
    out: list[str] = []
    for value in values:
        if isinstance(value, str) and value not in out:
            out.append(value)
    return out


def _status(path: Path, manifest: dict[str, Any] | None, summary: dict[str, Any] | None, warnings: list[str], *,
            fatal: bool) -> tuple[str, str | None, list[str]]:
    """(status, why the run died or None, warnings): a run that says "running" whose process is gone
    is ``died`` (``results._alive``), what it recorded (the cells it finished) still readable."""
    status = "unknown"
    if summary is not None and isinstance(summary.get("status"), str):
        status = summary["status"]
    elif manifest is not None and isinstance(manifest.get("status"), str):
        status = manifest["status"]
    died = None
    if status == "running" and manifest is not None:
        died = why_dead(path, host=manifest.get("host"), pid=manifest.get("pid"),
                        pid_started=manifest.get("pid_started"))
    if died is not None:
        status = DIED
        warnings = [f"the run died: {died}; the cells it finished are readable, the one it was running is not "
                    "in the summary"] + [w for w in warnings if w != "summary.json missing"] + (
            ["it finished no cell (no summary.json)"] if summary is None else [])
    elif summary is None and status == "running":
        # A running run has no summary yet: that is expected, not a defect.
        warnings = [w for w in warnings if w != "summary.json missing"]
    elif status not in ("complete", "interrupted", "failed", "running"):
        status = "corrupt" if fatal else status
    return status, died, warnings


def load_run(path: Path) -> Run:
    """Read one run directory; corrupt or partial content becomes warnings, never an exception."""
    path = Path(path)
    run_id = path.name
    warnings: list[str] = []
    if not RUN_ID_RE.match(run_id):
        warnings.append(f"directory name {run_id!r} is not a run id")
    if not path.is_dir():
        warnings.append("run directory missing")
        return Run(run_id=run_id, path=path, raw_manifest=None, raw_summary=None, status="missing",
                   started_at=None, profile_name=None, warnings=warnings)
    manifest = _read_json(path / "manifest.json", "manifest.json", warnings)
    summary = _read_json(path / "summary.json", "summary.json", warnings)
    fatal = manifest is None or summary is None
    typed: RunSummary | None = None
    for doc, label in ((manifest, "manifest.json"), (summary, "summary.json")):
        if doc is not None:
            if doc.get("schema") != SCHEMA:
                fatal = True
            if doc.get("run_id") not in (None, run_id):
                warnings.append(f"{label} run_id {doc.get('run_id')!r} differs from the directory name")
    if summary is not None:
        problems = _summary_problems(summary)
        if not problems:  # the model's shape (types of every field) on top of the essentials
            try:
                typed = RunSummary.from_json(summary)
            except DocError as exc:
                problems = [f"summary.json: {exc}"]
        warnings.extend(problems)
        fatal = fatal or bool(problems)
    typed_manifest: tuple[RunManifest | None, str | None] = (None, None)
    if manifest is not None:  # not fatal (the summary holds the measurements); said, so no view goes blank silently
        try:
            typed_manifest = (RunManifest.from_json(manifest), None)
        except DocError as exc:
            typed_manifest = (None, f"manifest.json: {exc}")
            warnings.append(typed_manifest[1])

    status, died, warnings = _status(path, manifest, summary, warnings, fatal=fatal)

    manifest_cells = (manifest or {}).get("cells")
    cell_dicts: list[dict[str, Any]] = [c for c in manifest_cells if isinstance(c, dict)] if isinstance(
        manifest_cells, list) else []
    if summary is not None and isinstance(summary.get("cells"), dict):
        cell_dicts += [c for c in summary["cells"].values() if isinstance(c, dict)]
    profile_name = (manifest or {}).get("profile_name") or (summary or {}).get("profile_name")
    started_at = (manifest or {}).get("started_at")
    run = Run(
        run_id=run_id,
        path=path,
        raw_manifest=manifest,
        raw_summary=summary,
        status=status,
        started_at=started_at if isinstance(started_at, str) else None,
        profile_name=profile_name if isinstance(profile_name, str) else None,
        backends=_unique(c.get("backend") for c in cell_dicts),
        strategies=_unique(c.get("strategy") for c in cell_dicts),
        warnings=warnings,
        # interrupted/failed/died runs still hold measurements worth comparing; running ones do not.
        ok=not fatal and status != "running",
        died=died,
    )
    if typed is not None:
        run.__dict__["_typed"] = (typed, None)  # read once: the cached_property's slot
    run.__dict__["_typed_manifest"] = typed_manifest
    return run


def list_runs(results_dir: Path) -> list[Run]:
    """Every run directory under ``results_dir``, newest first (run ids sort by start time)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        return []
    runs = [load_run(p) for p in results_dir.iterdir() if p.is_dir() and RUN_ID_RE.match(p.name)]
    runs.sort(key=lambda r: r.run_id, reverse=True)
    return runs


def resolve_run(spec: str, results_dir: Path) -> Run:
    """A run named by id (under ``results_dir``) or by a path to its directory."""
    if RUN_ID_RE.match(spec):
        path = safe_run_path(results_dir, spec)
        if not path.is_dir() and Path(spec).is_dir():
            path = Path(spec)
    else:
        path = Path(spec)
        if not (path / "manifest.json").exists() and not (path / "summary.json").exists():
            raise UsageError(f"unknown run: {spec!r} (not a run id under {results_dir} nor a run directory)")
    if not path.is_dir():
        raise UsageError(f"unknown run: {spec!r} (no directory {path})")
    return load_run(path)


def cell_identity(cell_id: str) -> str:
    """A cell's identity across runs: its id without the ``cNN-`` index prefix.

    Cells are matched by what they ran (backend, strategy, extras), not by their
    position in the matrix, so adding a cell to a profile does not shift comparisons.
    """
    return _CELL_INDEX_RE.sub("", cell_id, count=1)


def hlog_path(run: Run, cell: str, op: str, *, service: bool = False) -> Path:
    if not CELL_ID_RE.match(cell) or not _ONE_OP_RE.match(op):
        raise UsageError(f"invalid cell/op: {cell!r}/{op!r}")
    suffix = ".service.hlog" if service else ".hlog"
    return run.path / "histograms" / f"{cell}.{op}{suffix}"
