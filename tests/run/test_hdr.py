from __future__ import annotations

import random

from keyramp.run._hdr import latency_summary_ms, new_histogram, percentiles_us, reset


def test_vectorised_percentiles_equal_the_library() -> None:
    rng = random.Random(3)
    hist = new_histogram()
    for _ in range(20_000):
        hist.record_value(int(rng.lognormvariate(7, 1.3)) + 1)
    pcts = [0, 1, 50, 90, 99, 99.9, 100]
    assert percentiles_us(hist, pcts) == [hist.get_value_at_percentile(p) for p in pcts]
    summary = latency_summary_ms(hist).to_json()
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


def test_fast_record_matches_the_library_bucket_for_bucket() -> None:
    import numpy as np

    from keyramp.run._hdr import HIGHEST_US, counts, record

    lib, fast = new_histogram(), new_histogram()
    # The inlined index arithmetic assumes this layout: fail loudly if it ever changes.
    assert (lib.sub_bucket_mask, lib.unit_magnitude, lib.sub_bucket_half_count_magnitude) == (2047, 0, 10)
    rng = random.Random(5)
    edges = [1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 1 << 20, HIGHEST_US - 1, HIGHEST_US]
    values = edges + [min(HIGHEST_US, int(rng.lognormvariate(7, 3)) + 1) for _ in range(50_000)]
    for v in values:
        lib.record_value(v)
        record(fast, v)
    assert np.array_equal(counts(lib), counts(fast))
    assert (fast.get_total_count(), fast.get_min_value(), fast.get_max_value()) == (
        lib.get_total_count(), lib.get_min_value(), lib.get_max_value())
    assert percentiles_us(fast, [50, 99, 100]) == percentiles_us(lib, [50, 99, 100])
    # counted straight into the counters, then settled: the same histogram again
    from keyramp.run._hdr import counts_index, settle

    counted = new_histogram()
    for v in values:
        counted.counts[counts_index(v)] += 1
    settle(counted)
    assert np.array_equal(counts(lib), counts(counted))
    assert (counted.get_total_count(), counted.get_min_value(), counted.get_max_value()) == (
        lib.get_total_count(), lib.get_min_value(), lib.get_max_value())
