"""Writing a run directory (format: docs/run-format.md).

``RunDirectory`` creates ``results/<run-id>/`` exclusively (unique under concurrent
runs), writes JSON atomically (temp file + rename, so a reader never sees half a
file), and is the ``IntervalSink`` the recorders flush into every second: HdrHistogram
interval logs, and the time series and key samples as Parquet (``_parquet``: a closed part
per flush while a cell runs, one compacted file per cell when it ends).
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hdrh.histogram import HdrHistogram

from keyramp.backends import STORES
from keyramp.core import ALL_OPS, KeySample, UsageError, __version__
from keyramp.results._alive import process_identity
from keyramp.results._parquet import KEYS_SCHEMA, KINDS, TIMESERIES_SCHEMA, CellWriter
from keyramp.results._rows import TimeseriesRow
from keyramp.results._summary import MANIFEST_SCHEMA, RunManifest, RunSummary
from keyramp.targets import sdk_root

__all__ = ["SCHEMA", "RunDirectory", "collect_versions", "utc_now", "write_json_atomic", "write_json_new"]

SCHEMA = MANIFEST_SCHEMA
_DIST = ("locust", "grpcio", "hdrhistogram")


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _written_aside(path: Path, data: Any) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=False, default=str)
        fh.write("\n")
    return tmp


def write_json_atomic(path: Path, data: Any) -> None:
    os.replace(_written_aside(path, data), path)


def write_json_new(path: Path, data: Any) -> bool:
    """``write_json_atomic`` that never replaces a file already there (False: one was): a file a
    user is writing (``keyramp plan RUN --json > RUN/plan.json``) is theirs."""
    tmp = _written_aside(path, data)
    try:
        os.link(tmp, path)  # atomic, and fails when ``path`` exists
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def _cloud_sdk_version() -> str | None:
    try:  # the SDK the emulators are started from; a version string never fails a run
        return (sdk_root() / "VERSION").read_text().strip()
    except (OSError, ValueError):
        return None


def collect_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"keyramp": __version__, "python": platform.python_version()}
    # Each store's client libraries (its spec), once each.
    libraries = dict.fromkeys(lib for spec in STORES.specs() for lib in spec.client_libraries)
    for dist in (*_DIST, *libraries):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    versions["cloud-sdk"] = _cloud_sdk_version()
    return versions


def git_sha() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _new_run_id(profile_slug: str) -> str:
    now = datetime.now(UTC)
    stamp = now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond // 1000:03d}Z"
    return f"{stamp}-{profile_slug[:40]}-{secrets.token_hex(2)}"


class RunDirectory:
    """One run's directory and its open files. Use as a context manager."""

    def __init__(self, out: Path, profile_slug: str) -> None:
        out = Path(out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot create results directory: {exc.strerror or exc}") from None
        for _ in range(20):
            run_id = _new_run_id(profile_slug)
            try:
                (out / run_id).mkdir()
            except FileExistsError:
                continue
            except OSError as exc:
                raise UsageError(f"--out {out}: cannot create a run directory: {exc.strerror or exc}") from None
            break
        else:  # pragma: no cover - 20 collisions of 16 random bits in one millisecond
            raise UsageError(f"--out {out}: could not create a unique run directory")
        self.run_id = run_id
        self.path = out / run_id
        self._check_writable()
        for sub in ("histograms", "locust", *KINDS):
            (self.path / sub).mkdir()
        self._hlogs: dict[tuple[str, str, str], IO[str]] = {}
        self._writers: dict[tuple[str, str], CellWriter] = {}
        self._start_epoch = time.time()

    def _check_writable(self) -> None:
        """Fail before any load starts if the disk is read-only or (nearly) full."""
        probe = self.path / ".probe"
        try:
            with open(probe, "wb") as fh:
                fh.write(b"\0" * 65536)
                fh.flush()
                os.fsync(fh.fileno())
            probe.unlink()
        except OSError as exc:
            shutil.rmtree(self.path, ignore_errors=True)  # leave no empty run behind
            raise UsageError(f"{self.path}: results directory is not writable: {exc.strerror or exc}") from None

    # -- JSON -------------------------------------------------------------------------
    # Both go through the results model (``_summary``): a document that does not have its
    # shape fails here, in the writer, not later in a reader.
    def write_manifest(self, manifest: RunManifest | Mapping[str, Any]) -> None:
        doc = manifest if isinstance(manifest, RunManifest) else RunManifest.from_json(dict(manifest))
        write_json_atomic(self.path / "manifest.json", doc.to_json())

    def write_summary(self, summary: RunSummary) -> None:
        write_json_atomic(self.path / "summary.json", summary.to_json())

    def write_text(self, name: str, text: str) -> None:
        (self.path / name).write_text(text, encoding="utf-8")

    # -- IntervalSink ------------------------------------------------------------------
    def begin_cell(self, cell: str) -> None:
        """The measured phase of ``cell`` starts: an earlier cell still open is ended first."""
        self.end_cell()
        self._start_epoch = time.time()

    def end_cell(self) -> None:
        """Compact the open cells' Parquet parts into ``<kind>/<cell>.parquet`` (idempotent).

        Never raises: if compaction fails (a full disk), the parts stay and are read as they are.
        """
        writers, self._writers = self._writers, {}
        for writer in writers.values():
            try:
                writer.finish()
            except (OSError, pa.ArrowException):
                pass

    def _writer(self, kind: str, cell: str) -> CellWriter:
        writer = self._writers.get((kind, cell))
        if writer is None:
            writer = self._writers[(kind, cell)] = CellWriter(self.path / kind, cell, kind)
        return writer

    def _hlog(self, cell: str, op: str, kind: str) -> IO[str]:
        handle = self._hlogs.get((cell, op, kind))
        if handle is None:
            suffix = ".service.hlog" if kind == "service" else ".hlog"
            # Open for the whole cell (one .hlog line per second); closed when the cell ends.
            handle = open(self.path / "histograms" / f"{cell}.{op}{suffix}", "w", encoding="utf-8")  # noqa: SIM115
            what = "service time (from actual start)" if kind == "service" else "latency from intended start"
            handle.write(f"#keyramp cell={cell} op={op}: {what}, values in microseconds\n")
            handle.write("#[Histogram log format version 1.2]\n")
            stamp = datetime.fromtimestamp(self._start_epoch, UTC).isoformat(sep=" ")
            handle.write(f"#[StartTime: {self._start_epoch:.3f} (seconds since epoch), {stamp}]\n")
            handle.write('"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n')
            self._hlogs[(cell, op, kind)] = handle
        return handle

    def interval(
        self, *, cell: str, op: str, start_s: float, length_s: float, latency: HdrHistogram, service: HdrHistogram
    ) -> None:
        if op == ALL_OPS:
            # the sum of the ops' intervals (HdrHistogram addition is exact): written, it was 30 % of
            # the logs' bytes; ``read_intervals(run, cell, "*")`` adds them up when asked
            return
        for kind, hist in (("latency", latency), ("service", service)):
            payload = hist.encode().decode("ascii")
            max_ms = hist.get_max_value() / 1000.0 if hist.get_total_count() else 0.0
            self._hlog(cell, op, kind).write(f"{start_s:.3f},{length_s:.3f},{max_ms:.3f},{payload}\n")

    def timeseries(self, rows: Sequence[TimeseriesRow]) -> None:
        if not rows:
            return
        table = pa.Table.from_pydict({
            "cell": [r.cell for r in rows],
            "op": [r.op for r in rows],
            "second": [r.second for r in rows],
            "count": [r.count for r in rows],
            "errors": [r.errors for r in rows],
            "p50_ms": [r.p50_ms for r in rows],
            "p99_ms": [r.p99_ms for r in rows],
            "service_p99_ms": [r.service_p99_ms for r in rows],
            "max_ms": [r.max_ms for r in rows],
            "target_ops_per_s": [None if r.target_ops_per_s is None else round(r.target_ops_per_s, 3) for r in rows],
            "late": [r.late for r in rows],
            "dropped": [r.dropped for r in rows],
            "error_classes": [sorted(r.error_classes.items()) for r in rows],
            "p95_ms": [r.p95_ms for r in rows],
            "in_flight": [r.in_flight for r in rows],
        }, schema=TIMESERIES_SCHEMA)
        cells = {r.cell for r in rows}
        if len(cells) == 1:  # one recorder's tick: always one cell
            self._writer("timeseries", rows[0].cell).append(table)
            return
        for cell in sorted(cells):
            self._writer("timeseries", cell).append(table.filter(pc.equal(table["cell"], cell)))

    def keys(self, cell: str, samples: Sequence[KeySample]) -> None:
        if not samples:
            return
        # (t, op, key) alone (a sample written by hand): its kind follows from the op's name when read
        full = [s if len(s) == 6 else (*s, None, (), None) for s in samples]
        ts, ops, keys, kinds, index, access = zip(*full, strict=True)
        t_us = np.rint(np.asarray(ts, dtype=np.float64) * 1e6).astype(np.int64)
        self._writer("keys", cell).append(pa.Table.from_arrays(
            [pa.array([cell] * len(ts), pa.string()), pa.array(t_us), pa.array(ops, pa.string()),
             pa.array(keys, pa.string()), pa.array(kinds, pa.string()),
             pa.array([list(i) if i else None for i in index], pa.list_(pa.string())),
             pa.array(access, pa.int16())], schema=KEYS_SCHEMA))

    def flush(self) -> None:
        for handle in self._hlogs.values():
            handle.flush()
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        for handle in self._hlogs.values():
            handle.close()
        self._hlogs.clear()
        self.end_cell()

    def __enter__(self) -> RunDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def base_manifest(*, run_id: str, profile: Any, cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "run_id": run_id,
        "profile_name": profile.name,
        "profile_path": str(profile.path) if profile.path else None,
        "profile": profile.data,
        "cells": list(cells),
        "versions": collect_versions(),
        "git_sha": git_sha(),
        "host": socket.gethostname(),
        **process_identity(),  # with the host: whether the run still runs (results._alive)
        "seed": profile.seed,
        "started_at": utc_now(),
        "ended_at": None,
        "status": "running",
        "reason": None,
        "lint": [],
    }
