from __future__ import annotations

import numpy as np
import pytest

from keyramp.core._types import key_sort_text
from keyramp.keyspace import hotspot_metrics, key_positions, summarize_cell

N = 20_000


def _times(n: int = N, duration: float = 60.0) -> np.ndarray:
    return np.linspace(0.0, duration, n, endpoint=False)


def _streams() -> dict[str, list[str]]:
    rng = np.random.default_rng(7)
    ts_ms = 1_700_000_000_000 + (_times() * 1000).astype(np.int64)
    user = rng.integers(0, 1_000_000, N)
    shard = rng.integers(0, 256, N)
    return {
        "sequential": [key_sort_text(i + 1) for i in range(N)],
        # Several writes share a millisecond, the suffix is random: still append-mostly.
        "timestamp_first": [f"{t}#user{u:07d}" for t, u in zip(ts_ms, user, strict=True)],
        "random": [f"{x:032x}" for x in rng.integers(0, 2**63, N)],
        "hashed_prefix": [f"{s:02x}#{key_sort_text(i)}" for i, s in enumerate(shard)],
        "reverse_timestamp": [key_sort_text(9_223_372_036_854_775_807 - int(t)) for t in ts_ms],
    }


@pytest.fixture(scope="module")
def metrics() -> dict[str, dict]:
    out = {}
    for name, keys in _streams().items():
        kp = key_positions(keys)
        out[name] = hotspot_metrics(kp.pos, _times(), distinct=kp.distinct, positions=kp)
    return out


@pytest.mark.parametrize("name", ["sequential", "timestamp_first"])
def test_monotonic_streams_are_a_moving_hotspot(metrics: dict[str, dict], name: str) -> None:
    m = metrics[name]
    assert m["hottest_1pct_share"] > 0.9
    assert m["moving_hotspot"] is True
    assert m["append_fraction"] > 0.5 and m["position_time_corr"] > 0.99


def test_reverse_timestamps_prepend(metrics: dict[str, dict]) -> None:
    m = metrics["reverse_timestamp"]
    assert m["prepend_fraction"] > 0.9 and m["append_fraction"] < 0.01
    assert m["moving_hotspot"] is True and m["hottest_1pct_share"] > 0.9


@pytest.mark.parametrize("name", ["random", "hashed_prefix"])
def test_spread_streams_are_near_uniform(metrics: dict[str, dict], name: str) -> None:
    m = metrics[name]
    assert m["hottest_1pct_share"] < 0.15  # 1 % plus sampling noise at 200 samples per bin
    assert m["moving_hotspot"] is False
    assert m["append_fraction"] < 0.05 and abs(m["position_time_corr"]) < 0.2
    assert m["entropy_norm"] > 0.95 and m["gini"] < 0.3


def test_static_hot_key_is_caught_by_the_overall_measures() -> None:
    rng = np.random.default_rng(1)
    keys = [f"{x:016x}" for x in rng.integers(0, 2**62, N)]
    keys[::2] = ["7fffffffffffffff"] * (N // 2)  # half the ops on one key
    kp = key_positions(keys)
    m = hotspot_metrics(kp.pos, _times(), distinct=kp.distinct, positions=kp)
    assert m["hottest_bucket_share_overall"] > 0.5 and m["gini"] > 0.4
    assert m["moving_hotspot"] is False  # one hot key is static, not appending


def test_summarize_cell_labels_model_figures() -> None:
    keys = _streams()["sequential"]
    ops = ["insert"] * N
    out = summarize_cell(keys, _times(), ops, backend="datastore", time_scale=100.0, rate_fn=lambda t: 2000.0)
    assert out.model is not None and out.model.modelled is True
    assert out.moving_hotspot is True
    assert out.model.max_throttled_fraction is not None and out.model.max_throttled_fraction > 0.3
    assert summarize_cell(keys, _times(), ops, backend="nosuch").model is None
    empty = summarize_cell([], [], [], backend="datastore")
    assert empty.samples == 0 and empty.empty


def test_strictly_alternating_ops_do_not_hide_a_hot_key() -> None:
    # Every other op reads one hot key, the others append: an even/odd split put all hot reads
    # in one half and all appends in the other, so each half's window scored 0 on the other half.
    keys = [key_sort_text(i + 1) if i % 2 == 0 else key_sort_text(7) for i in range(N)]
    kp = key_positions(keys)
    m = hotspot_metrics(kp.pos, _times(), distinct=kp.distinct, positions=kp)
    assert m["hottest_1pct_share"] > 0.45


@pytest.mark.parametrize(("shards", "expected"), [(1, 1), (4, 4), (10, 10)])
def test_append_points_count_shards(shards: int, expected: int) -> None:
    keys = [f"shard{i % shards:02d}#{i:010d}" for i in range(N)]
    kp = key_positions(keys)
    assert hotspot_metrics(kp.pos, _times(), distinct=kp.distinct, positions=kp)["append_points"] == expected


def test_append_points_of_prepends_and_spread_keys(metrics: dict[str, dict]) -> None:
    assert metrics["sequential"]["append_points"] == 1
    assert metrics["reverse_timestamp"]["append_points"] == 1  # one prepend point
    assert metrics["random"]["append_points"] is None  # spread: no few points to count
