"""Key strategies: deterministic, unique, honest traits, valid keys per backend."""

from __future__ import annotations

import re
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyramp.backends import store_names
from keyramp.core._errors import UnsupportedOperation, UsageError
from keyramp.core._types import key_sort_text
from keyramp.keys import STRATEGIES, KeyStrategy, key_problem, make_strategy
from keyramp.keys._strategies import LONG_MAX

N = 100_000
KEYED = [name for name, cls in STRATEGIES.items() if not cls.server_allocated]

EXPECTED = {
    "sequential", "prefixed_sequential", "padded_sequential", "timestamp_only", "timestamp_first",
    "random", "server_allocated", "hashed_prefix", "reversed_id", "reverse_timestamp",
    "field_promotion", "reverse_domain", "domain", "sharded", "time_bucket_shard",
}


@pytest.fixture(scope="module")
def keys_by_strategy() -> dict[str, list[Any]]:
    """The first ``N`` keys of every keyed strategy (default params, seed 7)."""
    out = {}
    for name in KEYED:
        s = make_strategy(name, seed=7)
        out[name] = [s.key(i) for i in range(N)]
    return out


def insert_spread(keys: list[Any], window: float = 0.1) -> float:
    """Kolmogorov–Smirnov distance from uniform of where the *latest* inserts land in the key
    space: the byte-order rank (0..1) of the last ``window`` of inserts among all keys.

    Sequential keys put every new key at the end (distance ≈ 0.9); spread keys land all
    over the range (distance ≈ 0). That is what decides whether one tablet takes all writes.
    """
    texts = [key_sort_text(k) for k in keys]
    order = sorted(range(len(texts)), key=texts.__getitem__)
    rank = np.empty(len(texts))
    rank[order] = np.arange(len(texts)) / len(texts)
    tail = np.sort(rank[-int(len(texts) * window):])
    m = len(tail)
    emp_hi = np.arange(1, m + 1) / m
    emp_lo = np.arange(0, m) / m
    return float(max(np.max(emp_hi - tail), np.max(tail - emp_lo)))


def test_registry_has_every_strategy_named_by_the_brief() -> None:
    assert set(STRATEGIES) == EXPECTED
    for name, cls in STRATEGIES.items():
        assert cls.name == name and issubclass(cls, KeyStrategy)


@pytest.mark.parametrize("name", KEYED)
def test_deterministic_per_seed(name: str) -> None:
    a, b = make_strategy(name, seed=3), make_strategy(name, seed=3)
    indexes = [0, 1, 2, 17, 999, 123_456, 10**9]
    assert [a.key(i) for i in indexes] == [b.key(i) for i in indexes]


@pytest.mark.parametrize("name", ["random", "hashed_prefix"])
def test_seed_changes_scattered_keys(name: str) -> None:
    a, b = make_strategy(name, seed=1), make_strategy(name, seed=2)
    assert [a.key(i) for i in range(50)] != [b.key(i) for i in range(50)]


@pytest.mark.parametrize("name", KEYED)
def test_unique_over_1e5_indexes(name: str, keys_by_strategy: dict[str, list[Any]]) -> None:
    keys = keys_by_strategy[name]
    assert len(set(keys)) == N


def insert_locality(keys: list[Any]) -> float:
    """How far apart in the key range consecutive inserts land: the median distance between the
    final ranks of insert i and insert i + 1, as a share of the range. One place taking every insert
    (``1, 2, 3``, ``Customer1, Customer2 …``, reverse timestamps) is ≈ 0; round-robin points or
    hashed keys jump (100 machines: 0.01; random: ≈ 0.33)."""
    texts = [key_sort_text(k) for k in keys]
    order = sorted(range(len(texts)), key=texts.__getitem__)
    rank = np.empty(len(texts))
    rank[order] = np.arange(len(texts))
    return float(np.median(np.abs(np.diff(rank)))) / len(texts)


@pytest.mark.parametrize("name", KEYED)
def test_monotonic_trait_is_honest(name: str, keys_by_strategy: dict[str, list[Any]]) -> None:
    """The one definition (``KeyTraits.monotonic``): every new key lands next to the previous one."""
    assert (insert_locality(keys_by_strategy[name]) < 0.001) == STRATEGIES[name].traits.monotonic


def test_locality_separates_one_place_from_many(keys_by_strategy: dict[str, list[Any]]) -> None:
    assert insert_locality(keys_by_strategy["sequential"]) == 1 / N
    assert insert_locality(keys_by_strategy["prefixed_sequential"]) <= 2 / N  # Customer10 lands after Customer1
    assert insert_locality(keys_by_strategy["field_promotion"]) > 0.005  # 100 machines in turn
    assert insert_locality(keys_by_strategy["random"]) > 0.2


@pytest.mark.parametrize("name", KEYED)
def test_spreads_trait_is_honest(name: str, keys_by_strategy: dict[str, list[Any]]) -> None:
    distance = insert_spread(keys_by_strategy[name])
    if STRATEGIES[name].traits.spreads:
        assert distance < 0.2, f"{name}: latest inserts cluster (KS {distance:.3f})"
    else:
        assert distance > 0.3, f"{name}: latest inserts are spread (KS {distance:.3f})"


def test_spread_metric_separates_extremes(keys_by_strategy: dict[str, list[Any]]) -> None:
    assert insert_spread(keys_by_strategy["sequential"]) > 0.85
    assert insert_spread(keys_by_strategy["random"]) < 0.03
    assert insert_spread(keys_by_strategy["hashed_prefix"]) < 0.03


@settings(max_examples=60, deadline=None)
@given(index=st.integers(min_value=0, max_value=10**12), seed=st.integers(min_value=0, max_value=2**63))
def test_keys_valid_for_every_claimed_backend(index: int, seed: int) -> None:
    for name in KEYED:
        strategy = make_strategy(name, seed=seed)
        key = strategy.key(index)
        for backend in strategy.backends:
            assert key_problem(key, backend) is None, (name, backend, key)


@settings(max_examples=40, deadline=None)
@given(i=st.integers(min_value=0, max_value=10**9), j=st.integers(min_value=0, max_value=10**9))
def test_distinct_indexes_give_distinct_keys(i: int, j: int) -> None:
    for name in KEYED:
        s = make_strategy(name, seed=11)
        assert (s.key(i) == s.key(j)) == (i == j), name


def test_key_shapes() -> None:
    assert make_strategy("sequential").key(0) == 1
    assert make_strategy("prefixed_sequential", params={"prefix": "Product "}).key(4) == "Product 5"
    assert make_strategy("padded_sequential").key(0) == "0000000001"
    assert make_strategy("reversed_id").key(1233) == "4321000000"
    ts = make_strategy("timestamp_only").key(5)
    assert re.fullmatch(r"\d{13}", ts)
    rev = make_strategy("reverse_timestamp").key(5)
    head, tail = rev.split("#")
    assert len(head) == 19 and int(head) == LONG_MAX - int(ts) and tail == "0000000005"
    assert re.fullmatch(r"\d{13}#0000000005", make_strategy("timestamp_first").key(5))
    assert re.fullmatch(r"machine_0042#\d{13}", make_strategy("field_promotion").key(42))
    assert re.fullmatch(r"[0-9a-f]{4}#user00000124", make_strategy("hashed_prefix").key(123))
    assert uuid.UUID(make_strategy("random").key(9)).version == 4
    assert re.fullmatch(r"shard07#0000000017", make_strategy("sharded").key(17))
    bucket, shard, seq = make_strategy("time_bucket_shard").key(123).split("#")
    assert int(bucket) % 60_000 == 0 and shard == "shard03" and seq == "0000000123"
    fwd, rev_dom = make_strategy("domain", seed=5).key(77), make_strategy("reverse_domain", seed=5).key(77)
    host, suffix = fwd.split("#")
    assert rev_dom == ".".join(reversed(host.split("."))) + "#" + suffix


def test_server_allocated_returns_none_and_excludes_bigtable() -> None:
    s = make_strategy("server_allocated", backend="datastore")
    assert s.server_allocated and s.key(0) is None
    with pytest.raises(UnsupportedOperation, match="server_allocated: Bigtable has no server-allocated row keys"):
        make_strategy("server_allocated", backend="bigtable")


def test_params_are_validated() -> None:
    with pytest.raises(UsageError, match="unknown key strategy 'nope'"):
        make_strategy("nope")
    with pytest.raises(UsageError, match="unknown param 'shardz'"):
        make_strategy("sharded", params={"shardz": 3})
    with pytest.raises(UsageError, match="shards must be an integer"):
        make_strategy("sharded", params={"shards": "8"})
    with pytest.raises(UsageError, match="interval_ms must be ≥ 1"):
        make_strategy("timestamp_only", params={"interval_ms": 0.5})
    with pytest.raises(UsageError, match="machines × interval_ms"):
        make_strategy("field_promotion", params={"machines": 2, "interval_ms": 0.1})
    with pytest.raises(UsageError, match="not a strategy name"):
        make_strategy("sharded", params={"shardes": {"shards": 3}})
    with pytest.raises(UsageError, match="unknown backend"):
        make_strategy("sharded", backend="mysql")


def test_flat_params_apply_to_strategies_that_know_them() -> None:
    params = {"shards": 4, "prefix": "Cust", "sharded": {"shards": 16}}
    assert make_strategy("sharded", params=params).key(15) == "shard15#0000000015"
    assert make_strategy("prefixed_sequential", params=params).key(0) == "Cust1"
    assert make_strategy("sequential", params=params).key(0) == 1  # other strategies' params ignored


def test_timestamps_share_milliseconds_below_one_ms_interval() -> None:
    s = make_strategy("timestamp_first", params={"interval_ms": 0.25})
    stamps = [s.key(i).split("#")[0] for i in range(8)]
    assert len(set(stamps)) == 2 and len({s.key(i) for i in range(8)}) == 8


@pytest.mark.parametrize(
    ("key", "backend", "problem"),
    [
        ("a/b", "datastore", "'/'"),
        ("a/b", "firestore", "'/'"),
        (".", "firestore", "not a valid document id"),
        ("..", "firestore-datastore", "not a valid document id"),
        ("__x__", "datastore", "reserved"),
        (0, "datastore", "between 1 and 2^63-1"),
        (-5, "firestore-datastore", "between 1 and 2^63-1"),
        (2**63, "datastore", "between 1 and 2^63-1"),
        ("x" * 1501, "firestore", "1501 bytes"),
        ("x" * 4097, "bigtable", "4097 bytes"),
        ("\ud800", "bigtable", "UTF-8"),
        ("", "bigtable", "empty"),
        ((1, "a/b"), "datastore", "'/'"),
    ],
)
def test_key_problem_names_the_rule(key: Any, backend: str, problem: str) -> None:
    found = key_problem(key, backend)
    assert found is not None and problem in found


@pytest.mark.parametrize(
    ("key", "backend"),
    [
        ("a/b", "bigtable"),
        ("x" * 4096, "bigtable"),
        (".", "datastore"),
        (7, "firestore"),
        ((3, "Customer1"), "datastore"),
    ],
)
def test_key_problem_accepts_valid_keys(key: Any, backend: str) -> None:
    assert key_problem(key, backend) is None


def test_all_backends_known() -> None:
    for cls in STRATEGIES.values():
        assert cls.backends <= set(store_names())
