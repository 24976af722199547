"""The SQLite catalog over every run: kept in sync with the directories, rebuilt when broken, queried in SQL."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp.cli._list import register
from keyramp.results._baselines import set_baseline
from keyramp.results._index import INDEX_FILE, Catalog, RunQuery


@pytest.fixture()
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


def _ids(rows: list[dict]) -> list[str]:  # type: ignore[type-arg]
    return [r["run_id"] for r in rows]


def test_the_index_follows_the_directories_and_rereads_only_what_changed(results: Path) -> None:
    a = make_run(results, seed=1, profile_name="alpha")
    b = make_run(results, seed=2, profile_name="beta", status="running")
    catalog = Catalog(results)
    assert catalog.refresh() == 2 and catalog.refresh() == 0  # warm: nothing re-read
    rows, total = catalog.query()
    assert total == 2 and _ids(rows) == [b.name, a.name]  # newest first
    # the run finishes: its manifest and summary are rewritten, and only it is read again
    manifest = json.loads((b / "manifest.json").read_text())
    manifest["status"] = "complete"
    (b / "manifest.json").write_text(json.dumps(manifest))
    shutil.copy(a / "summary.json", b / "summary.json")
    assert catalog.refresh() == 1
    assert catalog.query(RunQuery(status="complete"))[1] == 2
    shutil.rmtree(a)
    assert _ids(catalog.query()[0]) == [b.name]
    catalog.close()
    # a second process sees the same index without reading any run
    again = Catalog(results)
    assert again.refresh() == 0 and again.count() == 1
    again.close()


def test_a_damaged_or_foreign_index_is_rebuilt_from_the_runs(results: Path) -> None:
    run = make_run(results, seed=3)
    (results / INDEX_FILE).write_bytes(b"not a sqlite database at all" * 100)
    catalog = Catalog(results)
    assert _ids(catalog.query()[0]) == [run.name]
    catalog.close()
    # an index of another version: emptied and rebuilt rather than trusted
    import sqlite3

    with sqlite3.connect(results / INDEX_FILE) as db:
        db.execute("UPDATE meta SET value = 'old' WHERE key = 'version'")
        db.execute("UPDATE runs SET row = '{}'")
    catalog = Catalog(results)
    assert catalog.query()[0][0]["profile_name"] == "synthetic"
    catalog.close()


def test_no_results_directory_is_an_empty_catalog(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "missing")
    assert catalog.query() == ([], 0) and catalog.facets()["profile"] == []
    assert not (tmp_path / "missing").exists()  # an in-memory index; nothing created


def test_filters_sorting_and_paging_happen_in_the_query(results: Path) -> None:
    fast = make_run(results, seed=4, profile_name="alpha", rate=400.0)
    slow = make_run(results, seed=5, profile_name="alpha", rate=100.0, cells=(("bigtable", "random"),))
    other = make_run(results, seed=6, profile_name="beta", status="failed")
    (results / "20260301T000000000Z-broken-beef").mkdir()  # corrupt: no files at all
    catalog = Catalog(results)
    assert _ids(catalog.query(RunQuery(profile="alpha"))[0]) == [slow.name, fast.name]
    assert _ids(catalog.query(RunQuery(backend="bigtable"))[0]) == [slow.name]
    assert _ids(catalog.query(RunQuery(status="failed"))[0]) == [other.name]
    # failed runs still hold measurements (usable for compare); the empty directory does not
    assert _ids(catalog.query(RunQuery(ok=True))[0]) == [other.name, slow.name, fast.name]
    by_rate = _ids(catalog.query(RunQuery(sort="ops_per_s", descending=False))[0])
    assert (
        by_rate[:3] == [slow.name, other.name, fast.name] and by_rate[-1] == "20260301T000000000Z-broken-beef"
    )  # null last
    page, total = catalog.query(RunQuery(sort="run_id", descending=False, limit=2, offset=2))
    assert total == 4 and len(page) == 2
    assert catalog.query(RunQuery(since="2026-01-01", until="2026-01-01"))[1] == 3
    facets = catalog.facets()
    assert facets["profile"] == ["alpha", "beta"] and facets["backend"] == ["bigtable", "datastore"]
    catalog.close()


def test_rows_carry_the_baselines_that_name_them(results: Path) -> None:
    run = make_run(results, seed=7)
    set_baseline(results, "main", run.name)
    set_baseline(results, "release", run.name)
    catalog = Catalog(results)
    assert catalog.query()[0][0]["baselines"] == ["main", "release"]
    (results / "baselines.json").write_text("{")  # corrupt: the runs are still listed
    assert catalog.query()[0][0]["baselines"] == []
    catalog.close()


def _list(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["list", *argv])
    return args.func(args)


def test_list_cli_json_table_and_filters(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = make_run(results, seed=14, profile_name="alpha")
    bad = make_run(results, seed=15)
    (bad / "summary.json").write_text("{")
    assert _list(["--results", str(results), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["run_id"] for d in data] == [bad.name, good.name]
    assert data[0]["ok"] is False and data[0]["warnings"]
    assert data[1]["cells"] == ["c00-datastore-sequential", "c01-datastore-random"]
    assert _list(["--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert good.name in out and "warning" in out and "unusable" in out
    assert _list(["--results", str(results), "--profile", "alpha", "--json"]) == 0
    assert [d["run_id"] for d in json.loads(capsys.readouterr().out)] == [good.name]
    assert _list(["--results", str(results), "--limit", "1", "--asc"]) == 0
    out = capsys.readouterr().out
    assert good.name in out and bad.name not in out and "(1 of 2)" in out
    from keyramp.core._errors import UsageError

    with pytest.raises(UsageError, match="--since"):
        _list(["--results", str(results), "--since", "yesterday"])


def test_list_out_writes_the_json_and_keeps_the_table(results: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # --out FILE (issue 30, as compare): the rows --json prints, written to FILE; the table stays.
    run = make_run(results, seed=16)
    assert _list(["--results", str(results), "--json"]) == 0
    printed = capsys.readouterr().out
    for flags in (["--out"], ["--json", "--out"]):
        target = tmp_path / "listing" / "runs.json"
        assert _list(["--results", str(results), *flags, str(target)]) == 0
        assert target.read_text(encoding="utf-8") == printed  # the same document, byte for byte
        assert capsys.readouterr().out.startswith(f"runs in {results}") and run.name in printed
    assert _list(["--results", str(results), "--out", "-"]) == 0
    assert capsys.readouterr().out == printed  # '-' is stdout, and then the table is left out


def test_keyramp_list_loads_only_its_own_verb(results: Path) -> None:
    # design constraint: `keyramp list` must not pay for the store clients, Locust or pyarrow
    # (importing every verb's module cost ~0.9 s of a warm listing that takes ~30 ms)
    import subprocess
    import sys

    make_run(results, seed=20)
    code = ("import sys, json; from keyramp.cli import main; rc = main(['list', '--results', sys.argv[1], '--json']); "
            "heavy = [m for m in ('google.cloud.bigtable', 'locust', 'pyarrow', 'flask') if m in sys.modules]; "
            "print(json.dumps({'rc': rc, 'heavy': heavy}))")
    proc = subprocess.run([sys.executable, "-c", code, str(results)], capture_output=True, text=True, timeout=60,
                          check=True)
    *listing, verdict = proc.stdout.strip().splitlines()
    assert json.loads(verdict) == {"rc": 0, "heavy": []}
    assert [row["run_id"] for row in json.loads("\n".join(listing))] == [p.name for p in results.iterdir()
                                                                         if p.is_dir()]
