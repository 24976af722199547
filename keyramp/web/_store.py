"""Read-only access to a results directory for the web UI, cached per (path, mtime)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from werkzeug.exceptions import NotFound

from keyramp.core import UsageError
from keyramp.keyspace import cell_heatmap
from keyramp.results import (
    CELL_ID_RE,
    DIED,
    TIMESERIES_CSV,
    Catalog,
    Run,
    cell_hlogs,
    data_cells,
    data_stamp,
    is_csv_run,
    load_run,
    read_timeseries,
    safe_run_path,
    why_dead,
)
from keyramp.web._cache import FileCache, stamp
from keyramp.web._distribution import HlogTotals, cell_distribution
from keyramp.web._live import live_view, read_live
from keyramp.web._marks import cell_markers, op_thresholds
from keyramp.web._model import run_detail
from keyramp.web._timeseries import CHART_COLUMNS, downsample, series_columns

__all__ = ["RunStore"]


def _gone(path: Path, run: Run) -> bool:
    """Whether a run that says "running" has died (``results._alive``)."""
    manifest = run.manifest
    return manifest is not None and why_dead(path, host=manifest.host, pid=manifest.pid,
                                             pid_started=manifest.pid_started) is not None


def _mtime(path: Path) -> float | None:
    mtime_ns = stamp(path)[0][0]
    return mtime_ns / 1e9 if mtime_ns else None


class RunStore:
    """One per app. Every parsed file is cached until its mtime or size changes, so a
    run still in progress (rewritten every second) is re-read and a finished one is not."""

    def __init__(self, results_dir: Path) -> None:
        self.results_dir = Path(results_dir)
        self.cache = FileCache()
        #: Each HdrHistogram log's intervals added up so far (a running cell's: read on from there).
        self.hlogs = HlogTotals()
        #: The runs list: the SQLite catalog of every run directory (``keyramp.results._index``).
        self.catalog = Catalog(self.results_dir)

    # -- runs -------------------------------------------------------------------------------

    def _files(self, path: Path) -> tuple[Path, ...]:
        return (path, path / "manifest.json", path / "summary.json")

    def _load(self, path: Path) -> Run:
        run = self.cache.get(("run", str(path)), self._files(path), lambda: load_run(path))
        if run.status == "running" and _gone(path, run):
            # its process died since it was cached (nothing on disk changed): read it as it is now
            run = load_run(path)
        return run

    def run_path(self, run_id: str) -> Path:
        try:
            path = safe_run_path(self.results_dir, run_id)
        except UsageError as exc:
            raise NotFound(str(exc)) from None
        if not Path(path).is_dir():
            raise NotFound(f"no run {run_id!r} in {self.results_dir}")
        return Path(path)

    def run(self, run_id: str) -> Run:
        return self._load(self.run_path(run_id))

    def detail(self, run_id: str) -> dict[str, Any]:
        path = self.run_path(run_id)

        def build() -> dict[str, Any]:
            detail = run_detail(self._load(path))
            recorded = {kind: set(data_cells(path, kind)) for kind in ("timeseries", "keys")}
            for cell in detail["cells"]:
                cell["keyspace_png"] = self.keyspace_file(path, cell["id"], "png") is not None
                cell["keyspace_json"] = self.keyspace_file(path, cell["id"], "json") is not None
                cell["data"] = {kind: cell["id"] in cells for kind, cells in recorded.items()}  # to download
            return detail

        if self._load(path).status == DIED:  # a run that died since its detail was cached: built again
            return build()
        # keyspace/ is stamped too: writing a heatmap (keyramp keyspace) changes its mtime; the data
        # folders for the cells that have rows to download
        return self.cache.get(("detail", str(path)), (*self._files(path), path / "keyspace", path / "timeseries",
                                                      path / "keys"), build)

    def live(self, run_id: str) -> dict[str, Any]:
        """What the run is doing now (``live.json``) and which cells have their summary."""
        path = self.run_path(run_id)
        run = self._load(path)
        done = [cid for cid, c in run.cells.items() if c.total is not None and not c.incomplete]
        return {"run_id": run_id, **live_view(read_live(path), status=run.status, cells=len(run.cell_ids),
                                              since=_mtime(path / "manifest.json")), "done": done}

    def with_live(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Catalog rows, those of running runs with what they are doing now (read on every
        request: it changes each second; the catalog holds what the run files say)."""
        out = []
        for row in rows:
            if row.get("status") == "running":
                path = self.results_dir / str(row["run_id"])
                row = {**row, "live": live_view(read_live(path), status="running", cells=int(row.get("cells") or 0),
                                                since=_mtime(path / "manifest.json"))}
            out.append(row)
        return out

    # -- time series and key space ------------------------------------------------------------

    def _csv_series(self, path: Path) -> dict[str, dict[str, Any]]:
        """A run written as CSV: one file for every cell, read once and split."""
        def build() -> dict[str, dict[str, Any]]:
            out: dict[str, dict[str, Any]] = {}
            durations = self._durations(path)
            for (cell, op), columns in series_columns(read_timeseries(path, columns=CHART_COLUMNS)).items():
                out.setdefault(cell, {})[op] = downsample(columns, duration_s=durations.get(cell))
            return out

        return self.cache.get_stamped(("series-csv", str(path)), data_stamp(path), build)

    def _cell_series(self, path: Path, cell: str) -> dict[str, Any]:
        """{op: downsampled chart series} of one cell, cached until a part lands or the cell is compacted."""
        if is_csv_run(path, "timeseries"):
            return self._csv_series(path).get(cell, {})

        def build() -> dict[str, Any]:
            table = read_timeseries(path, cell=cell, columns=CHART_COLUMNS)
            duration = self._durations(path).get(cell)
            return {op: downsample(columns, duration_s=duration) for (_, op), columns in series_columns(table).items()}

        return self.cache.get_stamped(("series", str(path), cell), data_stamp(path, cell=cell), build)

    def _durations(self, path: Path) -> dict[str, float]:
        """Each finished cell's measured phase (summary.json), for the rate of its last second."""
        return {cid: float(c.duration_s) for cid, c in self._load(path).cells.items()
                if c.duration_s is not None and c.duration_s > 0}

    def series(self, run_id: str) -> dict[str, dict[str, Any]]:
        """{cell: {op: downsampled chart series}}; op "*" is the whole cell."""
        path = self.run_path(run_id)
        if is_csv_run(path, "timeseries"):
            return self._csv_series(path)
        return {cell: self._cell_series(path, cell) for cell in data_cells(path)}

    def cell_series_json(self, run_id: str, cell: str) -> tuple[bytes, str]:
        """One cell's chart document as compact JSON bytes, and an ETag for them: per operation the
        downsampled series with the thresholds drawn on them, the markers, and the latency
        distribution from the HdrHistogram logs. The run page fetches these after it has rendered,
        so its first view never waits for the read; encoded once per state of the cell's files,
        so warm requests only copy bytes."""
        if not CELL_ID_RE.match(cell):
            raise NotFound(f"no cell {cell!r}")
        path = self.run_path(run_id)
        data = data_stamp(path) if is_csv_run(path, "timeseries") else data_stamp(path, cell=cell)
        logs = [p for pair in cell_hlogs(path, cell).values() for p in pair]
        # the summary and manifest too: thresholds and markers come from them
        current = (data, stamp(*logs), stamp(*self._files(path)))

        def build() -> tuple[bytes, str]:
            run = self._load(path)
            summary = run.cell(cell)
            planned = next((c for c in run.manifest.cells if c.id == cell), None) if run.manifest else None
            thresholds = [t.to_json() for t in summary.thresholds]
            ops = {op: {**s, "thresholds": op_thresholds(thresholds, op, s)}
                   for op, s in self._cell_series(path, cell).items()}
            doc = {"run_id": run_id, "cell": cell, "ops": ops, "markers": cell_markers(summary, planned),
                   "distribution": cell_distribution(self.hlogs, path, cell)}
            tag = hashlib.blake2b(repr(current).encode(), digest_size=8).hexdigest()
            return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode(), f"{tag}-{cell}"

        return self.cache.get_stamped(("series-json", str(path), cell), current, build)

    def cell_chart_doc(self, run_id: str, cell: str) -> dict[str, Any]:
        """The same document as a dict (the cell page's JSON twin)."""
        doc: dict[str, Any] = json.loads(self.cell_series_json(run_id, cell)[0])
        return doc

    def has_series(self, run_id: str) -> bool:
        """Whether any cell has time series rows (a directory listing, no read)."""
        path = self.run_path(run_id)
        if is_csv_run(path, "timeseries"):
            return stamp(path / TIMESERIES_CSV)[0][1] > len("cell,op,second\n")
        return bool(data_cells(path))

    def keyspace_doc(self, run_id: str, cell: str) -> bytes | None:
        """A finished cell's heatmap JSON when ``keyramp keyspace`` wrote none: computed from the
        sampled keys on first view and cached until the run's files change; None without samples."""
        if not CELL_ID_RE.match(cell):
            return None
        path = self.run_path(run_id)

        def build() -> bytes | None:
            try:
                doc = cell_heatmap(self._load(path), cell)
            except (UsageError, OSError, ValueError):  # no or unreadable key samples: nothing to draw
                return None
            return None if doc is None else json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()

        return self.cache.get_stamped(("keyspace", str(path), cell),
                                      (stamp(*self._files(path)), data_stamp(path, "keys", cell=cell)), build)

    def keyspace_file(self, path: Path, cell: str, ext: str) -> Path | None:
        if not CELL_ID_RE.match(cell) or ext not in ("png", "json"):
            return None
        candidate = path / "keyspace" / f"{cell}.{ext}"
        return candidate if candidate.is_file() else None
