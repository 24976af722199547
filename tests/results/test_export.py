"""keyramp export --csv (spreadsheets) and keyramp migrate (CSV runs -> Parquet, parts of killed runs)."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp.cli import _export
from keyramp.core._errors import UsageError
from keyramp.results._read import data_files, is_csv_run, read_keys, read_timeseries

_BY_TS = [(c, "ascending") for c in ("cell", "op", "second")]
_BY_KEY = [(c, "ascending") for c in ("cell", "t_us", "op", "key")]


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    _export.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.func(args)


def test_export_writes_csv_a_spreadsheet_and_keyramp_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path / "results", seed=1, seconds=4, error_rate={"read": 0.3})
    assert (
        _cli(["export", run.name, "--csv", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "x")]) == 0
    )
    assert "timeseries.csv" in capsys.readouterr().out
    with open(tmp_path / "x" / "timeseries.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["cell", "op", "second", "count", "errors", "p50_ms", "p99_ms", "service_p99_ms", "max_ms",
                             "target_ops_per_s", "late", "dropped", "error_classes", "p95_ms", "in_flight"]
    errors = [r for r in rows if r["op"] == "read" and int(r["errors"])]
    assert errors and all(r["error_classes"] == f"UNAVAILABLE:{r['errors']}" for r in errors)
    with open(tmp_path / "x" / "keys.csv", newline="") as fh:
        keys = list(csv.DictReader(fh))
    assert list(keys[0]) == ["cell", "t", "op", "key"] and float(keys[-1]["t"]) > 0
    # the exported files are a CSV-format run: keyramp reads back exactly the same rows
    assert read_timeseries(tmp_path / "x").sort_by(_BY_TS) == read_timeseries(run).sort_by(_BY_TS)
    assert read_keys(tmp_path / "x").sort_by(_BY_KEY) == read_keys(run).sort_by(_BY_KEY)
    with pytest.raises(SystemExit):
        _cli(["export", run.name, "--results", str(tmp_path / "results")])  # --csv is the one format, and required


def test_migrate_converts_csv_runs_compacts_killed_runs_and_is_idempotent(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    old = make_run(results, seed=2, seconds=5, fmt="csv")
    killed = make_run(results, seed=3, seconds=5, status="running")  # its last cell is still in parts
    ts, keys = read_timeseries(old).sort_by(_BY_TS), read_keys(old).sort_by(_BY_KEY)
    assert _cli(["migrate", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert f"{old.name}\tconverted" in out and f"{killed.name}\tcompacted" in out
    assert not is_csv_run(old) and not (old / "timeseries.csv").exists() and not (old / "keys.csv").exists()
    assert read_timeseries(old).sort_by(_BY_TS) == ts and read_keys(old).sort_by(_BY_KEY) == keys
    assert data_files(killed, "c01-datastore-random").complete
    assert _cli(["migrate", "--results", str(results)]) == 0
    assert capsys.readouterr().out.count("\tcurrent\t") == 2


def test_migrate_keeps_csv_on_request_and_refuses_unknown_runs(tmp_path: Path) -> None:
    results = tmp_path / "results"
    old = make_run(results, seed=4, seconds=2, fmt="csv")
    assert _cli(["migrate", old.name, "--keep-csv", "--results", str(results)]) == 0
    assert (old / "timeseries.csv").exists() and (old / "timeseries").is_dir() and not is_csv_run(old)
    with pytest.raises(UsageError, match="unknown run"):
        _cli(["migrate", "20260101T000000000Z-ghost-abcd", "--results", str(results)])
