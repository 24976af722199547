"""The run page and its JSON twin, key-space files, 404s, escaping and caching."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _synthetic import make_run

from keyramp.results._forecast_doc import CellForecast
from keyramp.results._parquet import TIMESERIES_SCHEMA
from keyramp.web import create_app

XSS = "<script>alert(1)</script>"
KEYSPACE = {"hottest_1pct_share": 0.74, "hottest_bucket_share": 0.41, "gini": 0.9, "entropy_norm": 0.35,
            "append_fraction": 0.98, "moving_hotspot": True, "samples": 667, "range_from": "profile",
            "model": {"modelled": True, "peak_tablets": 3, "max_throttled_fraction": 0.12,
                      "max_added_latency_ms": 0.4}}
# the smallest valid PNG (1x1), enough to check the route serves bytes unchanged
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5f0000000049454e44ae426082")


@pytest.fixture(scope="module")
def _template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run the page tests read, written once: a test gets its own copy (some damage it)."""
    path = make_run(tmp_path_factory.mktemp("web-run"), profile_name=XSS, seconds=20, seed=4, keyspace=KEYSPACE,
                    error_rate={"insert": 0.05}, status="interrupted")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["lint"] = [{"rule": "BP-KEY-1", "severity": "warning", "message": f"monotonic ids {XSS}", "cell": None}]
    manifest["profile"]["description"] = "desc <b>bold</b>"
    manifest["profile"]["rules"] = ["BP-KEY-1"]
    (path / "manifest.json").write_text(json.dumps(manifest))
    summary = json.loads((path / "summary.json").read_text())
    summary["cells"]["c00-datastore-sequential"]["thresholds"] = [
        {"name": "insert.p99_ms", "op": "<", "limit": 1.0, "value": 4.2, "passed": False}]
    summary["thresholds_passed"] = False
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "keyspace").mkdir()
    (path / "keyspace" / "c00-datastore-sequential.png").write_bytes(PNG)
    (path / "keyspace" / "c01-datastore-random.json").write_text(json.dumps({"counts": [[1, 2], [3, 4]]}))
    return path


@pytest.fixture()
def run_dir(_template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(_template, tmp_path / _template.name))


@pytest.fixture(scope="module")
def _small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("web-small"), seconds=5, seed=5)


@pytest.fixture()
def client(run_dir: Path):  # type: ignore[no-untyped-def]
    return create_app(run_dir.parent).test_client()


def test_run_page_shows_manifest_cells_and_summary(client, run_dir: Path) -> None:  # type: ignore[no-untyped-def]
    resp = client.get(f"/runs/{run_dir.name}")
    assert resp.status_code == 200
    html = resp.data.decode()
    for text in (run_dir.name, "c00-datastore-sequential", "c01-datastore-random", "Manifest", "seed",
                 'class="badge status-interrupted">interrupted<', "reason: synthetic interrupted",
                 "threshold failed", "insert.p99_ms", 'class="badge fail">fail<', "BP-KEY-1",
                 "hottest 1 % of the key range", "tablets (peak)", "UNAVAILABLE"):
        assert text in html, text
    assert 'data-kind="latency"' in html and 'data-kind="throughput"' in html and 'data-kind="errors"' in html


def test_run_json_twin_matches_page_data(client, run_dir: Path) -> None:  # type: ignore[no-untyped-def]
    data = client.get(f"/runs/{run_dir.name}.json").get_json()
    run = data["run"]
    assert run["run_id"] == run_dir.name and run["profile_name"] == XSS and run["status"] == "interrupted"
    cells = {c["id"]: c for c in run["cells"]}
    seq = cells["c00-datastore-sequential"]
    assert seq["identity"] == "datastore-sequential"
    assert [o["op"] for o in seq["operations"]] == ["insert", "read"]
    assert seq["operations"][0]["errors"] > 0 and seq["keyspace_png"] and not seq["keyspace_json"]
    assert [m["field"] for m in seq["keyspace"]["measured"]] == [
        "hottest_1pct_share", "moving_hotspot", "append_fraction", "gini", "entropy_norm", "samples"]
    assert [m["field"] for m in seq["keyspace"]["modelled"]] == [
        "max_throttled_fraction", "peak_tablets", "max_added_latency_ms"]
    assert seq["keyspace_fields"] == KEYSPACE  # the summary's own fields stay in the twin
    assert cells["c01-datastore-random"]["keyspace_json"]
    series = data["series"]["c00-datastore-sequential"]
    assert set(series) == {"*", "insert", "read"}
    total = series["*"]
    assert len(total["t"]) == 20 and total["bucket_s"] == 1
    assert total["target_ops_per_s"][0] == 400.0
    assert sum(total["error_classes"]["UNAVAILABLE"]) == seq["operations"][0]["errors"]


def test_page_defers_chart_data_to_the_cell_series_endpoint(client, run_dir: Path) -> None:  # type: ignore[no-untyped-def]
    html = client.get(f"/runs/{run_dir.name}").data.decode()
    assert '"p50_ms"' not in html and '"t":' not in html  # no series in the page: it never waits for the CSV parse
    src = f"/runs/{run_dir.name}/series/c00-datastore-sequential.json"
    assert f'data-series-src="{src}"' in html
    resp = client.get(src)
    assert resp.status_code == 200 and resp.mimetype == "application/json" and resp.headers["ETag"]
    doc = resp.get_json()
    assert doc["cell"] == "c00-datastore-sequential" and set(doc["ops"]) == {"*", "insert", "read"}
    # the same series as the complete JSON twin
    assert doc["ops"] == client.get(f"/runs/{run_dir.name}.json").get_json()["series"]["c00-datastore-sequential"]
    again = client.get(src, headers={"If-None-Match": resp.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""


def test_cell_series_endpoint_rejects_bad_cells_and_runs(client, run_dir: Path) -> None:  # type: ignore[no-untyped-def]
    assert client.get(f"/runs/{run_dir.name}/series/c99-none.json").get_json()["ops"] == {}
    for url in (f"/runs/{run_dir.name}/series/..%2Fmanifest.json", f"/runs/{run_dir.name}/series/A B.json",
                "/runs/20990101T000000000Z-nope-0000/series/c00-datastore-sequential.json",
                "/runs/..%2F..%2Fetc/series/c00.json"):
        resp = client.get(url)
        assert resp.status_code == 404, url


def test_run_without_timeseries_says_so(client, run_dir: Path) -> None:  # type: ignore[no-untyped-def]
    shutil.rmtree(run_dir / "timeseries")
    html = client.get(f"/runs/{run_dir.name}").data.decode()
    assert "No time series" in html and "data-series-src" not in html
    assert client.get(f"/runs/{run_dir.name}/series/c00-datastore-sequential.json").get_json()["ops"] == {}


def test_run_supplied_strings_are_escaped(client, run_dir: Path) -> None:  # type: ignore[no-untyped-def]
    html = client.get(f"/runs/{run_dir.name}").data.decode()
    assert XSS not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;bold&lt;/b&gt;" in html


@pytest.mark.parametrize("url", [
    "/runs/20990101T000000000Z-nope-0000", "/runs/20990101T000000000Z-nope-0000.json", "/runs/..",
    "/runs/..%2F..%2Fetc%2Fpasswd", "/runs/%2e%2e", "/runs/%2e%2e.json", "/runs/...json", "/runs/.hidden",
    "/runs/a%00b",
])
def test_unknown_and_traversal_ids_are_404(client, url: str) -> None:  # type: ignore[no-untyped-def]
    assert client.get(url).status_code == 404


def test_store_refuses_traversal_directly(run_dir: Path) -> None:
    from werkzeug.exceptions import NotFound

    store = create_app(run_dir.parent).extensions["keyramp_store"]
    for bad in ("..", "../x", "/etc", run_dir.name + "/..", ""):
        with pytest.raises(NotFound):
            store.run_path(bad)
    assert store.keyspace_file(run_dir, "../manifest", "json") is None
    assert store.keyspace_file(run_dir, "c00-datastore-sequential", "csv") is None


def test_keyspace_files_are_served_through_validated_route(client, run_dir: Path) -> None:  # type: ignore[no-untyped-def]
    png = client.get(f"/runs/{run_dir.name}/keyspace/c00-datastore-sequential.png")
    assert png.status_code == 200 and png.mimetype == "image/png" and png.data == PNG
    js = client.get(f"/runs/{run_dir.name}/keyspace/c01-datastore-random.json")
    assert js.status_code == 200 and js.get_json() == {"counts": [[1, 2], [3, 4]]}
    assert client.get(f"/runs/{run_dir.name}/keyspace/c01-datastore-random.png").status_code == 404
    assert client.get(f"/runs/{run_dir.name}/keyspace/..%2F..%2Fmanifest.json").status_code == 404
    assert client.get(f"/runs/{run_dir.name}/keyspace/c00-datastore-sequential.txt").status_code == 404
    html = client.get(f"/runs/{run_dir.name}").data.decode()
    assert f'src="/runs/{run_dir.name}/keyspace/c00-datastore-sequential.png"' in html
    assert f'data-heatmap-src="/runs/{run_dir.name}/keyspace/c01-datastore-random.json"' in html


@pytest.mark.parametrize("damage", ["truncate-summary", "no-summary", "garbage-timeseries", "garbage-csv-timeseries",
                                    "no-timeseries", "summary-wrong-types"])
def test_damaged_runs_render_with_warnings(_small: Path, tmp_path: Path, damage: str) -> None:
    path = Path(shutil.copytree(_small, tmp_path / _small.name))
    if damage == "truncate-summary":
        text = (path / "summary.json").read_text()
        (path / "summary.json").write_text(text[: len(text) // 2])
    elif damage == "no-summary":
        (path / "summary.json").unlink()
    elif damage == "garbage-timeseries":
        (path / "timeseries" / "c00-datastore-sequential.parquet").write_bytes(b"PAR1\xff\xfe,1,2,3\nnot,a,number")
    elif damage == "garbage-csv-timeseries":  # a run written before Parquet
        shutil.rmtree(path / "timeseries")
        (path / "timeseries.csv").write_bytes(b"cell,op\n\xff\xfe,1,2,3\nnot,a,number,x\n")
    elif damage == "no-timeseries":
        shutil.rmtree(path / "timeseries")
    else:
        (path / "summary.json").write_text(json.dumps({"schema": 1, "cells": {"c00-x-y": {
            "operations": {"insert": {"count": "many", "latency_ms": [1, 2]}}, "keyspace": [1], "thresholds": "x"}}}))
    client = create_app(tmp_path).test_client()
    page = client.get(f"/runs/{path.name}")
    assert page.status_code == 200
    assert client.get(f"/runs/{path.name}.json").status_code == 200
    assert client.get("/runs").status_code == 200
    assert client.get(f"/runs/{path.name}/series/c00-datastore-sequential.json").status_code == 200
    if damage in ("truncate-summary", "no-summary", "summary-wrong-types"):
        assert b"This run directory has problems" in page.data


def test_running_run_is_reread_when_files_change(tmp_path: Path) -> None:
    path = make_run(tmp_path, seconds=5, seed=6, status="running")
    app = create_app(tmp_path)
    client = app.test_client()
    assert client.get(f"/runs/{path.name}.json").get_json()["run"]["status"] == "running"
    cell = "c01-datastore-random"  # the cell in progress: its rows are Parquet parts, a part per second
    first = client.get(f"/runs/{path.name}.json").get_json()["series"][cell]["*"]["t"]
    parts = path / "timeseries" / f"{cell}.parts"
    n = len(list(parts.iterdir()))
    row = {"cell": [cell], "op": ["*"], "second": [5], "count": [100], "errors": [0], "p50_ms": [1.0], "p99_ms": [2.0],
           "service_p99_ms": [2.0], "max_ms": [3.0], "target_ops_per_s": [400.0], "late": [0], "dropped": [0],
           "error_classes": [[]], "p95_ms": [1.5], "in_flight": [0.2]}
    pq.write_table(pa.Table.from_pydict(row, schema=TIMESERIES_SCHEMA), parts / f"{n:08d}-{n:08d}.parquet")
    second = client.get(f"/runs/{path.name}.json").get_json()["series"][cell]["*"]["t"]
    assert len(second) == len(first) + 1
    etag = client.get(f"/runs/{path.name}/series/{cell}.json").headers["ETag"]
    assert client.get(f"/runs/{path.name}/series/{cell}.json", headers={"If-None-Match": etag}).status_code == 304
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["status"] = "interrupted"
    (path / "manifest.json").write_text(json.dumps(manifest))
    os.utime(path / "manifest.json", ns=(1, 2_000_000_000_000_000_000))
    assert client.get(f"/runs/{path.name}.json").get_json()["run"]["status"] == "interrupted"


def test_run_page_shows_the_launch_forecast_with_its_sources(tmp_path: Path) -> None:
    from keyramp.forecast import forecast_cell
    from keyramp.profile._profile import parse_profile

    path = make_run(tmp_path, seconds=5, seed=6)
    profile = parse_profile({"name": "f", "backend": "datastore", "workload": {"ops": {"insert": 1.0}},
                             "keys": {"strategy": "sequential"},
                             "launch": {"kind": "constant", "rate": 3000, "duration": "20m"}})
    assert profile.launch is not None
    fc = forecast_cell(backend="datastore", strategy="sequential", settings=profile, launch=profile.launch,
                       cell_summary={"operations": {"insert": {"count": 1000}}})
    fc["projection"]["why"] = XSS  # text from the file is escaped
    summary = json.loads((path / "summary.json").read_text())
    summary["cells"]["c00-datastore-sequential"]["forecast"] = fc
    (path / "summary.json").write_text(json.dumps(summary))
    client = create_app(tmp_path).test_client()
    html = client.get(f"/runs/{path.name}").data.decode()
    assert "Launch forecast" in html and 'class="badge verdict-hotspot"' in html and "hotspot " in html
    assert "constant 3000 ops/s for 20m" in html
    assert 'href="https://firebase.google.com/docs/firestore/solutions/shard-timestamp"' in html
    assert '<polyline class="mid" points="' in html and "split_delay_s" in html
    assert XSS not in html and "&lt;script&gt;" in html
    # Which keys were projected, in words (a template once printed the dict's own keys() method).
    assert "Keys regenerated" in html and "Keys regenerated: keys regenerated" not in html
    assert "built-in method" not in html
    data = client.get(f"/runs/{path.name}.json").get_json()
    cells = {c["id"]: c for c in data["run"]["cells"]}
    assert cells["c00-datastore-sequential"]["forecast"]["verdict"] == "hotspot"
    assert cells["c00-datastore-sequential"]["forecast"]["projection"]["keys_from"] == "regenerated"
    assert cells["c01-datastore-random"]["forecast"] is None


def test_keyspace_figures_are_an_explained_table_with_verdicts(client, run_dir: Path) -> None:  # type: ignore[no-untyped-def]
    import re

    html = client.get(f"/runs/{run_dir.name}").data.decode()
    table = html.split('class="data compact keyspace-metrics"')[1].split("</table>")[0]
    rows = {m.group(1): m.group(2) for m in re.finditer(r'<tr data-field="(\w+)">(.*?)</tr>', table, re.S)}
    # each row: a plain-words label, the value judged against its good/bad range, and what it means
    assert "74 %" in rows["hottest_1pct_share"] and "verdict-bad" in rows["hottest_1pct_share"]
    assert "one hotspot takes the load" in rows["hottest_1pct_share"]
    assert ">yes<" in rows["moving_hotspot"] and "verdict-bad" in rows["moving_hotspot"]
    assert "0.35" in rows["entropy_norm"] and "verdict-bad" in rows["entropy_norm"]
    assert "12 %" in rows["max_throttled_fraction"] and "verdict-bad" in rows["max_throttled_fraction"]
    assert "0.4 ms" in rows["max_added_latency_ms"] and "verdict-good" in rows["max_added_latency_ms"]
    assert "hottest_bucket_share" not in html  # no dump of field names
    # The key-space headline is the one the run table prints (the same words everywhere).
    from keyramp.keyspace import keyspace_headline

    cells = json.loads((run_dir / "summary.json").read_text())["cells"]
    heads = {keyspace_headline(c.get("keyspace")) for c in cells.values()} - {"-"}
    assert heads and all(f">{h}</span></h4>" in html for h in heads), heads
    assert table.index("modelled") > table.index('data-field="samples"')  # modelled rows apart, labelled


def test_explained_keyspace_holds_the_hot_window_against_the_modelled_band() -> None:
    from keyramp.results import KeyspaceFigures
    from keyramp.web._keyspace import explain_keyspace

    hot = explain_keyspace(KeyspaceFigures.from_json({
        "hottest_1pct_share": 0.7, "hottest_1pct_ops_per_s": 2100.0, "append_points": 1,
        "hot_window_vs_capacity": "above the band",
        "tablet_capacity_ops_per_s": {"low": 500, "mid": 1000, "high": 1500, "modelled": True}}))
    assert hot is not None
    measured = {m["field"]: m for m in hot["measured"]}
    assert measured["hottest_1pct_ops_per_s"]["text"] == "2,100 ops/s"
    assert measured["hottest_1pct_ops_per_s"]["verdict"] == "bad" and measured["append_points"]["verdict"] == "bad"
    (band,) = hot["modelled"]
    assert band["text"] == "above the band (500–1,500 ops/s)" and band["verdict"] == "bad"
    spread = explain_keyspace(KeyspaceFigures.from_json({"hottest_1pct_ops_per_s": 3.0, "append_points": None,
                                                         "hot_window_vs_capacity": "below the band"}))
    assert spread is not None
    assert {m["field"]: (m["text"], m["verdict"]) for m in spread["measured"]} == {
        "hottest_1pct_ops_per_s": ("3 ops/s", "good"), "append_points": ("none (spread)", "good")}


def test_explained_keyspace_judges_spread_keys_good() -> None:
    from keyramp.results import KeyspaceFigures
    from keyramp.web._keyspace import explain_keyspace

    spread = explain_keyspace(KeyspaceFigures.from_json({
        "hottest_1pct_share": 0.012, "moving_hotspot": False, "append_fraction": 0.004, "gini": 0.13,
        "entropy_norm": 0.99, "samples": 4000, "model": {"max_throttled_fraction": 0.0, "peak_tablets": 4}}))
    assert spread is not None
    assert {m["field"]: m["verdict"] for m in spread["measured"]} == {
        "hottest_1pct_share": "good", "moving_hotspot": "good", "append_fraction": "good", "gini": "good",
        "entropy_norm": "good", "samples": ""}
    assert {m["field"]: m["verdict"] for m in spread["modelled"]} == {"max_throttled_fraction": "good",
                                                                       "peak_tablets": ""}
    assert explain_keyspace(KeyspaceFigures()) is None and explain_keyspace(None) is None


def test_a_cell_without_keys_says_why() -> None:
    from keyramp.profile._resolved import read_settings
    from keyramp.results._summary import CellSummary
    from keyramp.web._model import _no_keys_reason

    failed = CellSummary.from_json({"total": {"count": 2000, "errors": 2000, "errors_by_class": {
        "PERMISSION_DENIED": {"count": 1990}, "UNAVAILABLE": {"count": 10}}}})
    assert _no_keys_reason(failed, None) == ("No sampled keys: all 2,000 operations failed (most often "
                                           "PERMISSION_DENIED ×1,990), so no key was written or read.")
    assert _no_keys_reason(CellSummary.from_json({"probe": {"name": "batch"}}), None).startswith("A probe cell")
    warmup = CellSummary.from_json({"total": {"count": 0}, "warmup_failure": {
        "error_class": "CLIENT_KeyError", "message": "KeyError: 'sku'"}})
    assert "stopped in its warm-up, where every operation raised CLIENT_KeyError KeyError: 'sku'" in _no_keys_reason(
        warmup, None)
    off = CellSummary.from_json({"total": {"count": 50, "errors": 0}})
    assert "key sampling was off" in _no_keys_reason(off, read_settings({"workload": {"key_samples_per_s": 0}}))
    assert "key sampling was off" not in _no_keys_reason(off, read_settings({"workload": {"key_samples_per_s": 100}}))


def test_the_forecast_chart_has_axes_and_an_ok_cell_none() -> None:
    from keyramp.web._forecast import forecast_view

    def forecast_view_of(doc: dict[str, Any]) -> dict[str, Any] | None:
        return forecast_view(CellForecast.from_json(doc))

    timeline = {"t": [0.0, 600.0, 1200.0], "throttled": {"favourable": [0.0, 0.0, 0.0], "mid": [0.0, 0.2, 0.1],
                                                         "unfavourable": [0.1, 0.4, 0.3]}}
    hot = forecast_view_of({"verdict": "at_risk-hotspot", "throttled_fraction": {"low": 0.1, "mid": 0.2, "high": 0.4},
                         "added_p99_ms": {"low": 5.0, "mid": 50.0, "high": 919.0}, "timeline": timeline})
    assert hot is not None and hot["verdict_class"] == "at_risk-hotspot" and hot["no_throttling"] is None
    chart = hot["chart"]
    # the axis ends at the next step above 40 %, ticked in round steps; the time axis in one unit
    assert [t["text"] for t in chart["y_ticks"]] == ["0 %", "10 %", "20 %", "30 %", "40 %", "50 %"]
    assert [t["text"] for t in chart["x_ticks"]] == ["0", "5 min", "10 min", "15 min", "20 min"]
    assert [line["name"] for line in chart["lines"]] == ["favourable", "unfavourable", "mid"]
    assert any(b["name"] == "added_p99_ms" for b in hot["bands"])
    ok = forecast_view_of({"verdict": "ok", "throttled_fraction": {"low": 0.0, "mid": 0.0, "high": 0.0},
                        "peak_throttled_fraction": {"low": 0.0, "mid": 0.0, "high": 0.0},
                        "added_p99_ms": {"low": 5.0, "mid": 50.0, "high": 919.0}, "timeline": timeline})
    assert ok is not None and ok["chart"] is None and ok["no_throttling"] == "no throttling forecast"
    assert all(b["name"] != "added_p99_ms" for b in ok["bands"])  # the capped queueing of nothing throttled


def test_a_run_against_a_store_model_says_so_on_its_page_and_in_its_json(tmp_path: Path) -> None:
    path = make_run(tmp_path, seconds=5, seed=6)
    target = {"fidelity": "store", "scale": 100.0, "time_scale": 10.0, "point": "mid",
              "description": "store model at scale 1/100, time scale 10, mid point (modelled)"}
    summary = json.loads((path / "summary.json").read_text())
    summary["target"] = target
    cell_id = next(iter(summary["cells"]))
    summary["cells"][cell_id]["store_model"] = {"description": target["description"], "requests": 120,
                                                "modelled": 100, "not_modelled": 20, "undecodable": 0,
                                                "throttled": 40, "throttled_by_cause": {"range": 40},
                                                "throttled_share": 0.4}
    (path / "summary.json").write_text(json.dumps(summary))
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["target"] = target
    (path / "manifest.json").write_text(json.dumps(manifest))
    client = create_app(path.parent).test_client()
    html = client.get(f"/runs/{path.name}").data.decode()
    assert "Target: store model at scale 1/100, time scale 10, mid point (modelled)" in html
    assert "40 of 100 modelled requests throttled (40.0%) (range 40)" in html
    data = client.get(f"/runs/{path.name}.json").get_json()
    assert data["run"]["target_model"] == target["description"]
    plain = make_run(tmp_path / "plain", seconds=5, seed=7)
    assert "Target:" not in create_app(plain.parent).test_client().get(f"/runs/{plain.name}").data.decode()
