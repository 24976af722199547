from __future__ import annotations

import random

from keyramp._hdr import latency_summary_ms, new_histogram, percentiles_us, reset


def test_vectorised_percentiles_equal_the_library() -> None:
    rng = random.Random(3)
    hist = new_histogram()
    for _ in range(20_000):
        hist.record_value(int(rng.lognormvariate(7, 1.3)) + 1)
    pcts = [0, 1, 50, 90, 99, 99.9, 100]
    assert percentiles_us(hist, pcts) == [hist.get_value_at_percentile(p) for p in pcts]
    summary = latency_summary_ms(hist)
    assert abs(summary["mean"] - hist.get_mean_value() / 1000) < 1e-3
    assert summary["max"] == hist.get_max_value() / 1000


def test_reset_clears_everything() -> None:
    hist = new_histogram()
    hist.record_value(1234)
    reset(hist)
    assert hist.get_total_count() == 0
    assert percentiles_us(hist, [50]) == [0]
    hist.record_value(7)
    assert hist.get_value_at_percentile(50) == 7
    assert hist.get_min_value() == 7
