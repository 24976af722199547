"""``CompareOptions``: the knobs of a comparison, apart from the statistics (``_judge``) so that
``keyramp --help`` can show their defaults without loading numpy. What each one means for a
verdict: ``keyramp.compare._judge``'s docstring."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["INCONCLUSIVE_POLICIES", "CompareOptions"]

#: What an inconclusive gated metric does to ``compare``'s exit code (``--inconclusive``): its own
#: code, 3 (the default: a CI job can retry on a quieter machine), or pass (0) or fail (1).
INCONCLUSIVE_POLICIES = ("3", "pass", "fail")


@dataclass(frozen=True, kw_only=True)
class CompareOptions:
    #: p50: the smallest change that counts (the whole CI must clear it). Measured on a
    #: shared 2-core box (docs/ci.md): identical runs' p50 differ by up to x1.3 even when
    #: the generator kept up; 0.10 flagged 8 % of A/A comparisons, 0.25 flagged 2.4 %.
    min_effect_latency: float = 0.25
    #: p95/p99/p99.9: tails move far more between runs on a shared machine than the median
    min_effect_tail: float = 0.50
    min_effect_throughput: float = 0.05
    alpha: float = 0.01
    min_error_diff: float = 0.001
    confidence: float = 0.95
    bootstrap: int = 1000
    seed: int = 0
    min_tail: int = 5
    #: above this share of late operations (started > 10 ms after their intended time)
    #: latency rows carry a warning: the machine, not the store, may be what was measured.
    max_late_fraction: float = 0.10
    #: A verdict is n/a ("inconclusive") when the machine explains it (module docstring).
    inconclusive_when_behind: bool = True
    #: users busier than this share (Little's law: ops/s x mean service time / users)
    #: mean the store, not the machine, made operations late: the verdict stands.
    busy_users_fraction: float = 0.8
