"""Parquet parts while a cell runs, merges, compaction, and which files a reader takes."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from keyramp.results._parquet import KEYS_SCHEMA, MERGE_EVERY, CellWriter, cell_files, compact, read_files


def _second(cell: str, s: int, n: int = 3) -> pa.Table:
    return pa.Table.from_pydict({"cell": [cell] * n, "t_us": [s * 1_000_000 + i for i in range(n)],
                                 "op": ["insert"] * n, "key": [f"k{s:05d}-{i}" for i in range(n)],
                                 "kind": ["insert"] * n, "index": [None] * n, "access": [0] * n}, schema=KEYS_SCHEMA)


def _t(paths: tuple[Path, ...]) -> list[int]:
    return read_files(paths, "keys")["t_us"].to_pylist()


def test_parts_merge_every_window_and_compact_into_one_file(tmp_path: Path) -> None:
    writer = CellWriter(tmp_path, "c00", "keys")
    seconds = 2 * MERGE_EVERY + 5
    for s in range(seconds):
        writer.append(_second("c00", s))
        writer.flush()
    names = sorted(os.listdir(writer.parts_dir))
    # two merged windows and five one-second parts: the file count stays bounded
    assert names[:2] == [
        f"{0:08d}-{MERGE_EVERY - 1:08d}.parquet",
        f"{MERGE_EVERY:08d}-{2 * MERGE_EVERY - 1:08d}.parquet",
    ]
    assert len(names) == 2 + 5 and not any(n.endswith(".tmp") for n in names)
    live = cell_files(tmp_path, "c00", "keys")
    rows = _t(live.paths)
    assert not live.complete and rows == [s * 1_000_000 + i for s in range(seconds) for i in range(3)]
    whole = writer.finish()
    assert whole == tmp_path / "c00.parquet" and not writer.parts_dir.exists()
    done = cell_files(tmp_path, "c00", "keys")
    assert done.complete and done.paths == (whole,) and _t(done.paths) == rows
    assert pq.ParquetFile(whole).metadata.row_group(0).column(0).compression == "ZSTD"


def test_a_reader_never_counts_rows_twice_while_a_merge_or_compaction_is_in_flight(tmp_path: Path) -> None:
    writer = CellWriter(tmp_path, "c00", "keys")
    for s in range(3):
        writer.append(_second("c00", s))
        writer.flush()
    parts = sorted(writer.parts_dir.iterdir())
    # a merge renamed its wide part in but was stopped before deleting the narrow ones
    pq.write_table(read_files(tuple(parts[:2]), "keys"), writer.parts_dir / "00000000-00000001.parquet")
    files = cell_files(tmp_path, "c00", "keys")
    assert [p.name for p in files.paths] == ["00000000-00000001.parquet", "00000002-00000002.parquet"]
    assert len(_t(files.paths)) == 9
    # compaction renamed <cell>.parquet in and was killed before removing the parts
    pq.write_table(read_files(files.paths, "keys"), tmp_path / "c00.parquet")
    assert cell_files(tmp_path, "c00", "keys").paths == (tmp_path / "c00.parquet",)
    assert compact(tmp_path, "c00", "keys") == tmp_path / "c00.parquet" and not writer.parts_dir.exists()
    assert len(_t((tmp_path / "c00.parquet",))) == 9


def test_a_cell_without_rows_leaves_no_file(tmp_path: Path) -> None:
    writer = CellWriter(tmp_path, "c00", "keys")
    writer.flush()
    assert writer.finish() is None and os.listdir(tmp_path) == []
    assert read_files((), "keys").schema == KEYS_SCHEMA
