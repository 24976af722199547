"""Calibration of the tablet model against Google's published figures (docs/keyspace-model.md)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from keyramp._errors import UsageError
from keyramp.keyspace import params_for, simulate, simulate_collection, synthetic_stream

SERVERLESS = params_for("firestore")


def ramp_500_50_5(t: float) -> float:
    return 500.0 * 1.5 ** math.floor(t / 300.0)


def constant(rate: float):
    return lambda t: rate


def test_500_50_5_with_uniform_keys_reaches_740k_without_throttling() -> None:
    pos, t = synthetic_stream("uniform", duration_s=5700, samples_per_s=200)
    tl = simulate(pos, t, rate_fn=ramp_500_50_5, params=SERVERLESS, duration_s=5700)
    at_90_min = tl.achieved[tl.at(5400 + 1)]
    assert at_90_min == pytest.approx(738_945, rel=0.10)
    assert tl.throttled.max() < 0.01
    assert tl.tablets[-1] > 1000  # the range split as the ramp grew


def test_faster_ramp_than_500_50_5_is_throttled() -> None:
    # The same start, tripling every 5 minutes: splits cannot keep up at each step.
    pos, t = synthetic_stream("uniform", duration_s=3000, samples_per_s=200)
    tl = simulate(pos, t, rate_fn=lambda s: 500.0 * 3.0 ** math.floor(s / 300.0), params=SERVERLESS)
    assert tl.throttled.max() > 0.2
    assert (tl.throttled > 0.01).sum() >= 5


def test_sequential_keys_stay_on_the_last_tablet_and_throttle_forever() -> None:
    pos, t = synthetic_stream("sequential", duration_s=3600, samples_per_s=50)
    tl = simulate(pos, t, rate_fn=constant(2000.0), params=SERVERLESS)
    late = tl.t > 600
    assert tl.max_share[late].min() > 0.95
    assert tl.hot_is_last[late].all()
    assert tl.tablets[-1] > 10  # it keeps splitting, to no avail
    assert tl.throttled[late].min() == pytest.approx(0.75, abs=0.02)  # 500 of 2,000 served
    assert tl.throttled[-1] > 0.7


@pytest.mark.parametrize("pattern", ["hashed_prefix", "uniform"])
def test_spread_keys_split_and_throttling_ends(pattern: str) -> None:
    pos, t = synthetic_stream(pattern, duration_s=3600, samples_per_s=50)
    tl = simulate(pos, t, rate_fn=constant(2000.0), params=SERVERLESS)
    assert tl.throttled[0] > 0.5  # one tablet at first
    recovered = tl.t[np.flatnonzero(tl.throttled < 0.001)[0]]
    assert recovered < 900
    assert tl.throttled[tl.t > recovered].max() < 0.01
    assert tl.max_share[-1] < 0.3


def test_random_samples_do_not_fake_hotspots() -> None:
    # Unstratified uniform sampling: noise must not read as a lasting hotspot.
    pos, t = synthetic_stream("uniform", duration_s=3600, samples_per_s=100, stratified=False)
    tl = simulate(pos, t, rate_fn=constant(2000.0), params=SERVERLESS)
    assert tl.throttled[tl.t > 1200].max() < 0.02


def test_jump_to_10k_on_a_new_range_throttles_then_recovers() -> None:
    pos, t = synthetic_stream("uniform", duration_s=3600, samples_per_s=50)
    tl = simulate(pos, t, rate_fn=lambda s: 0.0 if s < 60 else 10_000.0, params=SERVERLESS)
    first_minutes = (tl.t > 60) & (tl.t <= 300)
    assert tl.throttled[first_minutes].min() > 0.5
    assert tl.added_latency_ms[first_minutes].min() > 50
    assert tl.throttled[tl.t > 1200].max() < 0.01
    assert tl.achieved[-1] == pytest.approx(10_000.0)


def test_monotonic_indexed_field_caps_a_collection_near_500_writes_per_s() -> None:
    docs, t = synthetic_stream("uniform", duration_s=3600, samples_per_s=50)
    index, _ = synthetic_stream("sequential", duration_s=3600, samples_per_s=50)
    out = simulate_collection(docs, t, index_positions={"created": index}, rate_fn=ramp_500_50_5, params=SERVERLESS)
    assert out["modelled"] is True
    late = out["ranges"]["documents"].t > 1800
    assert out["achieved"][late].max() == pytest.approx(500.0, rel=0.1)
    assert out["ranges"]["documents"].throttled[late].max() < 0.01  # the documents alone scale
    # Exempting the field from indexing lifts the cap.
    alone = simulate(docs, t, rate_fn=ramp_500_50_5, params=SERVERLESS)
    assert alone.achieved[-1] > 10 * 500


def test_single_hot_key_cannot_split() -> None:
    t = np.linspace(0, 1800, 50_000)
    tl = simulate(np.full(len(t), 0.42), t, rate_fn=constant(2000.0), params=SERVERLESS)
    assert tl.throttled[-1] > 0.7 and tl.tablets[-1] <= 2


def test_time_scale_and_observed_rate() -> None:
    # 60 wall seconds at x100 = 100 schedule minutes; no rate_fn: rate from the samples.
    pos, t = synthetic_stream("sequential", duration_s=60, samples_per_s=1000)
    tl = simulate(pos, t, time_scale=100.0, params=SERVERLESS, sample_rate=0.5)
    assert tl.t[-1] == pytest.approx(6000, rel=0.01)
    assert np.median(tl.offered) == pytest.approx(2000.0, rel=0.05)  # 1,000 samples/s at 50 %
    assert tl.throttled[-1] > 0.7


def test_bigtable_node_caps_total_throughput() -> None:
    pos, t = synthetic_stream("uniform", duration_s=1800, samples_per_s=50)
    tl = simulate(pos, t, rate_fn=constant(20_000.0), params=params_for("bigtable"))
    assert tl.achieved[-1] == pytest.approx(10_000.0)
    more = replace(params_for("bigtable"), total_capacity=30_000.0)
    assert simulate(pos, t, rate_fn=constant(20_000.0), params=more).throttled[-1] < 0.01


def test_bad_input() -> None:
    with pytest.raises(UsageError, match="no tablet model"):
        params_for("mysql")
    with pytest.raises(UsageError, match="unknown synthetic pattern"):
        synthetic_stream("zigzag", duration_s=1, samples_per_s=1)
    with pytest.raises(UsageError, match="positive"):
        simulate(np.zeros(1), np.zeros(1), params=SERVERLESS, time_scale=0)
