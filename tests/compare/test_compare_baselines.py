from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp.cli import _baseline
from keyramp.cli._compare import register
from keyramp.core._errors import UsageError
from keyramp.results._baselines import load_baselines, remove_baseline, resolve_baseline, set_baseline

ONE_CELL = (("bigtable", "field_promotion"),)


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    register(subparsers)
    _baseline.register(subparsers)
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
    assert [r.run_id for r in resolve_baseline("main", results)] == [base]
    # the results directory moved (CI artifact): the relative path still resolves
    moved = tmp_path / "moved"
    shutil.move(results, moved)
    assert [r.run_id for r in resolve_baseline("main", moved)] == [base]
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
    assert _cli(["compare", "--last", "1", "--profile", "checkout", "--baseline", "main", "--quiet", "--out",
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


def test_a_baseline_of_several_runs_of_one_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 32: several runs of one build make one baseline; compare reads their spread as the
    # between-run noise. A run of another profile (or another git commit) cannot join the set.
    results = tmp_path / "results"
    runs = [make_run(results, seed=10 + i, cells=ONE_CELL, seconds=5, profile_name="checkout").name for i in range(3)]
    slow = make_run(results, seed=14, cells=ONE_CELL, seconds=5, profile_name="checkout", latency_ms=6.0).name
    r = ["--results", str(results)]
    assert _cli(["baseline", *r, "set", "main", *runs]) == 0
    entry = json.loads((results / "baselines.json").read_text())["baselines"]["main"]
    assert entry["run_id"] == runs[0] and [m["path"] for m in entry["runs"]] == runs  # relative paths
    capsys.readouterr()
    assert _cli(["baseline", *r, "list"]) == 0
    assert f"main\t{runs[0]} (+2 runs)" in capsys.readouterr().out
    assert [x.run_id for x in resolve_baseline("main", results)] == runs
    out = tmp_path / "cmp.json"
    assert _cli(["compare", slow, "--baseline", "main", "--quiet", "--out", str(out), *r]) == 1
    data = json.loads(out.read_text())
    assert data["baseline_runs"] == runs and data["between_run_noise"].startswith("between-run noise measured from 3")
    assert {v["baseline_runs"] for v in data["verdicts"]} == {3}
    # --last N picks the newest N usable runs of the profile for the set.
    assert _cli(["baseline", *r, "set", "recent", "--last", "2", "--profile", "checkout"]) == 0
    assert [x.run_id for x in resolve_baseline("recent", results)] == [runs[2], slow]
    other = make_run(results, seed=15, cells=ONE_CELL, seconds=5, profile_name="other").name
    with pytest.raises(UsageError, match="one profile"):
        set_baseline(results, "mixed", [runs[0], other])
    manifest = json.loads((results / runs[1] / "manifest.json").read_text())
    (results / runs[1] / "manifest.json").write_text(json.dumps({**manifest, "git_sha": "abc"}))
    manifest = json.loads((results / runs[2] / "manifest.json").read_text())
    (results / runs[2] / "manifest.json").write_text(json.dumps({**manifest, "git_sha": "def"}))
    with pytest.raises(UsageError, match=r"one build \(git commit\)"):
        set_baseline(results, "builds", runs)


def test_compare_last_n_is_the_newest_run_against_the_ones_before(tmp_path: Path) -> None:
    results = tmp_path / "results"
    older = [make_run(results, seed=20 + i, cells=ONE_CELL, seconds=5, profile_name="checkout").name
             for i in range(3)]
    newest = make_run(results, seed=24, cells=ONE_CELL, seconds=5, profile_name="checkout", latency_ms=6.0).name
    r = ["--results", str(results), "--quiet"]
    out = tmp_path / "cmp.json"
    assert _cli(["compare", "--last", "4", "--out", str(out), *r]) == 1
    data = json.loads(out.read_text())
    assert data["baseline_runs"] == older and {v["run_id"] for v in data["verdicts"]} == {newest}
    # With RUNs, the newest N other runs are their baseline set.
    assert _cli(["compare", newest, "--last", "3", "--out", str(out), *r]) == 1
    assert json.loads(out.read_text())["baseline_runs"] == older
    with pytest.raises(UsageError, match="give N >= 2"):
        _cli(["compare", "--last", "1", *r])
