"""The small judgements every compared metric shares: a ratio and its interval against the minimum
effect (the verdict), and how late the load generator was (when its queue is in the latency)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from keyramp.compare._options import CompareOptions

__all__ = ["Pooled", "behind_note", "late_budget", "late_fraction", "median", "ratio_verdict"]


def median(values: list[float | None]) -> float | None:
    vals = sorted(v for v in values if v is not None)
    return vals[len(vals) // 2] if vals else None


def ratio_verdict(ratio: float | None, low: float | None, high: float | None, effect: float,
             higher_is_better: bool) -> tuple[str, str]:
    if ratio is None:
        return "n/a", "no value"
    if low is None or high is None:
        # No interval (no .hlog): demand twice the minimum effect before judging.
        effect *= 2
        up, down = ratio > 1 + effect, ratio < 1 / (1 + effect)
        note = "no CI (no interval histograms)"
    else:
        # The whole interval must clear the minimum effect, not merely exclude 1: with
        # short runs the interval is wide and a point estimate past 10 % is common in A/A.
        # Symmetric on the ratio's log scale: x1.5 worse mirrors x0.67 better.
        up, down = low > 1 + effect, high < 1 / (1 + effect)
        note = ""
    if higher_is_better:
        return ("better" if up else "worse" if down else "same"), note
    return ("worse" if up else "better" if down else "same"), note


@dataclass(frozen=True, kw_only=True)
class Pooled:
    """An operation's counts over every run of one side of a comparison."""

    count: int
    late: int
    errors: int


def late_fraction(stats: Pooled) -> float:
    return stats.late / stats.count if stats.count > 0 else 0.0


def late_budget(pct: float, opts: CompareOptions) -> float:
    """How much more machine lateness the slower-looking run may have before percentile ``pct``
    of it is queueing in the generator: 10 % for p50, 5 % for p95, 1 % for p99."""
    return min(opts.max_late_fraction, 1.0 - pct / 100.0)


def behind_note(b: Pooled, c: Pooled, opts: CompareOptions) -> str:
    """A note when the load generator fell behind its schedule in either run.

    Latency is measured from the intended start, so when many operations start late the
    figures are dominated by queueing in an overloaded generator (measured here: 10-60 %
    late on a 2-core box at load 5 moved A/A p50 from 2.2 to 67 ms).
    """
    b_late, c_late = late_fraction(b), late_fraction(c)
    if max(b_late, c_late) <= opts.max_late_fraction:
        return ""
    return f"generator behind schedule: {b_late:.0%} late in baseline, {c_late:.0%} in candidate"
