"""Named baselines: ``<results>/baselines.json`` maps a name to a run, or to a set of runs.

``keyramp baseline set main RUN`` then ``keyramp compare NEW --baseline main``. Several runs of
one build (``set main RUN RUN RUN``, or ``set main --last 3``) make one baseline whose spread
``compare`` reads as the between-run noise (``keyramp.compare._noise``). The file is small and
rewritten atomically (write + rename), so a crash never leaves it torn.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from keyramp.core import UsageError
from keyramp.results._catalog import Run, load_run, resolve_run

__all__ = [
    "BASELINES_FILE",
    "NAME_RE",
    "baseline_run_ids",
    "load_baselines",
    "remove_baseline",
    "resolve_baseline",
    "set_baseline",
]

BASELINES_FILE = "baselines.json"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _path(results_dir: Path) -> Path:
    return Path(results_dir) / BASELINES_FILE


def load_baselines(results_dir: Path) -> dict[str, dict[str, Any]]:
    """name -> {"run_id", "path", "set_at", "runs": [{"run_id", "path"}, …]} (``run_id``/``path``: the
    first run; ``runs`` only for a set); a missing file is empty, a corrupt one a UsageError."""
    path = _path(results_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} is unreadable or not JSON: {exc}") from None
    baselines = data.get("baselines") if isinstance(data, dict) else None
    if not isinstance(baselines, dict):
        raise UsageError(f"{path} has no 'baselines' object")
    return {k: v for k, v in baselines.items() if isinstance(v, dict) and isinstance(v.get("path"), str)}


def _save(results_dir: Path, baselines: dict[str, dict[str, Any]]) -> None:
    path = _path(results_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".baselines.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"schema": 1, "baselines": baselines}, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)


def _check_name(name: str) -> None:
    if not NAME_RE.match(name):
        raise UsageError(f"invalid baseline name {name!r} (letters, digits, . _ -; at most 64)")


def _stored_path(run: Run, results_dir: Path) -> str:
    try:
        # Relative to the results directory when inside it, so the directory can move (CI artifacts).
        return str(run.path.resolve().relative_to(Path(results_dir).resolve()))
    except ValueError:
        return str(run.path.resolve())


def _one_build(runs: list[Run]) -> None:
    """Runs of one baseline set must be of one profile and one build (git commit, where recorded)."""
    for what, values in (("profile", {r.run_id: r.profile_name for r in runs}),
                         ("build (git commit)", {r.run_id: r.manifest.git_sha if r.manifest else None
                                                 for r in runs})):
        if len({v for v in values.values() if v}) > 1:
            raise UsageError(f"a baseline's runs must be of one {what}: "
                             + ", ".join(f"{run_id}: {value}" for run_id, value in values.items()))


def baseline_run_ids(entry: dict[str, Any]) -> list[str]:
    """The run ids of one ``baselines.json`` entry (a set's every run)."""
    members = [str(m.get("run_id")) for m in entry.get("runs") or [] if isinstance(m, dict)]
    return members or [str(entry.get("run_id"))]


def set_baseline(results_dir: Path, name: str, run_specs: str | Sequence[str]) -> list[Run]:
    """Name one run, or several runs of one build, as the baseline ``name``."""
    _check_name(name)
    specs = [run_specs] if isinstance(run_specs, str) else list(run_specs)
    if not specs:
        raise UsageError("name the baseline's runs (RUN...) or select them with --last N")
    runs = [resolve_run(spec, results_dir) for spec in dict.fromkeys(specs)]
    for run in runs:
        if not run.ok:
            raise UsageError(f"run {run.run_id} cannot be a baseline: {run.unusable_reason}")
    _one_build(runs)
    baselines = load_baselines(results_dir)
    entry: dict[str, Any] = {"run_id": runs[0].run_id, "path": _stored_path(runs[0], results_dir),
                             "set_at": datetime.now(UTC).isoformat(timespec="seconds")}
    if len(runs) > 1:
        entry["runs"] = [{"run_id": r.run_id, "path": _stored_path(r, results_dir)} for r in runs]
    baselines[name] = entry
    _save(results_dir, baselines)
    return runs


def remove_baseline(results_dir: Path, name: str) -> None:
    baselines = load_baselines(results_dir)
    if name not in baselines:
        raise UsageError(f"no baseline named {name!r}")
    del baselines[name]
    _save(results_dir, baselines)


def _load_member(name: str, path_text: str, results_dir: Path) -> Run:
    path = Path(path_text)
    run = load_run(path if path.is_absolute() else Path(results_dir) / path)
    if run.status == "missing":
        raise UsageError(f"baseline {name!r} points to {run.path}, which no longer exists")
    return run


def resolve_baseline(spec: str, results_dir: Path) -> list[Run]:
    """``--baseline`` value: a run id or run directory, else a baseline name (one run or a set).
    Every run must be usable."""
    baselines = {}
    if NAME_RE.match(spec):
        baselines = load_baselines(results_dir)
    if spec in baselines:
        entry = baselines[spec]
        members = [m["path"] for m in entry.get("runs") or [] if isinstance(m, dict) and isinstance(m.get("path"), str)]
        runs = [_load_member(spec, path, results_dir) for path in members or [entry["path"]]]
    else:
        try:
            runs = [resolve_run(spec, results_dir)]
        except UsageError:
            raise UsageError(f"unknown baseline {spec!r}: not a run id, run directory or baseline name") from None
    for run in runs:
        if not run.ok:
            raise UsageError(f"baseline {run.run_id} is not usable: {run.unusable_reason}")
    return runs
