"""The workload's own exceptions as a run directory keeps them (``summary.json``).

``keyramp.run._exceptions`` captures them (the first occurrence of each class per operation
of a cell); every reader — the end-of-run text, the UI, ``keyramp compare`` — takes them from
a cell's summary through ``cell_exceptions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from keyramp.profile import WORKLOAD_ERRORS
from keyramp.results._summary import CellLike, CellSummary, ErrorClass, RunSummary, WarmupError, as_cell

__all__ = ["ExceptionExample", "cell_exceptions", "workload_error_cells", "workload_failed"]


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

    @classmethod
    def recorded(cls, error_class: str, part: ErrorClass | WarmupError) -> ExceptionExample:
        """The example a cell summary records (an ``errors_by_class`` entry, or its ``warmup_failure``)."""
        return cls(error_class=error_class, op=part.op or "", message=part.message or "",
                   traceback=tuple(part.traceback or ()))

    def entry(self, count: int) -> ErrorClass:
        """Its ``errors_by_class`` entry in a cell summary: the count, then this first occurrence."""
        return ErrorClass(count=count, op=self.op, message=self.message, traceback=list(self.traceback),
                          where=self.where)

    def warmup_failure(self, ops: int) -> WarmupError:
        """A cell's ``warmup_failure``: every one of its ``ops`` warm-up operations raised this."""
        return WarmupError(ops=ops, error_class=self.error_class, op=self.op, message=self.message,
                             traceback=list(self.traceback), where=self.where)

    def text(self) -> str:
        """Several lines for a terminal: the op and the message, then the user's frames."""
        lines = [f"{self.op}: {self.message}"]
        lines += [f"    {frame}" for frame in self.traceback]
        return "\n".join(lines)


def cell_exceptions(cell: CellLike) -> list[tuple[ExceptionExample, int]]:
    """A cell summary's workload exceptions with their counts: the one that stopped it in its
    warm-up (``warmup_failure``: every warm-up operation raised it) first, then those of its
    measured phase (``total.errors_by_class`` entries with a ``message``; a summary from before
    issue 28 has only counts, so none)."""
    c = as_cell(cell)
    out: list[tuple[ExceptionExample, int]] = []
    failure = c.warmup_failure
    if failure is not None:
        out.append((ExceptionExample.recorded(failure.error_class or "", failure), failure.ops or 0))
    classes = c.total.errors_by_class if c.total is not None else {}
    out += [(ExceptionExample.recorded(cls, entry), entry.count) for cls, entry in classes.items() if entry.message]
    return out


def workload_failed(cell: CellSummary) -> bool:
    """The workload's own exceptions went beyond what the profile allows (a failed
    ``workload_errors`` threshold), or the cell stopped on them in its warm-up."""
    return cell.reason == "workload error" or any(
        t.verdict == "fail" and (t.name or "").rpartition(".")[2] == WORKLOAD_ERRORS for t in cell.thresholds)


def workload_error_cells(summary: RunSummary | None) -> list[str]:
    """The cells of a run that ``workload_failed`` (the run list's and the run page's badge)."""
    return [cid for cid, c in (summary.cells if summary is not None else {}).items() if workload_failed(c)]
