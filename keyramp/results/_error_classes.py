"""Errors by name: a cell's or an operation's top error classes with their shares, as every view
writes them ("19.6 % ABORTED, 0.2 % DEADLINE_EXCEEDED").

The class is what the recorder recorded: a gRPC status the store answered (``ABORTED``,
``UNAVAILABLE``, …) or a Python workload's own exception (``CLIENT_KeyError``). The share is of
the completed operations (successes and errors), the same base as ``error_rate``.
"""

from __future__ import annotations

from collections.abc import Mapping

from keyramp.core import fmt
from keyramp.results._summary import OpStats

__all__ = ["counts_text", "errors_text", "top_error_classes"]


def top_error_classes(stats: OpStats | None, *, limit: int | None = None) -> list[tuple[str, float]]:
    """(class, share of operations), most frequent first (ties by name); empty without errors."""
    if stats is None or not stats.count:
        return []
    ranked = sorted(((name, e.count) for name, e in stats.errors_by_class.items() if e.count),
                    key=lambda item: (-item[1], item[0]))
    return [(name, n / stats.count) for name, n in ranked[:limit]]


def errors_text(stats: OpStats | None, *, limit: int = 2) -> str:
    """``19.6 % ABORTED``, ``3.1 % ABORTED, 0.2 % UNAVAILABLE (+1 more class)``; "" without errors."""
    ranked = top_error_classes(stats)
    if not ranked:
        return ""
    # one decimal from 0.1 % up (19.6 % ABORTED, not 20 %): a share of failures is read closely
    text = ", ".join(f"{fmt.percent(share, 1) if share >= 0.001 else fmt.percent(share)} {name}"
                     for name, share in ranked[:limit])
    more = len(ranked) - limit
    return text + (f" (+{fmt.plural(more, 'more class', 'more classes')})" if more > 0 else "")


def counts_text(classes: Mapping[str, int], *, limit: int = 2) -> str:
    """One second's error counts by class: ``12 ABORTED, 1 UNAVAILABLE`` (the live status line)."""
    ranked = sorted(((n, c) for n, c in classes.items() if c), key=lambda item: (-item[1], item[0]))
    text = ", ".join(f"{fmt.count(c)} {n}" for n, c in ranked[:limit])
    return text + (f" (+{len(ranked) - limit})" if len(ranked) > limit else "")
