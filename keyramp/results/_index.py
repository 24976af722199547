"""One catalog over every run: a SQLite index of the run directories, never their source of truth.

``keyramp list``, the UI's runs page and ``compare --last`` query it; filters, sorting and
paging happen in SQL. The index lives in ``<results>/.keyramp-catalog.sqlite`` and holds
one row per run directory (what the runs list shows, from ``manifest.json`` and
``summary.json``) with the (mtime, size) of both files. Every query first syncs it: one
directory scan and two ``stat`` calls per run, re-reading only runs whose files changed,
dropping runs that are gone. A missing, corrupt or older-schema index is rebuilt from the
directories; an unwritable results directory gets an in-memory index (cold every process).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keyramp.core import UsageError
from keyramp.results._baselines import baseline_run_ids, load_baselines
from keyramp.results._catalog import RUN_ID_RE, Run, load_run
from keyramp.results._exceptions import workload_error_cells
from keyramp.results._generator import generator_limited, limit_word
from keyramp.results._summary import OpStats, RunSummary
from keyramp.results._values import num

__all__ = [
    "FILTERS",
    "INDEX_FILE",
    "SORT_KEYS",
    "Catalog",
    "RunQuery",
    "latest_runs",
    "query_rows",
    "run_row",
]

INDEX_FILE = ".keyramp-catalog.sqlite"
_VERSION = "4"  # bump when the rows change: an index of another version is rebuilt

SORT_KEYS = ("started", "run_id", "profile", "status", "cells", "ops_per_s", "p99_ms", "error_rate")
FILTERS = ("profile", "backend", "strategy", "status", "from", "to")
_SORT_SQL = {
    "started": "COALESCE(started_at, run_id)", "run_id": "run_id", "profile": "LOWER(profile_name)",
    "status": "status", "cells": "cells", "ops_per_s": "ops_per_s", "p99_ms": "p99_ms", "error_rate": "error_rate",
}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, stamp TEXT NOT NULL, status TEXT NOT NULL, ok INTEGER NOT NULL,
    started_at TEXT, profile_name TEXT, cells INTEGER NOT NULL,
    ops_per_s REAL, error_rate REAL, p99_ms REAL,
    row TEXT NOT NULL  -- the full list row as JSON (what list --json and the UI show)
);
CREATE TABLE IF NOT EXISTS run_tags (run_id TEXT NOT NULL, kind TEXT NOT NULL, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS run_tags_by_value ON run_tags (kind, value, run_id);
CREATE INDEX IF NOT EXISTS runs_by_profile ON runs (profile_name, started_at);
"""


def run_row(run: Run) -> dict[str, Any]:
    """One line of the runs list: what ``keyramp list`` and the runs page show about a run."""
    manifest, summary = run.manifest, run.summary
    cells = summary.cells if summary is not None else {}
    totals = [c.total or OpStats(count=0) for c in cells.values()]  # no total: no figures
    # cells run one after another: the run's rate is its busiest cell's, never their sum
    rates = [v for t in totals if (v := num(t.ops_per_s)) is not None]
    ops_per_s = max(rates) if rates else None
    count = sum(v for t in totals if (v := num(t.count)) is not None)
    errors = sum(v for t in totals if (v := num(t.errors)) is not None)
    p99s = [v for t in totals if t.latency_ms is not None and (v := num(t.latency_ms.p99)) is not None]
    return {
        "run_id": run.run_id,
        "path": str(run.path),
        "profile_name": run.profile_name,
        # load_run already calls a run without manifest and summary "corrupt"
        "status": run.status,
        "reason": (f"died: {run.died}" if run.died else None) or (summary.reason if summary is not None else None)
        or (manifest.reason if manifest else None),
        "started_at": run.started_at,
        "ended_at": manifest.ended_at if manifest is not None else None,
        "backends": sorted(run.backends),
        "strategies": sorted(run.strategies),
        "cells": len(run.cell_ids),
        "cell_ids": run.cell_ids,
        "ops_per_s": ops_per_s,
        "error_rate": (errors / count) if count else None,
        "p99_ms": max(p99s) if p99s else None,
        "thresholds_passed": run.thresholds_passed,
        "generator_limited_cells": limited_cells(summary),
        # the same cells by the word every view shows (results._generator.LIMIT_WORDS)
        "limited": limited_by_word(summary),
        "workload_error_cells": workload_error_cells(summary),
        # each cell's launch forecast verdict (modelled), counted: the runs page shows the worst
        "forecasts": _forecast_counts(summary),
        "warnings": list(run.warnings),
        "ok": run.ok,
        "corrupt": not run.raw_manifest and not run.raw_summary,  # neither file read as an object with content
    }


def _forecast_counts(summary: RunSummary | None) -> dict[str, int]:
    """verdict -> how many of the run's cells the launch forecast gave it (cells without a forecast left out)."""
    out: dict[str, int] = {}
    for c in (summary.cells if summary is not None else {}).values():
        verdict = c.forecast.verdict if c.forecast is not None else None
        if isinstance(verdict, str) and verdict:
            out[verdict] = out.get(verdict, 0) + 1
    return out


def limited_cells(summary: RunSummary | None) -> list[str]:
    """Cells whose load generator could not keep up (``keyramp.results._generator``; probes have none)."""
    cells = summary.cells if summary is not None else {}
    return [cid for cid, c in cells.items() if c.total is not None and c.probe is None and generator_limited(c)]


def limited_by_word(summary: RunSummary | None) -> dict[str, list[str]]:
    """``{"machine-limited": [cells], "generator-limited": [cells]}`` (only the words that occur)."""
    cells = summary.cells if summary is not None else {}
    out: dict[str, list[str]] = {}
    for cid in limited_cells(summary):
        word = limit_word(cells[cid])
        if word is not None:
            out.setdefault(word, []).append(cid)
    return out


@dataclass(frozen=True, kw_only=True)
class RunQuery:
    """Which runs, in which order: every field optional (``None``: no filter)."""

    profile: str | None = None
    backend: str | None = None
    strategy: str | None = None
    status: str | None = None
    since: str | None = None  # YYYY-MM-DD, inclusive (the run's start day, UTC)
    until: str | None = None
    ok: bool | None = None  # usable for compare
    sort: str = "started"
    descending: bool = True
    limit: int | None = None
    offset: int = 0

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("profile_name", self.profile), ("status", self.status)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        for kind, value in (("backend", self.backend), ("strategy", self.strategy)):
            if value:
                clauses.append("run_id IN (SELECT run_id FROM run_tags WHERE kind = ? AND value = ?)")
                params += [kind, value]
        if self.since:
            clauses.append("started_at IS NOT NULL AND SUBSTR(started_at, 1, 10) >= ?")
            params.append(self.since)
        if self.until:
            clauses.append("started_at IS NOT NULL AND SUBSTR(started_at, 1, 10) <= ?")
            params.append(self.until)
        if self.ok is not None:
            clauses.append("ok = ?")
            params.append(int(self.ok))
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def order_by(self) -> str:
        if self.sort not in _SORT_SQL:
            raise UsageError(f"unknown sort {self.sort!r}; choose one of {', '.join(SORT_KEYS)}")
        col, direction = _SORT_SQL[self.sort], "DESC" if self.descending else "ASC"
        # missing values last in either direction; ties broken by run id in the same direction
        return f" ORDER BY ({col}) IS NULL, {col} {direction}, run_id {direction}"


def _stamp(run_dir: str) -> str:
    parts = []
    for name in ("manifest.json", "summary.json"):
        try:
            st = os.stat(os.path.join(run_dir, name))
        except OSError:
            parts.append("-")
        else:
            parts.append(f"{st.st_mtime_ns}:{st.st_size}")
    return "|".join(parts)


class Catalog:
    """The index of one results directory. Thread-safe (one connection behind a lock)."""

    def __init__(self, results_dir: Path, *, index_path: Path | None = None) -> None:
        self.results_dir = Path(results_dir)
        self.index_path = index_path if index_path is not None else self.results_dir / INDEX_FILE
        self._lock = threading.Lock()
        self._db = self._open()

    # -- the index file -------------------------------------------------------------------------
    def _connect(self, target: str) -> sqlite3.Connection:
        db = sqlite3.connect(target, timeout=10, check_same_thread=False, isolation_level=None)
        db.executescript(_SCHEMA)
        version = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        if version is None or version[0] != _VERSION:
            db.executescript("DELETE FROM runs; DELETE FROM run_tags;")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (_VERSION,))
        return db

    def _open(self) -> sqlite3.Connection:
        if not self.results_dir.is_dir():
            return self._connect(":memory:")
        try:
            return self._connect(str(self.index_path))
        except sqlite3.DatabaseError:  # not a database (truncated, overwritten): a cache, so rebuild it
            try:
                self.index_path.unlink(missing_ok=True)
                return self._connect(str(self.index_path))
            except (OSError, sqlite3.Error):
                pass
        except (OSError, sqlite3.Error):  # read-only results directory
            pass
        return self._connect(":memory:")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _locked(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._db

    # -- sync with the run directories ---------------------------------------------------------
    def refresh(self) -> int:
        """Bring the index up to date with the directories; returns how many runs were (re)read."""
        try:
            entries = {e.name: e.path for e in os.scandir(self.results_dir)
                       if RUN_ID_RE.match(e.name) and e.is_dir()}
        except OSError:
            entries = {}
        with self._locked() as db:
            known = dict(db.execute("SELECT run_id, stamp FROM runs"))
            # a run that says "running" is read again each time: its process may have died since
            # (nothing on disk changes then: results._alive tells)
            running = {r for (r,) in db.execute("SELECT run_id FROM runs WHERE status = 'running'")}
            changed = [(run_id, path, stamp) for run_id, path in entries.items()
                       if known.get(run_id) != (stamp := _stamp(path)) or run_id in running]
            gone = [run_id for run_id in known if run_id not in entries]
            rows = [(stamp, run_row(load_run(Path(path)))) for _, path, stamp in changed]
            # a running run that still runs, unchanged on disk, needs no write
            rows = [(stamp, row) for stamp, row in rows if not (
                row["run_id"] in running and row["status"] == "running" and known.get(row["run_id"]) == stamp)]
            changed = [c for c in changed if c[0] in {row["run_id"] for _, row in rows}]
            if not changed and not gone:
                return 0
            try:
                db.execute("BEGIN IMMEDIATE")
                for run_id in [r for r, _, _ in changed] + gone:
                    db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
                    db.execute("DELETE FROM run_tags WHERE run_id = ?", (run_id,))
                for stamp, row in rows:
                    db.execute(
                        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (row["run_id"], stamp, row["status"], int(row["ok"]), row["started_at"],
                         row["profile_name"], row["cells"], row["ops_per_s"], row["error_rate"], row["p99_ms"],
                         json.dumps(row)),
                    )
                    tags = [("backend", b) for b in row["backends"]] + [("strategy", s) for s in row["strategies"]]
                    db.executemany("INSERT INTO run_tags VALUES (?, ?, ?)", [(row["run_id"], k, v) for k, v in tags])
                db.execute("COMMIT")
            except sqlite3.Error:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            return len(rows)

    # -- queries ---------------------------------------------------------------------------------
    def query(self, q: RunQuery = RunQuery(), *, refresh: bool = True) -> tuple[list[dict[str, Any]], int]:
        """The page of list rows ``q`` selects, and how many runs match in all."""
        if refresh:
            self.refresh()
        where, params = q.where()
        order = q.order_by()
        page = ""
        if q.limit is not None:
            page = " LIMIT ? OFFSET ?"
        with self._locked() as db:
            total = db.execute(f"SELECT COUNT(*) FROM runs{where}", params).fetchone()[0]
            rows = db.execute(f"SELECT row FROM runs{where}{order}{page}",
                              params + ([q.limit, q.offset] if q.limit is not None else [])).fetchall()
        names = self._baseline_names()
        return [(row := json.loads(r[0])) | {"baselines": names.get(row["run_id"], [])} for r in rows], total

    def _baseline_names(self) -> dict[str, list[str]]:
        """run id -> the baseline names pointing at it (``baselines.json``: small, read per query)."""
        try:
            baselines = load_baselines(self.results_dir)
        except UsageError:  # a corrupt baselines.json must not hide the runs
            return {}
        out: dict[str, list[str]] = {}
        for name, entry in sorted(baselines.items()):
            for run_id in baseline_run_ids(entry):
                out.setdefault(run_id, []).append(name)
        return out

    def facets(self, *, refresh: bool = False) -> dict[str, list[str]]:
        """Every value each filter can take (for the runs page's selects)."""
        if refresh:
            self.refresh()
        with self._locked() as db:
            out = {
                "profile": [r[0] for r in db.execute(
                    "SELECT DISTINCT profile_name FROM runs WHERE profile_name IS NOT NULL ORDER BY 1")],
                "status": [r[0] for r in db.execute("SELECT DISTINCT status FROM runs ORDER BY 1")],
            }
            for kind in ("backend", "strategy"):
                out[kind] = [r[0] for r in db.execute(
                    "SELECT DISTINCT value FROM run_tags WHERE kind = ? ORDER BY 1", (kind,))]
        return out

    def count(self) -> int:
        with self._locked() as db:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def run_ids(self, q: RunQuery) -> list[str]:
        return [row["run_id"] for row in self.query(q)[0]]


def latest_runs(results_dir: Path, n: int, *, profile: str | None = None) -> list[str]:
    """Ids of the newest ``n`` usable runs (optionally of one profile), oldest first."""
    catalog = Catalog(results_dir)
    try:
        ids = catalog.run_ids(RunQuery(profile=profile, ok=True, limit=n))
    finally:
        catalog.close()
    return list(reversed(ids))


def query_rows(results_dir: Path, q: RunQuery) -> tuple[list[dict[str, Any]], int]:
    """One query against ``results_dir``'s catalog (opened and closed around it)."""
    catalog = Catalog(results_dir)
    try:
        return catalog.query(q)
    finally:
        catalog.close()
