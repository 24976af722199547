"""Running the real ``keyramp`` CLI in a subprocess against the session's emulators."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from keyramp._emulators import RunningEmulator

ENV_FOR_KIND = {
    "datastore": "DATASTORE_EMULATOR_HOST",
    "firestore": "FIRESTORE_EMULATOR_HOST",
    "firestore-datastore": "KEYRAMP_FIRESTORE_DATASTORE_EMULATOR_HOST",
    "bigtable": "BIGTABLE_EMULATOR_HOST",
}


def toml_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    return repr(value)


def write_profile(path: Path, top: dict[str, Any], **tables: dict[str, Any]) -> Path:
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items()]
    for name, table in tables.items():
        lines.append(f"[{name}]")
        lines.extend(f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items())
    path.write_text("\n".join(lines) + "\n")
    return path


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
