"""A cell's own page (``/runs/<id>/cells/<cell>``), its JSON twin, and its data to download."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from _synthetic import make_run

from keyramp.results._read import read_keys, read_timeseries
from keyramp.web import create_app

CELL = "c00-datastore-sequential"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("web-cell")
    run = make_run(root, profile_name="cells", seconds=8, seed=11, error_rate={"insert": 0.05})
    summary = json.loads((run / "summary.json").read_text())
    summary["cells"][CELL]["thresholds"] = [
        {"name": "insert.p99_ms", "op": "<", "limit": 1.0, "value": 9.0, "passed": False, "verdict": "fail"}]
    summary["cells"][CELL]["warmup_s"] = 12.0
    (run / "summary.json").write_text(json.dumps(summary))
    make_run(root, profile_name="running", seconds=4, seed=12, status="running")  # its last cell in parts
    make_run(root, profile_name="old", seconds=4, seed=13, fmt="csv")  # a run written as CSV
    return root


def _run(results: Path, profile: str) -> str:
    return next(p.name for p in results.iterdir() if f"-{profile}-" in p.name)


def test_the_cell_page_answers_first_and_its_twin_has_the_same_answer(results: Path) -> None:
    run = _run(results, "cells")
    client = create_app(results).test_client()
    html = client.get(f"/runs/{run}/cells/{CELL}").data.decode()
    # the answer (the cell's row) before the charts and the evidence; links back to the run
    assert html.index('id="answer"') < html.index('class="charts"') < html.index("cell-summary")
    assert f'href="/runs/{run}#cell-{CELL}"' in html and f'href="/runs/{run}/cells/c01-datastore-random"' in html
    assert 'data-kind="distribution"' in html and f'data-series-src="/runs/{run}/series/{CELL}.json"' in html
    twin = client.get(f"/runs/{run}/cells/{CELL}.json").get_json()
    assert twin["run"]["run_id"] == run and twin["cell"]["id"] == CELL and twin["answer"]["id"] == CELL
    assert twin["answer"]["thresholds"]["text"] == "1 of 1 failed: insert.p99_ms"
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert "1 of 1 failed: insert.p99_ms" in text
    # what its charts draw: the threshold on the insert latency chart, the warm-up marker, the distribution
    charts = twin["charts"]
    (line,) = charts["ops"]["insert"]["thresholds"]
    assert line["chart"] == "latency" and line["limit"] == 1.0 and line["breaches"] == [[0, 8.0]]
    assert charts["markers"][0]["kind"] == "warmup" and set(charts["distribution"]) == {"insert", "read", "*"}
    assert [d["url"] for d in twin["downloads"]] == [f"/runs/{run}/data/{k}/{CELL}.{f}" for k, f in (
        ("timeseries", "csv"), ("timeseries", "parquet"), ("keys", "csv"), ("keys", "parquet"))]
    for d in twin["downloads"]:
        assert f'href="{d["url"]}"' in html
    # the run page's answer links each cell to its page; a cell that is not in the run is a 404 (page and twin)
    run_html = client.get(f"/runs/{run}").data.decode()
    assert f'<a class="cell-link" href="/runs/{run}/cells/{CELL}">{CELL}</a>' in run_html
    assert client.get(f"/runs/{run}/cells/c09-nope").status_code == 404
    assert client.get(f"/runs/{run}/cells/c09-nope.json").get_json()["status"] == 404


def test_downloads_are_the_recorded_rows_in_both_formats(results: Path) -> None:
    client = create_app(results).test_client()
    for profile in ("cells", "running", "old"):  # compacted, still in parts, written as CSV
        run = _run(results, profile)
        cell = "c01-datastore-random"
        ts, keys = read_timeseries(results / run, cell=cell), read_keys(results / run, cell=cell)
        for kind, rows in (("timeseries", ts), ("keys", keys)):
            parquet = client.get(f"/runs/{run}/data/{kind}/{cell}.parquet")
            assert parquet.status_code == 200, (profile, kind)
            assert parquet.headers["Content-Disposition"] == f"attachment; filename={run}-{cell}-{kind}.parquet"
            assert pq.read_table(io.BytesIO(parquet.data)).to_pylist() == rows.to_pylist(), (profile, kind)
            csv = client.get(f"/runs/{run}/data/{kind}/{cell}.csv")
            assert csv.status_code == 200 and csv.mimetype == "text/csv"
            back = pacsv.read_csv(io.BytesIO(csv.data))
            assert back.num_rows == rows.num_rows and back.column("cell").to_pylist() == [cell] * rows.num_rows
            if kind == "timeseries":  # the layout of `keyramp export --csv`: every column, classes as text
                assert back.column_names == rows.column_names
                assert back.column("count").to_pylist() == rows.column("count").to_pylist()


@pytest.mark.parametrize("path", [
    "data/timeseries/..%2Fmanifest.json.csv", "data/timeseries/..%2F..%2Fetc%2Fpasswd.csv",
    "data/summary/c00-datastore-sequential.csv", "data/keys/c00-datastore-sequential.json",
    "data/keys/c09-none.parquet", "data/keys/C00-X.csv"])
def test_downloads_are_typed_and_never_leave_the_run_directory(results: Path, path: str) -> None:
    client = create_app(results).test_client()
    assert client.get(f"/runs/{_run(results, 'cells')}/{path}").status_code == 404
    assert client.get(f"/runs/..%2F..%2Fetc/{path}").status_code == 404


def test_a_running_cell_is_downloaded_from_its_parts_as_one_file(results: Path) -> None:
    run = _run(results, "running")
    cell = "c01-datastore-random"
    assert (results / run / "timeseries" / f"{cell}.parts").is_dir()  # not compacted yet
    resp = create_app(results).test_client().get(f"/runs/{run}/data/timeseries/{cell}.parquet")
    table = pq.read_table(io.BytesIO(resp.data))
    assert table.num_rows == read_timeseries(results / run, cell=cell).num_rows > 0
    assert table.schema.field("second").type == pa.int32()  # the run format's schema, as in a compacted file
