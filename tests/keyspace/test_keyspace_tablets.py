"""The tablet simulator's mechanics (keyspace/_tablets.py).

These are DESIGN-BEHAVIOUR checks: each follows from how the model is built (a tablet
throttles above its capacity, splits at quantiles of its recent samples after a sustained
load, a single key cannot split), with the parameters stated in the test. They show the
mechanics work; they are not evidence that the parameters are right. Checks against
figures the model was not given are in tests/forecast/test_validation.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from keyramp.core._errors import UsageError
from keyramp.keyspace import TabletParams, params_for, simulate, synthetic_stream

#: Stated for these tests only (not the forecast's defaults).
P = TabletParams(capacity=500.0, split_threshold=300.0, split_delay_s=120.0)


def constant(rate: float):
    return lambda t: rate


def test_appends_stay_on_the_last_tablet_and_serve_one_tablet_capacity() -> None:
    pos, t = synthetic_stream("sequential", duration_s=3600, samples_per_s=50)
    tl = simulate(pos, t, rate_fn=constant(2000.0), params=P)
    late = tl.t > 600
    assert tl.max_share[late].min() > 0.95 and tl.hot_is_last[late].all()
    assert tl.tablets[-1] > 10  # it keeps splitting, to no avail
    assert tl.achieved[late].max() == pytest.approx(P.capacity, rel=0.02)


@pytest.mark.parametrize("pattern", ["shards", "uniform"])
def test_spread_keys_split_and_throttling_ends(pattern: str) -> None:
    pos, t = synthetic_stream(pattern, duration_s=3600, samples_per_s=50)
    tl = simulate(pos, t, rate_fn=constant(2000.0), params=P)
    assert tl.throttled[0] > 0.5  # one tablet at first
    recovered = tl.t[np.flatnonzero(tl.throttled < 0.001)[0]]
    assert recovered < 900
    assert tl.throttled[tl.t > recovered].max() < 0.01
    assert tl.max_share[-1] < 0.3


def test_more_pieces_per_split_recover_sooner() -> None:
    pos, t = synthetic_stream("uniform", duration_s=3600, samples_per_s=50)
    two = simulate(pos, t, rate_fn=constant(10_000.0), params=P)
    four = simulate(pos, t, rate_fn=constant(10_000.0), params=TabletParams(
        capacity=500.0, split_threshold=300.0, split_delay_s=120.0, split_fanout=4))

    def recovered(tl) -> float:
        return float(tl.t[np.flatnonzero(tl.throttled < 0.01)[0]])

    assert recovered(four) < recovered(two)


def test_random_samples_do_not_fake_hotspots() -> None:
    # Unstratified uniform sampling: noise must not read as a lasting hotspot.
    pos, t = synthetic_stream("uniform", duration_s=3600, samples_per_s=100, stratified=False)
    tl = simulate(pos, t, rate_fn=constant(2000.0), params=P)
    assert tl.throttled[tl.t > 1200].max() < 0.02


def test_a_jump_on_a_new_range_throttles_then_recovers_with_queueing_first() -> None:
    pos, t = synthetic_stream("uniform", duration_s=3600, samples_per_s=50)
    tl = simulate(pos, t, rate_fn=lambda s: 0.0 if s < 60 else 10_000.0, params=P)
    first_minutes = (tl.t > 60) & (tl.t <= 300)
    assert tl.throttled[first_minutes].min() > 0.5
    assert tl.added_latency_ms[first_minutes].min() > 50 and tl.added_p99_ms[first_minutes].min() > 50
    assert tl.throttled[tl.t > 1200].max() < 0.01
    assert tl.added_p99_ms[-1] < tl.added_p99_ms[first_minutes].min()


def test_single_hot_key_cannot_split() -> None:
    t = np.linspace(0, 1800, 50_000)
    tl = simulate(np.full(len(t), 0.42), t, rate_fn=constant(2000.0), params=P)
    assert tl.throttled[-1] > 0.7 and tl.tablets[-1] <= 2


def test_weights_move_load_to_the_costly_samples() -> None:
    # Half the samples on each half of the range; the right half's accesses cost 3x.
    n = 20_000
    t = np.linspace(0, 600, n)
    pos = np.where(np.arange(n) % 2 == 0, 0.25, 0.75) + np.random.default_rng(1).random(n) * 0.01
    plain = simulate(pos, t, rate_fn=constant(400.0), params=P)
    weighted = simulate(pos, t, rate_fn=constant(400.0), params=P, weights=np.where(pos > 0.5, 3.0, 1.0))
    assert plain.max_share[-1] == pytest.approx(0.5, abs=0.05)
    assert weighted.max_share[-1] == pytest.approx(0.75, abs=0.05)


def test_time_scale_and_observed_rate() -> None:
    # 60 wall seconds at x100 = 100 schedule minutes; no rate_fn: rate from the samples.
    pos, t = synthetic_stream("sequential", duration_s=60, samples_per_s=1000)
    tl = simulate(pos, t, time_scale=100.0, params=P, sample_rate=0.5)
    assert tl.t[-1] == pytest.approx(6000, rel=0.01)
    assert np.median(tl.offered) == pytest.approx(2000.0, rel=0.05)  # 1,000 samples/s at 50 %
    assert tl.throttled[-1] > 0.7


def test_params_for_takes_the_middle_of_the_forecast_ranges() -> None:
    from keyramp.backends import store_params

    for backend in ("firestore", "bigtable"):
        p, box = params_for(backend), store_params(backend)
        cap = box.ranges["tablet_ops_per_s" if backend == "firestore" else "node_write_rows_per_s"].mid
        assert p.capacity == cap and p.split_delay_s == box.ranges["split_delay_s"].mid
        assert p.split_threshold == pytest.approx(box.ranges["split_threshold_frac"].mid * cap)
    assert params_for("bigtable").total_capacity == params_for("bigtable").capacity  # one node
    assert math.isclose(params_for("firestore", capacity=7.0).capacity, 7.0)


def test_bad_input() -> None:
    with pytest.raises(UsageError, match="no tablet model"):
        params_for("mysql")
    with pytest.raises(UsageError, match="unknown synthetic pattern"):
        synthetic_stream("zigzag", duration_s=1, samples_per_s=1)
    with pytest.raises(UsageError, match="positive"):
        simulate(np.zeros(1), np.zeros(1), params=P, time_scale=0)


def test_the_block_length_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine computes steps in blocks that stop at a split; how long the blocks are is a
    matter of speed only: two-step blocks give the very same timeline."""
    import keyramp.keyspace._tablets as tablets

    rng = np.random.default_rng(4)
    n = 2500
    t = np.sort(rng.random(n) * 4.0)
    t = np.where(t > 2.0, t + 0.8, t)  # a stall: the noise guard's fallback is exercised
    pos = np.concatenate([np.linspace(0.6, 1.0, n // 2, endpoint=False), rng.random(n - n // 2)])[rng.permutation(n)]

    def run() -> np.ndarray:
        tl = simulate(pos, t, rate_fn=lambda s: 2000.0 + 3.0 * s, time_scale=1800.0 / float(t[-1]),
                      params=params_for("firestore"), duration_s=1800.0, weights=rng.choice([1.0, 2.0], n))
        assert tl.throttled.max() > 0 and tl.tablets[-1] > 4  # it throttles and splits: blocks to cut
        return np.concatenate([tl.throttled, tl.tablets, tl.added_p99_ms, tl.max_load])

    rng_state = rng.bit_generator.state
    usual = run()
    monkeypatch.setattr(tablets, "MAX_BLOCK", 2)
    monkeypatch.setattr(tablets, "block_size", lambda params, step: 2)
    rng.bit_generator.state = rng_state
    assert np.array_equal(run(), usual)
