from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from keyramp._errors import UsageError
from keyramp._types import key_sort_text
from keyramp.keyspace import key_positions, load_keys
from keyramp.keyspace._load import MAX_REFERENCE


def test_positions_follow_byte_order_of_sort_texts() -> None:
    keys = [key_sort_text(k) for k in (5, 1, 300, 20, 7_000_000_000)] + ["a", "b#2", "b#10", "é", "a\x00z"]
    kp = key_positions(keys)
    by_pos = [k for _, k in sorted(zip(kp.pos, keys))]
    assert by_pos == sorted(keys, key=lambda s: s.encode("utf-8"))
    assert kp.distinct == len(keys)
    assert np.all((kp.pos >= 0) & (kp.pos < 1))


def test_zero_padded_ids_spread_evenly() -> None:
    # Byte arithmetic would bunch 20-digit ids into thin bands; ranks spread them.
    # 100,000 keys > MAX_REFERENCE: the range is a random sample of the keys, so the
    # deciles hold 10,000 ± ~1 % (byte arithmetic would put most keys in one decile).
    kp = key_positions([key_sort_text(i) for i in range(1, 100_001)])
    assert kp.distinct == MAX_REFERENCE
    hist = np.histogram(kp.pos, bins=10, range=(0, 1))[0]
    assert hist.max() - hist.min() <= 400


def test_repeated_keys_share_a_position_and_labels_are_real_keys() -> None:
    kp = key_positions(["k3", "k1", "k3", "k2", "k1"])
    assert kp.distinct == 3
    assert kp.pos[0] == kp.pos[2] and kp.pos[1] == kp.pos[4] == 0.0
    assert kp.label_at(0.0) == "k1" and kp.label_at(0.99) == "k3" and kp.label_at(1.0) == "k3"


def test_raw_keys_are_mapped_through_sort_text() -> None:
    kp = key_positions([10, 9, ("p", 2)])
    assert kp.pos[1] < kp.pos[0] < kp.pos[2]  # ints sort numerically, before names


def test_load_keys_groups_cells_and_sorts_by_time(tmp_path: Path) -> None:
    path = tmp_path / "keys.csv"
    path.write_text('cell,t,op,key\nc1,0.5,insert,b\nc0,0.1,read,"x,y"\nc1,0.2,insert,a\n', encoding="utf-8")
    cells = load_keys(path)
    assert sorted(cells) == ["c0", "c1"]
    assert list(cells["c1"].key) == [b"a", b"b"] and list(cells["c1"].t) == [0.2, 0.5]
    assert list(cells["c0"].key) == [b"x,y"]
    assert list(load_keys(path, cell="c0")) == ["c0"]


@pytest.mark.parametrize(
    ("text", "message"),
    [("cell,time,op,key\n", "expected header"), ("cell,t,op,key\nc0,soon,insert,k\n", "malformed row")],
)
def test_load_keys_rejects_bad_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "keys.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        load_keys(path)
    with pytest.raises(UsageError, match="does not exist"):
        load_keys(tmp_path / "missing.csv")


def test_ties_in_the_first_word_are_resolved_exactly() -> None:
    rng = np.random.default_rng(5)
    # Long shared stems with differences late in the key, mixed with short keys.
    keys = [f"user{rng.integers(0, 50):04d}#{rng.integers(0, 10**12):013d}#{rng.integers(0, 9)}" for _ in range(3000)]
    keys += [f"u{i}" for i in range(20)] + ["user", "user0001", "user0001#"]
    kp = key_positions(keys)
    expected = sorted(set(keys), key=lambda s: s.encode("utf-8"))
    assert kp.distinct == len(expected)
    rank = {k: i for i, k in enumerate(expected)}
    assert np.array_equal(np.round(kp.pos * kp.distinct).astype(int), [rank[k] for k in keys])
    assert list(kp.labels) == expected


from hypothesis import given, settings
from hypothesis import strategies as st

# NUL is excluded: numpy strings drop trailing NULs (sort texts only use NUL inside a path).
_alphabet = st.sampled_from("0129#:_abyzAZ~é€\U0001F600")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(_alphabet, max_size=30), min_size=1, max_size=60))
def test_positions_rank_keys_in_utf8_byte_order(keys: list[str]) -> None:
    kp = key_positions(keys)
    expected = sorted(set(keys), key=lambda s: s.encode("utf-8"))
    rank = {k: i for i, k in enumerate(expected)}
    assert kp.distinct == len(expected)
    assert np.array_equal(np.round(kp.pos * kp.distinct).astype(int), [rank[k] for k in keys])


def test_load_keys_from_an_offset_reads_only_the_later_cell(tmp_path) -> None:
    # The runner reads each finished cell from where its rows started (RunDirectory.keys_offset).
    path = tmp_path / "keys.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        fh.write("cell,t,op,key\n")
        fh.write("c00,0.1,insert,a\nc00,0.2,insert,b\n")
        fh.flush()
        offset = fh.tell()
        fh.write("c01,0.1,read,zé\nc01,0.3,insert,y\n")
    later = load_keys(path, start=offset)
    assert set(later) == {"c01"}
    assert [k.decode() for k in later["c01"].key] == ["zé", "y"]
    assert set(load_keys(path)) == {"c00", "c01"}
