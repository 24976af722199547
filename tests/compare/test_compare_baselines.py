from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp._errors import UsageError
from keyramp.compare import register
from keyramp.results import _baselines
from keyramp.results._baselines import load_baselines, remove_baseline, resolve_baseline, set_baseline

ONE_CELL = (("bigtable", "field_promotion"),)


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    register(subparsers)
    _baselines.register(subparsers)
    args = parser.parse_args(argv)
    return args.func(args)


def test_set_list_rm_and_compare_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    base = make_run(results, seed=1, cells=ONE_CELL, seconds=5).name
    slow = make_run(results, seed=2, cells=ONE_CELL, seconds=5, latency_ms=5.0).name
    r = ["--results", str(results)]
    assert _cli(["baseline", *r, "set", "main", base]) == 0
    stored = json.loads((results / "baselines.json").read_text())
    assert stored["baselines"]["main"]["run_id"] == base
    assert stored["baselines"]["main"]["path"] == base  # relative: the directory can move
    assert _cli(["baseline", *r, "list"]) == 0
    assert f"main\t{base}" in capsys.readouterr().out
    assert _cli(["compare", slow, "--baseline", "main", "--quiet", *r]) == 1
    assert resolve_baseline("main", results).run_id == base
    # the results directory moved (CI artifact): the relative path still resolves
    moved = tmp_path / "moved"
    shutil.move(results, moved)
    assert resolve_baseline("main", moved).run_id == base
    assert _cli(["baseline", "--results", str(moved), "rm", "main"]) == 0
    assert load_baselines(moved) == {}
    with pytest.raises(UsageError, match="unknown baseline"):
        resolve_baseline("main", moved)


def test_bad_baselines(tmp_path: Path) -> None:
    results = tmp_path / "results"
    corrupt = make_run(results, seed=3, cells=ONE_CELL, seconds=3)
    (corrupt / "summary.json").write_text("{")
    with pytest.raises(UsageError, match="cannot be a baseline"):
        set_baseline(results, "main", corrupt.name)
    with pytest.raises(UsageError, match="invalid baseline name"):
        set_baseline(results, "../x", corrupt.name)
    with pytest.raises(UsageError, match="no baseline named"):
        remove_baseline(results, "ghost")
    good = make_run(results, seed=4, cells=ONE_CELL, seconds=3)
    set_baseline(results, "main", good.name)
    shutil.rmtree(good)
    with pytest.raises(UsageError, match="no longer exists"):
        resolve_baseline("main", results)
    (results / "baselines.json").write_text("not json")
    with pytest.raises(UsageError, match="not JSON"):
        load_baselines(results)


def test_compare_the_last_runs_of_a_profile_from_the_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # CI's usual call: the newest run of a profile against a named baseline, no run id to look up
    results = tmp_path / "results"
    base = make_run(results, seed=4, cells=ONE_CELL, seconds=5, profile_name="checkout").name
    make_run(results, seed=5, cells=ONE_CELL, seconds=5, profile_name="other", latency_ms=9.0)
    slow = make_run(results, seed=6, cells=ONE_CELL, seconds=5, profile_name="checkout", latency_ms=5.0).name
    r = ["--results", str(results)]
    assert _cli(["baseline", *r, "set", "main", base]) == 0
    out = tmp_path / "cmp.json"
    assert _cli(["compare", "--last", "1", "--profile", "checkout", "--baseline", "main", "--quiet", "--json",
                 str(out), *r]) == 1
    data = json.loads(out.read_text())
    assert {v["run_id"] for v in data["verdicts"]} == {slow}
    assert _cli(["compare", "--last", "2", "--profile", "checkout", "--quiet", *r]) == 1  # first is the baseline
    with pytest.raises(UsageError, match="no usable run"):
        _cli(["compare", "--last", "1", "--profile", "ghost", *r])
    with pytest.raises(UsageError, match="--last"):
        _cli(["compare", "--profile", "checkout", *r])
    with pytest.raises(UsageError, match="name runs"):
        _cli(["compare", *r])
