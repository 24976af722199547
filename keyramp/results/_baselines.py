"""Named baselines: ``<results>/baselines.json`` maps a name to a run.

``keyramp baseline set main RUN`` then ``keyramp compare NEW --baseline main``. The file
is small and rewritten atomically (write + rename), so a crash never leaves it torn.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from keyramp._errors import UsageError
from keyramp.results._catalog import Run, load_run, resolve_run

__all__ = [
    "BASELINES_FILE",
    "NAME_RE",
    "load_baselines",
    "register",
    "remove_baseline",
    "resolve_baseline",
    "set_baseline",
]

BASELINES_FILE = "baselines.json"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _path(results_dir: Path) -> Path:
    return Path(results_dir) / BASELINES_FILE


def load_baselines(results_dir: Path) -> dict[str, dict[str, Any]]:
    """name -> {"run_id", "path", "set_at"}; a missing file is empty, a corrupt one a UsageError."""
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


def set_baseline(results_dir: Path, name: str, run_spec: str) -> Run:
    _check_name(name)
    run = resolve_run(run_spec, results_dir)
    if not run.ok:
        raise UsageError(f"run {run.run_id} cannot be a baseline: {run.unusable_reason}")
    try:
        # Relative to the results directory when inside it, so the directory can move (CI artifacts).
        stored = str(run.path.resolve().relative_to(Path(results_dir).resolve()))
    except ValueError:
        stored = str(run.path.resolve())
    baselines = load_baselines(results_dir)
    baselines[name] = {"run_id": run.run_id, "path": stored,
                       "set_at": datetime.now(UTC).isoformat(timespec="seconds")}
    _save(results_dir, baselines)
    return run


def remove_baseline(results_dir: Path, name: str) -> None:
    baselines = load_baselines(results_dir)
    if name not in baselines:
        raise UsageError(f"no baseline named {name!r}")
    del baselines[name]
    _save(results_dir, baselines)


def resolve_baseline(spec: str, results_dir: Path) -> Run:
    """``--baseline`` value: a run id or run directory, else a baseline name. Must be usable."""
    baselines = {}
    if NAME_RE.match(spec):
        baselines = load_baselines(results_dir)
    if spec in baselines:
        path = Path(baselines[spec]["path"])
        run = load_run(path if path.is_absolute() else Path(results_dir) / path)
        if run.status == "missing":
            raise UsageError(f"baseline {spec!r} points to {run.path}, which no longer exists")
    else:
        try:
            run = resolve_run(spec, results_dir)
        except UsageError:
            raise UsageError(f"unknown baseline {spec!r}: not a run id, run directory or baseline name") from None
    if not run.ok:
        raise UsageError(f"baseline {run.run_id} is not usable: {run.unusable_reason}")
    return run


# ----------------------------------------------------------------------------- CLI


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("baseline", help="name runs as baselines for compare",
                                   description="Named baselines, stored in <results>/baselines.json.")
    parser.add_argument("--results", type=Path, default=Path("results"), metavar="DIR",
                        help="results directory (default: ./results)")
    verbs = parser.add_subparsers(dest="baseline_verb", metavar="{set,list,rm}", required=True)
    set_p = verbs.add_parser("set", help="name a run as baseline")
    set_p.add_argument("name")
    set_p.add_argument("run", help="run id or run directory")
    verbs.add_parser("list", help="list named baselines")
    rm_p = verbs.add_parser("rm", help="forget a named baseline (the run stays)")
    rm_p.add_argument("name")
    parser.set_defaults(func=_cmd_baseline)


def _cmd_baseline(args: argparse.Namespace) -> int:
    results = Path(args.results)
    if args.baseline_verb == "set":
        run = set_baseline(results, args.name, args.run)
        print(f"baseline {args.name} -> {run.run_id}")
    elif args.baseline_verb == "rm":
        remove_baseline(results, args.name)
        print(f"removed baseline {args.name}")
    else:
        baselines = load_baselines(results)
        if not baselines:
            print(f"no baselines in {results}")
        for name, entry in sorted(baselines.items()):
            path = Path(entry["path"])
            exists = (path if path.is_absolute() else results / path).is_dir()
            missing = "" if exists else "\t(missing)"
            sys.stdout.write(f"{name}\t{entry.get('run_id', '?')}\t{entry.get('set_at', '')}{missing}\n")
    return 0
