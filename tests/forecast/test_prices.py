"""The price table (put together from the store packages' price sheets, ``backends/<store>/prices.json``)
and ``--prices`` overrides (forecast/_prices.py)."""

from __future__ import annotations

import dataclasses
import importlib
import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from _runs import keyramp

from keyramp.backends import STORES, PriceSheet, registered, spec_for
from keyramp.core._errors import UsageError
from keyramp.forecast._prices import BILLING, BUILTIN, LABEL, UNDATED, Prices, builtin_table, load_prices


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def _cited(figure: dict[str, Any], version: str) -> None:
    """A source URL, and the date the source carries — never the day the table was written — or none, and why."""
    assert figure["source"].startswith(("https://cloud.google.com/", "https://firebase.google.com/")), figure
    if figure["as_of"] == UNDATED:
        assert len(figure["why_undated"]) > 40, figure  # a reason, not a placeholder
    else:
        assert date.fromisoformat(figure["as_of"]) <= date.today() and "why_undated" not in figure
        assert figure["as_of"] != version, f"{figure}: the day the table was written is not the source's date"


def test_every_price_has_a_source_url_its_date_or_why_it_has_none_and_a_note() -> None:
    doc = builtin_table()
    assert doc["label"] == LABEL
    seen = 0
    for store in doc["stores"].values():
        for loc in store["locations"].values():
            for name in BILLING[store["billing"]]:
                price = loc[name]
                _cited(price, doc["version"])
                assert price["note"], f"{name}: say how the figure was read (or that it is unconfirmed)"
                seen += 1
        for rule in [store.get("index_entry_writes"), *store.get("billed_as", {}).values()]:
            if rule is not None:
                _cited(rule, doc["version"])
    assert seen == 2 * 2 * 4 + 4  # Firestore and Datastore mode at two locations, Bigtable at one


def test_each_store_package_holds_its_sheet_and_the_table_is_put_together_from_them() -> None:
    doc = builtin_table()
    for spec in STORES.specs():
        assert spec.prices is not None, spec.name
        # The sheet lives in the package that exports the spec: a store is one package.
        package = importlib.import_module(f"keyramp.backends.{spec.prices.file.parent.name}")
        assert spec in package.SPECS and spec.prices.file.parent == Path(package.__file__ or "").parent
        assert spec.name in doc["stores"][spec.prices.name]["backends"]
    # Datastore mode is billed as Cloud Datastore: one sheet, two backends (from the specs, not the file).
    assert doc["stores"]["datastore"]["backends"] == ["datastore", "firestore-datastore"]
    sheets = [json.loads(spec.prices.file.read_text()) for spec in STORES.specs() if spec.prices is not None]
    assert doc["version"] == max(sheet["version"] for sheet in sheets)  # the newest sheet's
    assert load_prices().source == f"{BUILTIN} {doc['version']}"


def test_a_bad_sheet_names_its_file_and_field(tmp_path: Path) -> None:
    good = json.loads((Path(__file__).parents[2] / "keyramp/backends/bigtable/prices.json").read_text())
    spec = dataclasses.replace(spec_for("bigtable"), name="bigtable-copy")
    for doc, field in (({**good, "backends": ["bigtable"]}, "backends"),
                       ({**good, "version": "last week"}, "version"),
                       ({**good, "billing": "per-byte"}, "stores.copy.billing")):
        sheet = _write(tmp_path / "prices.json", doc)
        with pytest.raises(UsageError) as exc:
            builtin_table((dataclasses.replace(spec, prices=PriceSheet(name="copy", file=sheet)),))
        assert str(exc.value).startswith(f"{sheet}: {field}: "), exc.value
    with registered(dataclasses.replace(spec, prices=PriceSheet(name="bigtable", file=sheet))), pytest.raises(
            ValueError, match=r"price sheet 'bigtable' is .* for another store"):
        builtin_table()


def test_a_field_transform_bills_one_write_and_keyramps_datastore_increment_a_read_and_a_write() -> None:
    """How each store bills keyramp's ``increment``, stated once in the table with its source: Firestore's
    field transform is one write; Datastore mode's is a lookup and an upsert; Bigtable prices nodes only."""
    prices = load_prices()
    fs, ds = (prices.stores[name].billed_as["increment"] for name in ("firestore", "datastore"))
    assert (fs.reads, fs.writes) == (0, 1) and "single write" in fs.note and fs.source.endswith("/firestore/pricing")
    assert (ds.reads, ds.writes) == (1, 1) and "PropertyTransform" in ds.note
    assert prices.stores["bigtable"].billed_as == {} and "ReadModifyWrite" in prices.stores["bigtable"].billing_note


def test_the_table_covers_every_cloud_store_by_location_type() -> None:
    prices = load_prices()
    for spec in STORES.specs():
        if spec.cloud is not None:
            store = prices.for_backend(spec.name)
            assert store.default_location in store.locations
    for name in ("firestore", "datastore"):
        types = {loc.type for loc in prices.stores[name].locations.values()}
        assert types == {"regional", "multi-region"}, name  # us-central1 and nam5
        index = prices.stores[name].index_entry_writes
        assert index is not None and index.billed is False
    assert prices.stores["bigtable"].billing == "nodes"
    # Published relations the table must keep (figures it was not built from): a multi-region
    # bills more than a region; HDD storage is far cheaper than SSD storage.
    fs = prices.stores["firestore"].locations
    for name in BILLING["operations"]:
        assert fs["nam5"].prices[name].usd > fs["us-central1"].prices[name].usd
    bt = prices.stores["bigtable"].locations["us-central1"].prices
    assert bt["storage_gib_month_hdd"].usd < bt["storage_gib_month_ssd"].usd / 5


def test_unconfirmed_figures_say_so() -> None:
    prices = load_prices()
    for price in prices.stores["bigtable"].locations["us-central1"].prices.values():
        assert price.note.startswith("NOT confirmed")


def test_to_json_round_trips() -> None:
    prices = load_prices()
    again = Prices.from_json(prices.to_json(), src="copy")
    assert again.to_json() == prices.to_json()


def test_an_override_replaces_what_it_names_and_keeps_the_rest(tmp_path: Path) -> None:
    path = _write(tmp_path / "ours.json", {"stores": {"firestore": {"locations": {"us-central1": {
        "writes_per_100k": {"usd": 0.05, "source": "our contract, schedule B", "as_of": "2026-01-31"}}}}}})
    base, ours = load_prices(), load_prices(path)
    loc, base_loc = ours.stores["firestore"].locations["us-central1"], base.stores["firestore"].locations["us-central1"]
    assert loc.prices["writes_per_100k"].usd == 0.05 and loc.prices["writes_per_100k"].note == ""
    assert loc.prices["reads_per_100k"] == base_loc.prices["reads_per_100k"]
    assert ours.stores["bigtable"] == base.stores["bigtable"]
    assert ours.source.endswith(f" + {path}") and str(path) not in base.source


def test_an_override_may_add_a_complete_location(tmp_path: Path) -> None:
    price = {"usd": 0.04, "source": "https://cloud.google.com/firestore/pricing", "as_of": "2026-11-01"}
    new = {"type": "regional", **{name: price for name in BILLING["operations"]}}
    path = _write(tmp_path / "eu.json", {"stores": {"firestore": {"default_location": "europe-west1",
                                                                  "locations": {"europe-west1": new}}}})
    store = load_prices(path).stores["firestore"]
    assert store.location().name == "europe-west1" and store.location("nam5").type == "multi-region"


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"stores": {"firestore": {"locations": {"us-central1": {"reads_per_100k": {"usd": -1, "source": "x",
                                                                                   "as_of": "2026-01-01"}}}}}},
         "stores.firestore.locations.us-central1.reads_per_100k.usd"),
        ({"stores": {"firestore": {"locations": {"us-central1": {"reads_per_100k": {"usd": 0.1,
                                                                                   "as_of": "2026-01-01"}}}}}},
         "stores.firestore.locations.us-central1.reads_per_100k.source"),
        ({"stores": {"bigtable": {"locations": {"us-central1": {"node_hour_ssd": {"usd": 1, "source": "x",
                                                                                 "as_of": "last year"}}}}}},
         "stores.bigtable.locations.us-central1.node_hour_ssd.as_of"),
        ({"stores": {"firestore": {"locations": {"europe-west1": {"type": "regional"}}}}},
         "stores.firestore.locations.europe-west1.reads_per_100k"),
        ({"stores": {"firestore": {"locations": {"us-central1": {"node_hour_ssd": {}}}}}},
         "stores.firestore.locations.us-central1.node_hour_ssd"),
        ({"stores": {"spanner": {}}}, "stores.spanner"),
        ({"stores": {"firestore": {"default_location": "mars1"}}}, "stores.firestore.default_location"),
        ({"stores": {"firestore": {"index_entry_writes": {"billed": True, "source": "x", "as_of": "2026-01-01"}}}},
         "stores.firestore.index_entry_writes.billed"),
        ({"stores": {"firestore": {"locations": {"us-central1": {"reads_per_100k": {"usd": 0.1, "source": "x",
                                                                                   "as_of": "undated"}}}}}},
         "stores.firestore.locations.us-central1.reads_per_100k.why_undated"),
        ({"stores": {"firestore": {"locations": {"us-central1": {"reads_per_100k": {
            "usd": 0.1, "source": "x", "as_of": "2026-01-01", "why_undated": "it has a date"}}}}}},
         "stores.firestore.locations.us-central1.reads_per_100k.why_undated"),
        ({"stores": {"firestore": {"billed_as": {"scan": {"reads": 1, "writes": 0, "source": "x",
                                                          "as_of": "2026-01-01"}}}}},
         "stores.firestore.billed_as.scan"),
        ({"stores": {"firestore": {"billed_as": {"increment": {"reads": -1, "writes": 1, "source": "x",
                                                               "as_of": "2026-01-01"}}}}},
         "stores.firestore.billed_as.increment.reads"),
        ({"stores": {"bigtable": {"billed_as": {"increment": {"reads": 0, "writes": 1, "source": "x",
                                                              "as_of": "2026-01-01"}}}}},
         "stores.bigtable.billed_as"),
        ({"currency": "EUR"}, "currency"),
        ({"schema": 2}, "schema"),
        ({"prices": {}}, "prices"),
    ],
)
def test_a_bad_override_names_its_file_and_field(tmp_path: Path, doc: dict[str, Any], field: str) -> None:
    path = _write(tmp_path / "bad.json", doc)
    with pytest.raises(UsageError) as exc:
        load_prices(path)
    message = str(exc.value)
    assert "\n" not in message and message.startswith(f"{path}: {field}: "), message


def test_unreadable_files_are_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    for path, expected in ((tmp_path / "none.json", "no such prices file"), (broken, "cannot read prices file")):
        with pytest.raises(UsageError) as exc:
            load_prices(path)
        assert str(exc.value).startswith(f"{path}: {expected}") and "\n" not in str(exc.value)


def test_a_bad_prices_file_exits_2_before_anything_through_the_cli(tmp_path: Path) -> None:
    bad = _write(tmp_path / "prices.json", {"stores": {"datastore": {"locations": {"nam5": {
        "writes_per_100k": {"usd": "cheap", "source": "x", "as_of": "2026-01-01"}}}}}})
    profile = tmp_path / "cloudy.toml"
    profile.write_text('name = "cloudy"\ntarget = "cloud"\nproject = "acme-load-test"\nbackend = "datastore"\n'
                       'duration = "60s"\n[schedule]\nkind = "constant"\nrate = 200\n')
    result = keyramp("run", str(profile), "--allow-cloud", "acme-load-test", "--plan", "--prices", str(bad),
                     cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (f"keyramp: {bad}: stores.datastore.locations.nam5.writes_per_100k.usd: "
                                      "must be a number >= 0, got 'cheap'")
    assert result.stdout == "" and not (tmp_path / "results").exists()
    suite = keyramp("calibrate", "suite", "datastore", "--project", "acme-load-test", "--out", str(tmp_path / "c"),
                    "--prices", str(bad), cwd=tmp_path)
    assert suite.returncode == 2 and f"{bad}: stores.datastore" in suite.stderr
    assert not (tmp_path / "c").exists()  # refused before the suite was written
