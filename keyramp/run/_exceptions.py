"""The workload's own exceptions: what a Python workload's op raised, shown so the bug can be found.

A store's status (``ABORTED``, ``DEADLINE_EXCEEDED``, … : a Google API error or a gRPC
status anywhere in the chain) is a measured outcome, governed by ``[thresholds]``. Anything
else an op raises is the workload's own exception: its first occurrence per operation and
class is kept as an ``ExceptionExample`` — message, and the traceback of the user's own
frames (file:line) plus where it was raised — printed when it first happens, carried in
``summary.json`` (``errors_by_class`` entries) and Locust's exceptions CSV, and counted as
``workload_errors``.

Capturing runs on the error path only, once per operation and class in a cell (the
recorder caches the answer for every class it has seen, a status class too): counting an
error stays one dict lookup.
"""

from __future__ import annotations

import sysconfig
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from keyramp.backends import classify, raised_by_workload
from keyramp.core import RunFailed
from keyramp.results import ExceptionExample

__all__ = ["ExceptionExample", "WarmupFailure", "WarmupTally", "WorkloadFailed", "example_of", "examples_from_json",
           "examples_to_json", "frames_of"]

#: Frames in these directories are keyramp's, Python's or a library's; the rest are the user's.
_NOT_USER: Final = tuple({str(Path(__file__).resolve().parents[1]) + "/",
                          *(sysconfig.get_paths()[k] + "/" for k in ("stdlib", "platstdlib", "purelib", "platlib"))})
_MESSAGE_CHARS: Final = 500
_FRAMES: Final = 12


def _frame(f: traceback.FrameSummary) -> str:
    where = f"{f.filename}:{f.lineno} in {f.name}"
    return f"{where}: {f.line}" if f.line else where


def _short(filename: str) -> str:
    """A library file from its package on (``google/cloud/firestore_v1/…``)."""
    for prefix in _NOT_USER:
        if filename.startswith(prefix):
            return filename[len(prefix):]
    return filename


def frames_of(exc: BaseException) -> tuple[str, ...]:
    """The user's frames of ``exc``'s traceback (neither keyramp's, Python's nor a library's;
    the innermost ``_FRAMES``), then where it was raised if that is elsewhere."""
    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if not f.filename.startswith(_NOT_USER)]
    out = [_frame(f) for f in user[-_FRAMES:]]
    if frames and (not user or frames[-1] is not user[-1]):
        last = frames[-1]
        out.append(f"raised in {_short(last.filename)}:{last.lineno} in {last.name}")
    return tuple(out)


def example_of(op: str, error_class: str, exc: BaseException) -> ExceptionExample | None:
    """``exc`` as an example of the workload's own exception, or None for a store's status."""
    if not raised_by_workload(error_class, exc):
        return None
    text = " ".join(str(exc).split())
    if len(text) > _MESSAGE_CHARS:
        text = text[:_MESSAGE_CHARS] + "…"
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return ExceptionExample(error_class=error_class, op=op, message=message, traceback=frames_of(exc))


@dataclass(frozen=True, kw_only=True)
class WarmupFailure:
    """Every one of a cell's ``ops`` warm-up operations raised the workload's own exception."""

    ops: int
    example: ExceptionExample


@dataclass(kw_only=True)
class WarmupTally:
    """A cell's warm-up operations in one process (a worker reports its own; the master
    merges them): how many ran, how many raised the workload's own exception, the first."""

    ops: int = 0
    workload_errors: int = 0
    example: ExceptionExample | None = None

    def failed(self, op: str, error: BaseException, *, python_workload: bool) -> None:
        self.ops += 1
        if not python_workload:
            return  # built-in operations: keyramp's own, nothing to fail fast on
        cls = classify(error)
        if raised_by_workload(cls, error):
            self.workload_errors += 1
            if self.example is None:
                self.example = example_of(op, cls, error)

    def failure(self) -> WarmupFailure | None:
        """Every warm-up operation so far raised the workload's own exception (None: not so)."""
        if self.ops and self.workload_errors == self.ops and self.example is not None:
            return WarmupFailure(ops=self.ops, example=self.example)
        return None

    def to_wire(self) -> dict[str, Any]:
        return {"ops": self.ops, "workload_errors": self.workload_errors,
                "examples": examples_to_json([self.example] if self.example is not None else [])}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> WarmupTally:
        examples = examples_from_json(data.get("examples"))
        return cls(ops=int(data.get("ops", 0)), workload_errors=int(data.get("workload_errors", 0)),
                   example=examples[0] if examples else None)

    @classmethod
    def merged(cls, tallies: Iterable[WarmupTally]) -> WarmupTally:
        out = cls()
        for t in tallies:
            out.ops += t.ops
            out.workload_errors += t.workload_errors
            out.example = out.example or t.example
        return out


class WorkloadFailed(RunFailed):
    """A cell stopped before its measured phase: every warm-up operation raised the workload's
    own exception (its code is broken, measuring it would show nothing). The run goes on
    with the next cell; the cell is marked ``failed: workload error``."""

    def __init__(self, cell: str, failure: WarmupFailure) -> None:
        example = failure.example
        where = f" at {example.where}" if example.where else ""
        super().__init__(f"{cell}: workload error: all {failure.ops} warm-up operations raised; "
                         f"{example.op}: {example.message}{where}")
        self.cell, self.failure = cell, failure


def examples_to_json(examples: Iterable[ExceptionExample]) -> list[dict[str, Any]]:
    """For a wire message (a worker's interval, its warm-up report)."""
    return [{"class": e.error_class, **e.to_json()} for e in examples]


def examples_from_json(data: Iterable[Mapping[str, Any]] | None) -> list[ExceptionExample]:
    return [ExceptionExample.from_json(str(d.get("class", "")), d) for d in data or ()]
