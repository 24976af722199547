"""The cross-run queries docs/run-format.md shows (DuckDB, pyarrow) run as documented, and
give the figures keyramp's own reader computes from the same runs."""

from __future__ import annotations

import contextlib
import io
import json
import re
import statistics
from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp.results._read import read_keys, read_timeseries

DOC = Path(__file__).resolve().parents[2] / "docs" / "run-format.md"


def _block(name: str) -> str:
    match = re.search(rf"<!-- doc-query: {name} -->\s*```\w+\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert match, f"docs/run-format.md has no doc-query {name}"
    return match.group(1)


@pytest.fixture(scope="module")
def results_parent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cross-run")
    results = root / "results"
    for seed in (1, 2, 3):  # three complete quickstart runs, slower each time
        make_run(results, seed=seed, seconds=6, profile_name="quickstart", latency_ms={"insert": 1.0 + seed})
    make_run(results, seed=4, seconds=3, profile_name="quickstart", status="interrupted")
    make_run(results, seed=5, seconds=3, profile_name="other")
    return root


def test_last_runs_p99_query_runs_as_documented(results_parent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    duckdb = pytest.importorskip("duckdb")
    monkeypatch.chdir(results_parent)
    rows = duckdb.sql(_block("last-20-runs-p99")).fetchall()
    runs = sorted(p for p in (results_parent / "results").iterdir() if p.is_dir())
    complete = [r for r in runs if "quickstart" in r.name
                and json.loads((r / "summary.json").read_text())["status"] == "complete"]
    assert len(complete) == 3 and [r[0] for r in rows][::2] == [r.name for r in complete]  # 2 cells each, by start
    for run_id, cell, median_p99, worst_p99, ops in rows:
        ts = read_timeseries(results_parent / "results" / run_id, cell=cell, op="insert").to_pylist()
        p99s = [r["p99_ms"] for r in ts if r["count"]]
        assert median_p99 == pytest.approx(statistics.median(p99s)) and worst_p99 == max(p99s)
        assert ops == sum(r["count"] for r in ts)
    by_run = [statistics.mean(r[2] for r in rows if r[0] == run.name) for run in complete]
    assert by_run == sorted(by_run)  # the injected slow-down shows as a trend


def test_exact_p99_query_reads_the_summaries(results_parent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    duckdb = pytest.importorskip("duckdb")
    monkeypatch.chdir(results_parent)
    rows = duckdb.sql(_block("exact-p99-from-summaries")).fetchall()
    want = []
    for path in sorted((results_parent / "results").glob("*/summary.json")):
        summary = json.loads(path.read_text())
        for cell, data in sorted(summary["cells"].items()):
            want.append((summary["run_id"], cell, data["operations"]["insert"]["latency_ms"]["p99"]))
    assert rows == want and len(rows) == 2 * 5


def test_pyarrow_snippet_runs_as_documented(results_parent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(results_parent)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_block("pyarrow-key-samples"), str(DOC), "exec"), {})
    newest = sorted((results_parent / "results").glob("*/keys/*.parquet"))[-1]
    keys = read_keys(newest.parent.parent, cell=newest.stem).to_pylist()
    inserts = [k["key"] for k in keys if k["op"] == "insert"]
    assert out.getvalue().strip() == f"{len(inserts)} insert samples, {len(set(inserts))} distinct keys"
