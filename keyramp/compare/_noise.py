"""Between-run noise, measured from a baseline that is a set of runs.

A bootstrap over one run's 1-second intervals sees only the noise *within* that run. When
the baseline is several runs of one build, the spread of their values is the noise
*between* runs (another job on the machine, a different emulator warm-up): the ratio's
interval is widened by it, so a metric that moves 25 % between identical runs (closed-model
throughput on a shared 2-core box) needs more than 25 % to be judged. With one baseline run
that spread is unknown and the documented minimum effects stand in for it (docs/ci.md).

The widening is a prediction interval on the log scale: a new run of the same build lies
within ``t(k-1) · s · sqrt(1 + 1/k)`` of the set's mean log value (``s``: the set's standard
deviation of log values, ``k`` runs, Student's t for the few degrees of freedom), added in
quadrature to each side of the bootstrap interval. ``s`` includes the set's within-run
noise, which the bootstrap already counts: conservative, as a gate should be.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

__all__ = ["between_run_spread", "t_quantile", "widen"]


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile: exact for 1 and 2 degrees of freedom, else the Cornish-Fisher
    expansion (Abramowitz & Stegun 26.7.5; within 0.5 % of the tables from 3 df on)."""
    if not 0.0 < p < 1.0 or df < 1:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df >= 1, got p={p}, df={df}")
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = NormalDist().inv_cdf(p)
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4


def between_run_spread(values: Sequence[float | None], confidence: float) -> tuple[float, float] | None:
    """(standard deviation of the runs' log values, half-width of the log prediction interval
    for one more run) from a baseline set's values of one metric; None with fewer than two
    positive values."""
    logs = [math.log(v) for v in values if v is not None and v > 0]
    k = len(logs)
    if k < 2:
        return None
    mean = sum(logs) / k
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (k - 1))
    return sd, t_quantile(0.5 + confidence / 2, k - 1) * sd * math.sqrt(1 + 1 / k)


def widen(ratio: float, low: float | None, high: float | None, extra: float) -> tuple[float, float]:
    """The ratio's interval with ``extra`` (log scale) added in quadrature to each side; without
    a bootstrap interval, the between-run interval alone."""
    centre = math.log(ratio)
    below = centre - math.log(low) if low else 0.0
    above = math.log(high) - centre if high else 0.0
    return math.exp(centre - math.hypot(max(below, 0.0), extra)), math.exp(centre + math.hypot(max(above, 0.0), extra))
