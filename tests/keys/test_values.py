"""Record values: payload size, the indexed ``created`` variants, entity groups."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyramp.core._errors import UsageError
from keyramp.keys import RecordFactory, entity_group_key


@settings(max_examples=40, deadline=None)
@given(size=st.integers(min_value=0, max_value=70_000), index=st.integers(min_value=0, max_value=10**12))
def test_payload_has_value_size_bytes(size: int, index: int) -> None:
    rec = RecordFactory(value_size=size, seed=1).record(index)
    assert isinstance(rec["payload"], bytes) and len(rec["payload"]) == size


def test_payload_large_and_varied_and_deterministic() -> None:
    big = RecordFactory(value_size=2 << 20, seed=1)
    assert len(big.record(3)["payload"]) == 2 << 20
    f = RecordFactory(value_size=64, seed=1)
    payloads = {f.record(i)["payload"] for i in range(1000)}
    assert len(payloads) > 900  # slices at varied offsets, not one constant blob
    assert RecordFactory(value_size=64, seed=1).record(5) == f.record(5)
    assert RecordFactory(value_size=64, seed=2).record(5) != f.record(5)


def test_indexed_value_none() -> None:
    f = RecordFactory(value_size=8, indexed_value="none")
    assert set(f.record(1)) == {"payload"} and f.unindexed_fields() == {"payload"}


@pytest.mark.parametrize("mode", ["monotonic", "unindexed"])
def test_created_increases_with_index(mode: str) -> None:
    f = RecordFactory(value_size=8, indexed_value=mode)
    created = [f.record(i)["created"] for i in range(1000)]
    assert all(a < b for a, b in itertools.pairwise(created))
    assert ("created" in f.unindexed_fields()) == (mode == "unindexed")


def test_prefixed_created_leads_with_high_cardinality_id() -> None:
    f = RecordFactory(value_size=8, indexed_value="prefixed", users=1000)
    values = [f.record(i)["created"] for i in range(5000)]
    assert all(re.fullmatch(r"user\d{4}#\d{13}", v) for v in values)
    assert len({v.split("#")[0] for v in values}) == 1000
    # Within one user, the suffix still orders by time (queries `user_id + created`).
    same_user = [v for v in values if v.startswith("user0042#")]
    assert same_user == sorted(same_user) and len(same_user) == 5
    assert "created" not in f.unindexed_fields()


def test_indexed_fields() -> None:
    rec = RecordFactory(value_size=0, indexed_fields=12).record(7)
    assert [k for k in rec if k.startswith("f")] == [f"f{i}" for i in range(12)]
    assert all(isinstance(rec[f"f{i}"], int) for i in range(12))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"value_size": -1},
        {"value_size": 8, "indexed_value": "sorted"},
        {"value_size": 8, "indexed_fields": -2},
        {"value_size": True},
    ],
)
def test_bad_input(kwargs: dict) -> None:
    with pytest.raises(UsageError):
        RecordFactory(**kwargs)


def test_entity_group_key() -> None:
    assert [entity_group_key(f"k{i}", i, group_size=5)[0] for i in range(11)] == [1] * 5 + [2] * 5 + [3]
    assert entity_group_key(42, 9, group_size=10) == (1, 42)
    with pytest.raises(UsageError, match="entity_group_size"):
        entity_group_key("k", 0, group_size=0)
    with pytest.raises(UsageError, match="already has a parent"):
        entity_group_key((1, "k"), 0, group_size=2)
