"""Parameter ranges, their sources and calibration files (backends/_params.py, backends/_boxes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from keyramp.backends import default_boxes, load_params_file, store_params
from keyramp.backends._params import ParamRange
from keyramp.core._errors import UsageError


def test_every_default_range_names_a_source_and_says_if_it_is_published() -> None:
    boxes = default_boxes()
    assert {"datastore", "firestore", "firestore-datastore", "bigtable-ssd", "bigtable-hdd"} <= set(boxes)
    for key, box in boxes.items():
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
    boxes = load_params_file(path, default_boxes())
    fs = boxes["firestore"]
    assert (fs.ranges["tablet_ops_per_s"].low, fs.ranges["tablet_ops_per_s"].high) == (700, 950)
    assert fs.ranges["split_delay_s"] == default_boxes()["firestore"].ranges["split_delay_s"]
    assert fs.origin == str(path) and boxes["datastore"] is default_boxes()["datastore"]


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
        load_params_file(path, default_boxes())


def test_a_range_must_be_ordered() -> None:
    with pytest.raises(UsageError):
        ParamRange(low=2, mid=1, high=3, unit="s", source="unpublished", note="")


def test_each_store_declares_its_own_box_in_its_spec() -> None:
    from keyramp.backends import STORES
    from keyramp.backends.bigtable._spec import BIGTABLE_TABLETS
    from keyramp.backends.firestore._spec import FIRESTORE_TABLETS

    assert STORES.get("firestore").tablets is FIRESTORE_TABLETS and STORES.get("bigtable").tablets is BIGTABLE_TABLETS
    # Datastore mode runs on Firestore's storage: the same numbers, Datastore's ramp page as the source.
    fs, ds = store_params("firestore"), store_params("firestore-datastore")
    assert {k: (r.low, r.mid, r.high) for k, r in fs.ranges.items()} == {
        k: (r.low, r.mid, r.high) for k, r in ds.ranges.items()}
    assert ds.ranges["split_delay_s"].source == "https://cloud.google.com/datastore/docs/best-practices#ramping_up_traffic"
    assert store_params("bigtable").kind == "nodes" and fs.kind == "ranges"
    with pytest.raises(UsageError, match="no forecast model"):
        store_params("mysql")
