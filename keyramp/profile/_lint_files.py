"""Lint profile files (``keyramp lint``): each file's findings, or why it could not be read, and the exit code."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keyramp.core import UsageError
from keyramp.profile._files import load_profile, profile_paths
from keyramp.profile._lint import Finding, lint_profile

__all__ = ["LintReport", "LintedFile", "lint_files"]


@dataclass(frozen=True, kw_only=True)
class LintedFile:
    path: Path
    #: Why the file is not a valid profile (one line), or None.
    error: str | None = None
    findings: tuple[Finding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "error": self.error, "findings": [f.to_dict() for f in self.findings]}


@dataclass(frozen=True, kw_only=True)
class LintReport:
    files: tuple[LintedFile, ...]
    #: Warnings fail too.
    strict: bool = False

    @property
    def exit_code(self) -> int:
        """2 an unreadable or invalid profile, 1 an error (under ``strict`` also a warning), else 0."""
        if any(f.error is not None for f in self.files):
            return 2
        failing = {"error", "warning"} if self.strict else {"error"}
        return 1 if any(x.severity in failing for f in self.files for x in f.findings) else 0

    def to_json(self) -> list[dict[str, Any]]:
        return [f.to_json() for f in self.files]


def lint_files(paths: Sequence[str | Path], *, strict: bool = False) -> LintReport:
    """Lint every profile named by ``paths`` (files, or directories of ``*.toml``); an invalid file
    is reported in the result, not raised. UsageError when ``paths`` name no profile at all."""
    files = profile_paths([str(p) for p in paths])
    if not files:
        raise UsageError("lint: no *.toml profiles found")
    linted: list[LintedFile] = []
    for path in files:
        try:
            linted.append(LintedFile(path=path, findings=tuple(lint_profile(load_profile(path)))))
        except UsageError as exc:
            linted.append(LintedFile(path=path, error=str(exc)))
    return LintReport(files=tuple(linted), strict=strict)
