from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyramp.core._errors import UsageError
from keyramp.core._types import key_sort_text
from keyramp.keyspace import key_positions, load_keys
from keyramp.keyspace._load import MAX_REFERENCE, arrow_bytes
from keyramp.results._rundir import RunDirectory


def test_positions_follow_byte_order_of_sort_texts() -> None:
    keys = [key_sort_text(k) for k in (5, 1, 300, 20, 7_000_000_000)] + ["a", "b#2", "b#10", "é", "a\x00z"]
    kp = key_positions(keys)
    by_pos = [k for _, k in sorted(zip(kp.pos, keys, strict=True))]
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


def _rundir_keys(root: Path, cells: dict[str, list[tuple[float, str, str]]]) -> Path:
    """Key samples written by the run directory writer (Parquet), one cell after another."""
    with RunDirectory(root, "keys") as run:
        for cell, samples in cells.items():
            run.begin_cell(cell)
            run.keys(cell, samples)
            run.flush()
    return run.path


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_load_keys_groups_cells_and_sorts_by_time(tmp_path: Path, fmt: str) -> None:
    if fmt == "csv":  # a run written before the Parquet format
        run = tmp_path
        (run / "keys.csv").write_text('cell,t,op,key\nc1,0.5,insert,b\nc0,0.1,read,"x,y"\nc1,0.2,insert,a\n',
                                      encoding="utf-8")
    else:
        run = _rundir_keys(tmp_path, {"c1": [(0.5, "insert", "b"), (0.2, "insert", "a")], "c0": [(0.1, "read", "x,y")]})
    cells = load_keys(run)
    assert sorted(cells) == ["c0", "c1"]
    assert list(cells["c1"].key) == [b"a", b"b"] and list(cells["c1"].t) == [0.2, 0.5]
    assert list(cells["c1"].op) == [b"insert", b"insert"] and list(cells["c0"].op) == [b"read"]
    assert list(cells["c0"].key) == [b"x,y"]
    assert list(load_keys(run, cell="c0")) == ["c0"]


@pytest.mark.parametrize(
    ("text", "message"),
    [("cell,time,op,key\n", "expected header"), ("cell,t,op,key\nc0,soon,insert,k\n", "malformed row")],
)
def test_load_keys_rejects_bad_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "keys.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        load_keys(tmp_path)
    with pytest.raises(UsageError, match="does not exist"):
        load_keys(tmp_path / "missing")


def test_arrow_bytes_pads_mixed_widths_and_views_one_width() -> None:
    mixed = pa.array(["b", "", "abc", "zé", "a\x00z"])
    assert arrow_bytes(mixed).tolist() == [b"b", b"", b"abc", "zé".encode(), b"a\x00z"]
    sliced = pa.chunked_array([pa.array(["xx", "k0001", "k0002"]).slice(1), pa.array(["k0003"])])
    out = arrow_bytes(sliced)
    assert out.dtype == np.dtype("S5") and out.tolist() == [b"k0001", b"k0002", b"k0003"]


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


def test_load_keys_reads_a_cell_in_progress_and_the_same_rows_once_compacted(tmp_path: Path) -> None:
    # The runner analyses a cell right after it ends; a live reader reads one still running.
    run = RunDirectory(tmp_path, "keys")
    run.begin_cell("c00")
    run.keys("c00", [(0.1, "insert", "a"), (0.2, "insert", "b")])
    run.flush()
    run.begin_cell("c01")  # ends c00: compacted
    run.keys("c01", [(0.1, "read", "zé")])
    run.flush()
    run.keys("c01", [(1.3, "insert", "y")])
    run.flush()
    assert (run.path / "keys" / "c00.parquet").is_file() and (run.path / "keys" / "c01.parts").is_dir()
    live = load_keys(run.path)
    assert set(live) == {"c00", "c01"}
    assert [k.decode() for k in live["c01"].key] == ["zé", "y"] and list(live["c01"].t) == [0.1, 1.3]
    run.close()
    done = load_keys(run.path)
    assert not (run.path / "keys" / "c01.parts").exists()
    assert [k.decode() for k in done["c01"].key] == ["zé", "y"] and list(done["c00"].key) == [b"a", b"b"]
