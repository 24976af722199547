"""Running the real ``keyramp`` CLI in a subprocess against the session's emulators."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from keyramp.profile._files import toml_value, write_profile
from keyramp.targets._emulators import EMULATORS, RunningEmulator

__all__ = [
    "ENV_FOR_KIND",
    "emulator_env",
    "key_rows",
    "keyramp",
    "load",
    "only_run_dir",
    "recorded_seconds",
    "timeseries_rows",
    "toml_value",
    "write_profile",
]

# The standard variable per emulator kind, from the emulator registry.
ENV_FOR_KIND = {kind: spec.env_var for kind, spec in EMULATORS.items()}


def emulator_env(*emulators: RunningEmulator) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV_FOR_KIND.values()}
    env.update({ENV_FOR_KIND[e.kind]: e.endpoint for e in emulators})
    env["PYTHONUNBUFFERED"] = "1"
    return env


def keyramp(*args: str, env: dict[str, str] | None = None, timeout: float = 240,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "keyramp", *args], capture_output=True, text=True, timeout=timeout,
        env=env, cwd=cwd, check=False,
    )


def only_run_dir(out: Path) -> Path:
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def load(run_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((run_dir / name).read_text())


def timeseries_rows(run_dir: Path) -> list[dict[str, Any]]:
    """Every time series row of a run (finished cells and the parts of one in progress)."""
    from keyramp.results._read import read_timeseries

    return read_timeseries(run_dir).to_pylist()


def key_rows(run_dir: Path) -> list[dict[str, Any]]:
    from keyramp.results._read import read_keys

    return read_keys(run_dir).to_pylist()


def recorded_seconds(out: Path) -> int:
    """Closed seconds (``op = "*"`` rows) recorded so far by the run being written under ``out``."""
    runs = [p for p in out.iterdir() if p.is_dir() and (p / "timeseries").is_dir()] if out.exists() else []
    return sum(1 for r in timeseries_rows(runs[0]) if r["op"] == "*") if runs else 0
