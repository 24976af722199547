"""Parameter ranges, their sources and calibration files (forecast/_params.py, _stores.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from keyramp._errors import UsageError
from keyramp.forecast import STORES, load_params_file, store_params
from keyramp.forecast._params import ParamRange


def test_every_default_range_names_a_source_and_says_if_it_is_published() -> None:
    for key, box in STORES.items():
        for name, r in box.ranges.items():
            assert r.low <= r.mid <= r.high, (key, name)
            assert r.source.startswith("https://cloud.google.com/") or r.source.startswith(
                "https://firebase.google.com/") or r.source == "unpublished", (key, name)
            assert r.note, (key, name)
            if not r.published:
                assert r.low < r.high or name == "index_append_ops_per_s", (key, name)  # guesses are ranges


def test_bigtable_figures_are_googles_per_node_rows_per_second() -> None:
    ssd, hdd = store_params("bigtable", "ssd"), store_params("bigtable", "hdd")
    assert ssd.ranges["node_write_rows_per_s"].high == 14_000 and ssd.ranges["node_read_rows_per_s"].high == 17_000
    assert hdd.ranges["node_read_rows_per_s"].high == 500 and hdd.ranges["node_write_rows_per_s"].high == 10_000
    with pytest.raises(UsageError, match="storage"):
        store_params("bigtable", "tape")


def test_a_calibration_file_replaces_named_ranges(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"schema": 1, "stores": {"firestore": {
        "tablet_ops_per_s": {"low": 700, "mid": 800, "high": 950, "source": "keyramp calibrate r1 r2"}}}}))
    boxes = load_params_file(path, STORES)
    fs = boxes["firestore"]
    assert (fs.ranges["tablet_ops_per_s"].low, fs.ranges["tablet_ops_per_s"].high) == (700, 950)
    assert fs.ranges["split_delay_s"] == STORES["firestore"].ranges["split_delay_s"]
    assert fs.origin == str(path) and boxes["datastore"] is STORES["datastore"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"schema": 2, "stores": {}}, "expected"),
        ({"schema": 1, "stores": {"mysql": {}}}, "stores.mysql: unknown store"),
        ({"schema": 1, "stores": {"firestore": {"nope": {}}}}, "stores.firestore.nope: unknown parameter"),
        ({"schema": 1, "stores": {"firestore": {"split_delay_s": {"low": 1, "mid": 2, "high": 3}}}}, "source"),
        ({"schema": 1, "stores": {"firestore": {"split_delay_s": {"low": 3, "mid": 2, "high": 1, "source": "x"}}}},
         "low <= mid <= high"),
    ],
)
def test_bad_calibration_files_name_the_field(tmp_path: Path, doc: dict, message: str) -> None:
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match=message):
        load_params_file(path, STORES)


def test_a_range_must_be_ordered() -> None:
    with pytest.raises(UsageError):
        ParamRange(low=2, mid=1, high=3, unit="s", source="unpublished", note="")
