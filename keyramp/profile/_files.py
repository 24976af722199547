"""Profile files: read and validate one (or a directory of them), write one from plain values."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keyramp.core import UsageError
from keyramp.profile._model import Profile
from keyramp.profile._profile import parse_profile

__all__ = ["collect_profiles", "load_profile", "profile_paths", "toml_value", "write_profile"]


def load_profile(path: str | Path, *, overrides: Mapping[str, Any] | None = None) -> Profile:
    """Read and validate one TOML profile file; ``overrides`` replace top-level fields
    (e.g. ``--duration``) before validation."""
    file = Path(path)
    try:
        text = file.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{file}: no such profile file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{file}: cannot read profile: {exc.__class__.__name__}: {exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{file}: invalid TOML: {exc}") from None
    return parse_profile({**raw, **(overrides or {})}, source=str(file), path=file)


def profile_paths(paths: list[str]) -> list[Path]:
    """Profile files named by ``paths``: a file as given, a directory as every ``**/*.toml`` in it, sorted."""
    files: list[Path] = []
    for item in paths:
        p = Path(item)
        files.extend(sorted(p.rglob("*.toml")) if p.is_dir() else [p])
    return files


def collect_profiles(paths: list[str], *, overrides: Mapping[str, Any] | None = None) -> list[Profile]:
    """Profiles from files and directories (``DIR`` means every ``**/*.toml`` in it, sorted)."""
    files: list[Path] = []
    for item in paths:
        p = Path(item)
        if p.is_dir():
            found = sorted(p.rglob("*.toml"))
            if not found:
                raise UsageError(f"{p}: no *.toml profiles in this directory")
            files.extend(found)
        else:
            files.append(p)
    if not files:
        raise UsageError("no profile given")
    return [load_profile(f, overrides=overrides) for f in files]


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


def write_profile(path: Path, top: Mapping[str, Any], **tables: Mapping[str, Any]) -> Path:
    """Write a profile file from plain values (tests, benches, generated scenario matrices)."""
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items()]
    for name, table in tables.items():
        lines.append(f"[{name}]")
        lines.extend(f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items())
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
