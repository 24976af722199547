"""Request distributions: in range, deterministic, skew matches YCSB's theory."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyramp.core._errors import UsageError
from keyramp.keys import DISTRIBUTIONS, Distribution, hottest_share, make_distribution
from keyramp.keys._distributions import SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, fnv_hash64, zeta

DRAWS = 100_000
#: Absolute tolerance on a frequency: > 3 standard errors at 10^5 draws (σ ≤ 0.0016).
TOL = 0.006


def draws(dist: Distribution, n: int, count: int = DRAWS) -> Counter[int]:
    return Counter(dist.next_index(n) for _ in range(count))


def test_registry() -> None:
    assert set(DISTRIBUTIONS) == {"uniform", "zipfian", "latest", "hotspot"}
    for name, cls in DISTRIBUTIONS.items():
        assert cls.name == name


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_deterministic_per_seed(name: str) -> None:
    a, b = make_distribution(name, seed=5), make_distribution(name, seed=5)
    assert [a.next_index(1000 + i) for i in range(200)] == [b.next_index(1000 + i) for i in range(200)]
    c = make_distribution(name, seed=6)
    assert [a.next_index(10**6) for _ in range(50)] != [c.next_index(10**6) for _ in range(50)]


@settings(max_examples=50, deadline=None)
@given(
    name=st.sampled_from(sorted(DISTRIBUTIONS)),
    ns=st.lists(st.integers(min_value=1, max_value=10**7), min_size=1, max_size=20),
)
def test_indexes_in_range_for_any_n_sequence(name: str, ns: list[int]) -> None:
    dist = make_distribution(name, seed=1)
    for n in ns:
        assert 0 <= dist.next_index(n) < n


def test_zero_records_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        make_distribution("uniform").next_index(0)


def test_zeta_matches_ycsb_constants() -> None:
    # YCSB ScrambledZipfianGenerator.ZETAN for 10^10 items at 0.99.
    assert zeta(SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT) == pytest.approx(26.46902820178302, rel=1e-9)
    assert zeta(2, 0.99) == pytest.approx(1 + 0.5**0.99)


@settings(max_examples=30, deadline=None)
@given(a=st.integers(min_value=0, max_value=3_000_000), b=st.integers(min_value=0, max_value=3_000_000))
def test_incremental_zeta_equals_direct(a: int, b: int) -> None:
    lo, hi = sorted((a, b))
    assert zeta(hi, 0.99, start=lo, initial=zeta(lo, 0.99)) == pytest.approx(zeta(hi, 0.99), rel=1e-10)


def test_zipfian_growing_n_keeps_zeta_exact() -> None:
    dist = make_distribution("zipfian", seed=2, params={"scrambled": False})
    for n in range(1, 5001):
        assert dist.next_index(n) < n
    dist.next_index(2_000_000)  # a jump, as after a preload
    assert dist._ranks.zetan == pytest.approx(zeta(2_000_000, 0.99), rel=1e-10)


def test_unscrambled_zipfian_top_items_match_theory() -> None:
    n = 1000
    counts = draws(make_distribution("zipfian", seed=3, params={"scrambled": False}), n)
    z = zeta(n, 0.99)
    assert counts[0] / DRAWS == pytest.approx(1 / z, abs=TOL)  # ≈ 0.134
    assert counts[1] / DRAWS == pytest.approx(0.5**0.99 / z, abs=TOL)
    assert counts.most_common(1)[0][0] == 0


def test_scrambled_zipfian_spreads_hot_items() -> None:
    n = 1000
    counts = draws(make_distribution("zipfian", seed=4), n)
    hot_index, hot_count = counts.most_common(1)[0]
    assert hot_index == fnv_hash64(0) % n  # rank 0, hashed
    assert hot_count / DRAWS == pytest.approx(1 / zeta(SCRAMBLED_ITEM_COUNT, 0.99), abs=TOL)  # ≈ 0.038
    top10 = [i for i, _ in counts.most_common(10)]
    assert max(top10) > n // 4  # not clustered at the first-inserted records


def test_latest_prefers_newest() -> None:
    n = 5000
    counts = draws(make_distribution("latest", seed=5), n)
    assert counts[n - 1] / DRAWS == pytest.approx(1 / zeta(n, 0.99), abs=TOL)
    newest_tenth = sum(c for i, c in counts.items() if i >= n - n // 10)
    assert newest_tenth / DRAWS > 0.7


@pytest.mark.parametrize(("hot_ops", "hot_data"), [(0.8, 0.2), (0.9, 0.01), (0.5, 0.5)])
def test_hotspot_share(hot_ops: float, hot_data: float) -> None:
    n = 10_000
    dist = make_distribution("hotspot", seed=6, params={"hot_ops_fraction": hot_ops, "hot_data_fraction": hot_data})
    counts = draws(dist, n)
    hot = sum(c for i, c in counts.items() if i < n * hot_data)
    assert hot / DRAWS == pytest.approx(hot_ops, abs=TOL)


def test_uniform_deciles() -> None:
    counts = draws(make_distribution("uniform", seed=7), 1000)
    deciles = Counter(i // 100 for i in counts.elements())
    assert all(c / DRAWS == pytest.approx(0.1, abs=TOL) for c in deciles.values())


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("zipfian", {"scrambled": "yes"}, "scrambled must be true or false"),
        ("zipfian", {"constant": 1.0}, r"constant must be in \(0, 1\)"),
        ("latest", {"zipf": 0.9}, "unknown distribution param 'zipf'"),
        ("hotspot", {"hot_ops_fraction": 1.5}, "hot_ops_fraction must be in"),
        ("hotspot", {"hot_data_fraction": 0}, "hot_data_fraction must be in"),
        ("gaussian", {}, "unknown distribution 'gaussian'"),
    ],
)
def test_bad_params(name: str, params: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        make_distribution(name, params=params)


def test_hottest_share() -> None:
    assert hottest_share("uniform", 100) == pytest.approx(0.01)
    assert hottest_share("zipfian", 1000, {"scrambled": False}) == pytest.approx(1 / zeta(1000, 0.99))
    assert hottest_share("hotspot", 1000) == pytest.approx(0.8 / 200)
    assert 0.038 < hottest_share("zipfian", 1000) < 0.04
