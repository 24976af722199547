"""A comparison's warnings: each names the run it is about, and similar ones read as one group.

A warning is typed (kind, the run it is about, where, the reason) so that every view can group
them — "3 cells of RUN: p95, p99 inconclusive — …" once, not forty lines joined by semicolons —
and a reader always learns *whose* generator fell behind (the baseline's or the candidate's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from keyramp.core import fmt

__all__ = ["KINDS", "CompareWarning", "WarningGroup", "group_warnings"]

#: Kinds in the order the views list their groups (what to read first), with a heading each.
KINDS: dict[str, str] = {
    "inconclusive": "inconclusive: the machine, not the store, was measured",
    "behind": "load generator behind its schedule",
    "unmatched": "cells in one run only",
    "skipped": "runs left out",
    "died": "runs whose process died",
    "thresholds": "profile thresholds not read",
}


@dataclass(frozen=True, kw_only=True)
class CompareWarning:
    kind: str  # one of KINDS
    text: str  # the reason, about ``run_id`` (without the where)
    run_id: str | None = None  # the run the reason is about (the baseline's id for a baseline)
    role: str = ""  # "baseline" | "candidate" | "" (the run's role in the comparison)
    where: str = ""  # cell identity, or identity/op

    def line(self) -> str:
        """The warning as one line: ``identity/op RUN (baseline): reason``."""
        who = " ".join(p for p in (self.where, self.run_id or "", f"({self.role})" if self.role else "") if p)
        return f"{who}: {self.text}" if who else self.text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"line": self.line()}


@dataclass(frozen=True, kw_only=True)
class WarningGroup:
    """Warnings of one kind about one run whose reasons differ only in their figures."""

    kind: str
    run_id: str | None
    role: str
    text: str  # the reason, each figure as the range the members spanned
    where: tuple[str, ...]

    @property
    def heading(self) -> str:
        return KINDS.get(self.kind, self.kind)

    def line(self, *, limit: int = 6) -> str:
        """``RUN (candidate), 3 places (a/insert, b/insert, c/read): reason``."""
        who = " ".join(p for p in (self.run_id or "", f"({self.role})" if self.role else "") if p)
        places = ""
        if self.where:
            shown = ", ".join(self.where[:limit]) + (f" and {len(self.where) - limit} more"
                                                     if len(self.where) > limit else "")
            places = shown if len(self.where) == 1 else f"{len(self.where)} places ({shown})"
        head = ", ".join(p for p in (who, places) if p)
        return f"{head}: {self.text}" if head else self.text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"heading": self.heading, "line": self.line(limit=10**6)}


def group_warnings(warnings: Sequence[CompareWarning]) -> list[WarningGroup]:
    """Similar warnings as one group each, kinds in ``KINDS`` order, then in order of appearance."""
    buckets: dict[tuple[str, str | None, str, str], list[CompareWarning]] = {}
    for w in warnings:
        template, _ = fmt.merge_figures([w.text])
        buckets.setdefault((w.kind, w.run_id, w.role, template), []).append(w)
    order = list(KINDS)
    groups = []
    for (kind, run_id, role, _), members in buckets.items():
        _, text = fmt.merge_figures([m.text for m in members])
        where = tuple(dict.fromkeys(m.where for m in members if m.where))
        groups.append(WarningGroup(kind=kind, run_id=run_id, role=role, text=text, where=where))
    return sorted(groups, key=lambda g: order.index(g.kind) if g.kind in order else len(order))
