"""The runs list and its JSON twin, through Flask's test client."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp.web import create_app

XSS = "<script>alert(1)</script>"


def clone_run(src: Path, results: Path, *, index: int, profile: str, status: str, backend: str) -> str:
    """A cheap copy of a synthetic run under a new id (make_run writes real hlogs and is slow)."""
    start = datetime(2026, 2, 1, tzinfo=UTC) + timedelta(hours=index)
    run_id = f"{start:%Y%m%dT%H%M%S}000Z-{re.sub('[^a-z0-9]+', '-', profile.lower()).strip('-')}-{index:04x}"
    dst = results / run_id
    shutil.copytree(src, dst)
    for name in ("manifest.json", "summary.json"):
        doc = json.loads((dst / name).read_text())
        doc.update(run_id=run_id, profile_name=profile, status=status)
        if name == "manifest.json":
            doc["started_at"] = start.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            for cell in doc["cells"]:
                cell["backend"] = backend
        else:
            for i, cell in enumerate(doc["cells"].values()):
                cell["backend"] = backend
                cell["total"]["ops_per_s"] = float(index) / (i + 1)  # the first cell is the busiest
        (dst / name).write_text(json.dumps(doc))
    return run_id


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 runs: 3 profiles x 2 backends, some interrupted/failed, plus one corrupt directory."""
    results = tmp_path_factory.mktemp("many")
    template = make_run(tmp_path_factory.mktemp("tpl"), seconds=2, seed=3)
    for i in range(120):
        status = "failed" if i % 10 == 0 else "interrupted" if i % 10 == 1 else "complete"
        clone_run(template, results, index=i, profile=["alpha", "beta", "gamma"][i % 3], status=status,
                  backend=["datastore", "bigtable"][i % 2])
    bad = results / "20260301T000000000Z-broken-beef"
    bad.mkdir()
    (bad / "manifest.json").write_text('{"schema": 1, "run_id": "2026')  # truncated mid-write
    return results


@pytest.fixture(scope="module")
def client(many: Path):  # type: ignore[no-untyped-def]
    return create_app(many).test_client()


def test_index_and_runs_are_the_same_page(client) -> None:  # type: ignore[no-untyped-def]
    a, b = client.get("/"), client.get("/runs")
    assert a.status_code == b.status_code == 200
    assert a.data == b.data
    assert b"121 of 121" in a.data


def test_json_twin_has_rows_paging_and_facets(client) -> None:  # type: ignore[no-untyped-def]
    data = client.get("/runs.json").get_json()
    assert data["total"] == 121 and data["pages"] == 3 and data["page_size"] == 50
    assert len(data["runs"]) == 50
    assert data["facets"]["profile"] == ["alpha", "beta", "gamma"]
    assert data["facets"]["backend"] == ["bigtable", "datastore"]
    assert {"complete", "failed", "interrupted", "corrupt"} <= set(data["facets"]["status"])
    # newest first by default
    started = [r["started_at"] for r in data["runs"] if r["started_at"]]
    assert started == sorted(started, reverse=True)


def test_pagination_covers_every_run_once(client) -> None:  # type: ignore[no-untyped-def]
    seen = []
    for page in (1, 2, 3):
        seen += [r["run_id"] for r in client.get(f"/runs.json?page={page}").get_json()["runs"]]
    assert len(seen) == len(set(seen)) == 121
    html = client.get("/runs?page=2").data.decode()
    assert "page 2 of 3" in html and "previous" in html and "next" in html
    assert client.get("/runs.json?page=4").status_code == 400
    assert client.get("/runs.json?page=x").get_json()["error"].startswith("page must be")


def test_filters_by_profile_backend_status_and_date(client) -> None:  # type: ignore[no-untyped-def]
    rows = client.get("/runs.json?profile=beta&backend=bigtable").get_json()["runs"]
    assert rows and all(r["profile_name"] == "beta" and r["backends"] == ["bigtable"] for r in rows)
    assert len(rows) == 20  # i % 3 == 1 and i % 2 == 1 -> i % 6 == 1
    failed = client.get("/runs.json?status=failed").get_json()
    assert failed["total"] == 12 and all(r["status"] == "failed" for r in failed["runs"])
    # index 0..23 start on 2026-02-01, 24..47 on 2026-02-02
    day = client.get("/runs.json?from=2026-02-02&to=2026-02-02").get_json()
    assert day["total"] == 24
    assert all(r["started_at"].startswith("2026-02-02") for r in day["runs"])
    assert client.get("/runs.json?strategy=random").get_json()["total"] == 120
    assert client.get("/runs.json?strategy=nosuch").get_json()["total"] == 0
    assert client.get("/runs.json?from=yesterday").status_code == 400


def test_filter_form_keeps_selection(client) -> None:  # type: ignore[no-untyped-def]
    html = client.get("/runs?profile=gamma").data.decode()
    assert '<option value="gamma" selected>' in html
    assert "40 of 121" in html


def test_sorting_by_columns(client) -> None:  # type: ignore[no-untyped-def]
    rows = client.get("/runs.json?sort=ops_per_s&order=asc").get_json()["runs"]
    values = [r["ops_per_s"] for r in rows if r["ops_per_s"] is not None]
    assert values == sorted(values) and values[0] == 0.0
    rows = client.get("/runs.json?sort=ops_per_s").get_json()["runs"]
    # the busiest cell's rate, never a sum over cells that ran one after another (119 + 59.5);
    # numeric columns default to descending
    assert rows[0]["ops_per_s"] == 119.0
    rows = client.get("/runs.json?sort=profile").get_json()["runs"]
    assert rows[0]["profile_name"] == "alpha"
    assert client.get("/runs.json?sort=bogus").status_code == 400
    # headers link to the opposite order of the active sort
    html = client.get("/runs?sort=ops_per_s&order=desc").data.decode()
    assert "sort=ops_per_s&amp;order=asc" in html


def test_corrupt_run_is_a_warning_row_not_a_crash(client) -> None:  # type: ignore[no-untyped-def]
    rows = client.get("/runs.json?status=corrupt").get_json()["runs"]
    assert [r["run_id"] for r in rows] == ["20260301T000000000Z-broken-beef"]
    assert rows[0]["corrupt"] and any("not valid JSON" in w for w in rows[0]["warnings"])
    html = client.get("/runs").data.decode()
    row = html[html.index("corrupt-row"):]
    assert "20260301T000000000Z-broken-beef" in row[:600] and "not valid JSON" in row[:900]


def test_interrupted_and_failed_runs_are_labelled(client) -> None:  # type: ignore[no-untyped-def]
    html = client.get("/runs?status=interrupted").data.decode()
    assert 'class="badge status-interrupted">interrupted<' in html
    html = client.get("/runs?status=failed").data.decode()
    assert 'class="badge status-failed">failed<' in html


def test_empty_results_dir(tmp_path: Path) -> None:
    client = create_app(tmp_path).test_client()
    assert b"No runs" in client.get("/").data
    assert client.get("/runs.json").get_json()["total"] == 0
    missing = create_app(tmp_path / "nope").test_client()
    assert missing.get("/runs.json").get_json()["runs"] == []


def test_profile_names_are_escaped(tmp_path: Path) -> None:
    make_run(tmp_path, profile_name=XSS, seconds=2)
    client = create_app(tmp_path).test_client()
    html = client.get("/runs").data.decode()
    assert XSS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert client.get("/runs.json").get_json()["runs"][0]["profile_name"] == XSS


def test_security_headers(client) -> None:  # type: ignore[no-untyped-def]
    resp = client.get("/runs")
    csp = resp.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    # no inline <script> with code and no inline style attributes anywhere on the page
    html = resp.data.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", html)
    assert " style=" not in html


def test_vendored_chart_library_is_served(client) -> None:  # type: ignore[no-untyped-def]
    js = client.get("/static/uPlot.iife.min.js")
    assert js.status_code == 200 and b"uPlot" in js.data and len(js.data) > 20_000
    assert client.get("/static/uPlot.min.css").status_code == 200
    assert client.get("/static/keyramp.js").status_code == 200
    html = client.get("/runs").data.decode()
    assert "http://" not in html and "https://" not in html  # no CDN


def test_non_run_directories_are_not_listed(tmp_path: Path) -> None:
    # `keyramp run profiles/scenarios/` writes results/reports/scenarios-<stamp>/ (older
    # versions: results/scenarios-<stamp>/, next to the runs).
    make_run(tmp_path, profile_name="listed", seconds=2)
    for report in (tmp_path / "scenarios-20261121T170000Z", tmp_path / "reports" / "scenarios-20261121T170000Z"):
        report.mkdir(parents=True)
        (report / "report.json").write_text("{}")
    rows = create_app(results_dir=tmp_path).test_client().get("/runs.json").get_json()["runs"]
    assert [r["profile_name"] for r in rows] == ["listed"]


def test_the_list_shows_each_runs_worst_forecast_and_its_workload_errors(tmp_path: Path) -> None:
    launch = make_run(tmp_path, profile_name="launch", seconds=2, seed=21,
                      cells=(("datastore", "sequential"), ("datastore", "random"), ("bigtable", "random")))
    summary = json.loads((launch / "summary.json").read_text())
    for cell, verdict in zip(summary["cells"].values(), ("hotspot", "ok", "at_risk"), strict=True):
        cell["forecast"] = {"modelled": True, "verdict": verdict}
    workload = next(iter(summary["cells"].values()))
    workload["thresholds"] = [{"name": "workload_errors", "op": "<=", "limit": 0, "value": 3, "passed": False,
                               "verdict": "fail"}]
    (launch / "summary.json").write_text(json.dumps(summary))
    plain = make_run(tmp_path, profile_name="plain", seconds=2, seed=22)
    client = create_app(tmp_path).test_client()
    rows = {r["run_id"]: r for r in client.get("/runs.json").get_json()["runs"]}
    assert rows[launch.name]["forecast"] == {"verdict": "hotspot", "verdict_class": "hotspot",
                                             "text": "hotspot · 1 of 3 cells", "cells": 1, "of": 3}
    assert rows[launch.name]["workload_error_cells"] == ["c00-datastore-sequential"]
    assert rows[plain.name]["forecast"] is None and rows[plain.name]["workload_error_cells"] == []
    html = client.get("/runs").data.decode()
    row = html[html.index(launch.name):]
    row = row[: row.index("</tr>")]
    assert "hotspot · 1 of 3 cells" in row and 'class="badge fail workload-errors"' in row
    other = html[html.index(plain.name):]
    assert "workload-errors" not in other[: other.index("</tr>")]
