from __future__ import annotations

import math

import numpy as np
from hdrh.histogram import HdrHistogram

from keyramp.compare._stats import (
    bootstrap_replicates,
    interval_matrix,
    percentiles_from_counts,
    ratio_ci,
    two_proportion,
)


def _hist(values: np.ndarray, length_ms: float = 1000.0) -> HdrHistogram:
    h = HdrHistogram(1, 60_000_000, 3)
    h.set_start_time_stamp(0)
    h.set_end_time_stamp(length_ms)
    for v in values.astype(int).tolist():
        h.record_value(max(v, 1))
    return h


def test_percentiles_match_hdrhistogram_exactly() -> None:
    rng = np.random.default_rng(1)
    hists = [_hist(rng.lognormal(math.log(2000), 0.8, 300)) for _ in range(6)]
    matrix = interval_matrix(hists)
    merged = HdrHistogram(1, 60_000_000, 3)
    for h in hists:
        merged.add(h)
    pcts = [0.0001, 50, 90, 99, 99.9, 100]
    ours = percentiles_from_counts(matrix.values_us, matrix.counts.sum(axis=0), pcts)[0]
    assert ours.tolist() == [float(merged.get_value_at_percentile(p)) for p in pcts]
    assert matrix.total == merged.get_total_count() == 1800


def test_blocking_keeps_every_count() -> None:
    rng = np.random.default_rng(2)
    hists = [_hist(rng.lognormal(7, 0.3, 20)) for _ in range(25)]
    blocked = interval_matrix(hists, max_blocks=4)
    assert blocked.n == 4 and blocked.total == 500


def test_bootstrap_ci_covers_identical_and_excludes_doubled() -> None:
    rng = np.random.default_rng(3)
    a = interval_matrix([_hist(rng.lognormal(math.log(1000), 0.5, 200)) for _ in range(20)])
    b = interval_matrix([_hist(rng.lognormal(math.log(1000), 0.5, 200)) for _ in range(20)])
    c = interval_matrix([_hist(rng.lognormal(math.log(2000), 0.5, 200)) for _ in range(20)])
    ra = bootstrap_replicates(a, [50, 99], n=500, rng=np.random.default_rng(0))
    rb = bootstrap_replicates(b, [50, 99], n=500, rng=np.random.default_rng(1))
    rc = bootstrap_replicates(c, [50, 99], n=500, rng=np.random.default_rng(2))
    low, high = ratio_ci(rb[0][:, 0], ra[0][:, 0], 0.95)
    assert low < 1 < high
    low, high = ratio_ci(rc[0][:, 0], ra[0][:, 0], 0.95)
    assert 1.8 < low < high < 2.2
    assert np.allclose(ra[1], 200, atol=1e-9)  # every 1 s interval has 200 operations: ops/s is exact


def test_bootstrap_is_deterministic_per_seed() -> None:
    rng = np.random.default_rng(4)
    m = interval_matrix([_hist(rng.lognormal(7, 0.5, 50)) for _ in range(8)])
    one = bootstrap_replicates(m, [99], n=200, rng=np.random.default_rng(9))[0]
    two = bootstrap_replicates(m, [99], n=200, rng=np.random.default_rng(9))[0]
    assert np.array_equal(one, two)


def test_two_proportion() -> None:
    z, p, low, high = two_proportion(0, 1000, 0, 1000)
    assert (z, p) == (0.0, 1.0)
    z, p, low, high = two_proportion(10, 10000, 60, 10000)
    assert z > 5 and p < 1e-6 and 0 < low < 0.005 < high
    z, p, _, _ = two_proportion(10, 1000, 12, 1000)
    assert p > 0.5


def test_short_final_interval_weighs_by_length() -> None:
    rng = np.random.default_rng(5)
    full = [_hist(rng.lognormal(7, 0.3, 100)) for _ in range(6)]
    m = interval_matrix([*full, _hist(np.array([]), length_ms=50.0)])
    assert m.lengths_s.tolist() == [1.0] * 6 + [0.05]
    _, rate = bootstrap_replicates(m, [50], n=300, rng=np.random.default_rng(0))
    # 600 ops in 6.05 s; a naive mean of per-interval counts would say ~86 and swing widely
    assert 90 < rate.min() <= rate.max() <= 100
