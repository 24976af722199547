"""The workload's own exceptions as a run directory keeps them (``summary.json``).

``keyramp.run._exceptions`` captures them (the first occurrence of each class per operation
of a cell); every reader — the end-of-run text, the UI, ``keyramp compare`` — takes them from
a cell's summary through ``cell_exceptions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ExceptionExample", "cell_exceptions"]


@dataclass(frozen=True, kw_only=True)
class ExceptionExample:
    """The first occurrence of one exception class in one operation of a cell."""

    error_class: str  # as the recorder classifies it: CLIENT_KeyError
    op: str
    message: str  # one line: "KeyError: 'missing'"
    #: ``file:line in function: source`` of the user's frames, outermost first; the last
    #: entry is where it was raised when that is in a library (``raised in …``).
    traceback: tuple[str, ...]

    @property
    def where(self) -> str:
        """``file:line`` of the innermost user frame (the line to look at), or ``""``."""
        user = [f for f in self.traceback if not f.startswith("raised in ")]
        return user[-1].split(" in ", 1)[0] if user else ""

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "message": self.message, "traceback": list(self.traceback), "where": self.where}

    @classmethod
    def from_json(cls, error_class: str, data: Mapping[str, Any]) -> ExceptionExample:
        return cls(error_class=error_class, op=str(data.get("op", "")), message=str(data.get("message", "")),
                   traceback=tuple(str(f) for f in data.get("traceback") or ()))

    def text(self) -> str:
        """Several lines for a terminal: the op and the message, then the user's frames."""
        lines = [f"{self.op}: {self.message}"]
        lines += [f"    {frame}" for frame in self.traceback]
        return "\n".join(lines)


def cell_exceptions(cell: Mapping[str, Any]) -> list[tuple[ExceptionExample, int]]:
    """A cell summary's workload exceptions with their counts: the one that stopped it in its
    warm-up (``warmup_failure``: every warm-up operation raised it) first, then those of its
    measured phase (``total.errors_by_class`` entries with a ``message``). Tolerates older and
    hand-edited summaries (plain counts, missing fields)."""
    out: list[tuple[ExceptionExample, int]] = []
    failure = cell.get("warmup_failure")
    if isinstance(failure, Mapping):
        out.append((ExceptionExample.from_json(str(failure.get("error_class", "")), failure), _int(failure.get("ops"))))
    total = cell.get("total")
    classes = total.get("errors_by_class") if isinstance(total, Mapping) else None
    for cls, entry in (classes or {}).items() if isinstance(classes, Mapping) else ():
        if isinstance(entry, Mapping) and entry.get("message"):
            out.append((ExceptionExample.from_json(str(cls), entry), _int(entry.get("count"))))
    return out


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
