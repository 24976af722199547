"""The UI in real headless Chromium (Debian's package, never `playwright install`).

Opens the runs list, clicks a run, checks a chart really drew (canvas pixels), opens a
comparison, and asserts no JS console errors and no dialog from a hostile profile name.
Screenshots go to test-artifacts/ (git-ignored).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _browser import CHROMIUM, serve_ui
from _browser import shot as _shot
from _plans import add_plans
from _synthetic import make_run

pytestmark = pytest.mark.browser

XSS = "<script>alert(1)</script>"

if CHROMIUM is None:
    pytest.skip("chromium is not installed (apt-get install -y chromium)", allow_module_level=True)
pytest.importorskip("playwright.sync_api")

# counts pixels that are neither transparent nor white: an empty uPlot canvas has none
_INKED_PIXELS_JS = """(canvas) => {
  const ctx = canvas.getContext('2d');
  const d = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] > 0 && !(d[i] > 245 && d[i + 1] > 245 && d[i + 2] > 245)) n++;
  }
  return n;
}"""

# the canvas pixel of the first bin with exactly one sampled op, and of the first empty bin
_ONE_HIT_AND_EMPTY_JS = """async (el) => {
  const doc = await (await fetch(el.getAttribute('data-heatmap-src'))).json();
  const canvas = el.querySelector('canvas.heatmap');
  const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  const px = (t, b) => { const p = (b * canvas.width + t) * 4; return [d[p], d[p + 1], d[p + 2]]; };
  let one = null, empty = null;
  doc.counts.forEach((row, t) => row.forEach((v, b) => {
    if (v === 1 && !one) one = px(t, b);
    if (v === 0 && !empty) empty = px(t, b);
  }));
  return [one, empty];
}"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser-results")
    first = make_run(root, profile_name="quickstart", seconds=30, seed=1, rate={"insert": 300, "read": 100},
             latency_ms={"insert": 2.0, "read": 1.0}, error_rate={"insert": 0.02, "read": 0.0},
             keyspace={"hottest_bucket_share": 0.41, "gini": 0.93, "modelled": False,
                       "model": {"peak_tablets": 3, "throttled_fraction": 0.12, "modelled": True}},
             thresholds={"insert.p99_ms": 50})
    make_run(root, profile_name="quickstart", seconds=30, seed=2, rate={"insert": 300, "read": 100},
             latency_ms={"insert": 4.0, "read": 1.0})
    hostile = make_run(root, profile_name=XSS, seconds=10, seed=3, status="interrupted")
    manifest = json.loads((hostile / "manifest.json").read_text())
    manifest["lint"] = [{"rule": "BP-KEY-1", "severity": "warning", "message": XSS, "cell": None}]
    (hostile / "manifest.json").write_text(json.dumps(manifest))
    summary = json.loads((hostile / "summary.json").read_text())
    cell = next(iter(summary["cells"].values()))  # a workload exception whose message is hostile too
    cell["total"]["errors_by_class"]["CLIENT_KeyError"] = {
        "count": 9, "op": "insert", "message": f"KeyError: {XSS}", "where": "/app/orders.py:31",
        "traceback": ["/app/orders.py:12 in insert: return price_of(order)", f"/app/orders.py:31 in price_of: {XSS}"]}
    (hostile / "summary.json").write_text(json.dumps(summary))
    _gate(first)
    _keyspace(first, png=True)
    _keyspace(hostile, png=False)  # JSON only: the page draws it on a canvas
    # a run written as CSV (before the Parquet format): the charts read it the same way
    _stretch_to_one_hour(make_run(root, profile_name="soak", seconds=2, seed=4, fmt="csv"))
    # a run with a forecast (a hotspot cell and an ok cell) and a cell whose every operation failed,
    # twice (the second halves the insert latency), to compare with its forecasts and key space
    _launch_runs(root)
    return root


def _gate(run: Path) -> None:
    """The cell's thresholds as the run evaluated them, and its warm-up: what its charts draw and mark."""
    summary = json.loads((run / "summary.json").read_text())
    cell = summary["cells"]["c00-datastore-sequential"]
    cell["warmup_s"] = 12.0
    cell["thresholds"] = [
        {"name": "insert.p99_ms", "op": "<", "limit": 3.0, "value": 5.1, "passed": False, "verdict": "fail"},
        {"name": "error_rate", "op": "<", "limit": 0.05, "value": 0.01, "passed": True, "verdict": "pass"}]
    summary["thresholds_passed"] = False
    (run / "summary.json").write_text(json.dumps(summary))


#: Key-space figures as the analysis writes them: long floats the views must round, and model
#: constants (step_s) they must leave out.
_RAW_KEYSPACE = {"hottest_1pct_share": 0.7123456789, "gini": 0.9012345678, "entropy_norm": 0.3456789,
                 "append_fraction": 0.9901112484548825, "append_points": 1, "moving_hotspot": True, "samples": 2471,
                 "model": {"modelled": True, "peak_tablets": 3, "max_throttled_fraction": 0.123456789,
                           "max_added_latency_ms": 0.456789, "step_s": 10.0}}


_ONE_OP = {"operations": {"insert": {"count": 1000}}}


def _launch_runs(root: Path) -> None:
    from keyramp.forecast import forecast_cell
    from keyramp.profile._profile import parse_profile

    forecasts = {}
    for strategy in ("sequential", "random"):
        profile = parse_profile({"name": "launch", "backend": "datastore", "workload": {"ops": {"insert": 1.0}},
                                 "keys": {"strategy": strategy},
                                 "launch": {"kind": "ramp_500_50_5", "ceiling": 5000, "duration": "30m"}})
        assert profile.launch is not None
        forecasts[strategy] = forecast_cell(backend="datastore", strategy=strategy, settings=profile,
                                            launch=profile.launch, cell_summary=_ONE_OP)
    # sequential ids at 500/50/5: every point of the band throttles (some at_risk, some hotspot)
    assert forecasts["sequential"]["verdict"] == "at_risk-hotspot" and forecasts["random"]["verdict"] == "ok"
    for seed, insert_ms in ((5, 4.0), (6, 2.0)):
        run = make_run(root, profile_name="launch", seconds=6, seed=seed, keyspace=_RAW_KEYSPACE,
                       cells=(("datastore", "sequential"), ("datastore", "random"), ("firestore", "sequential")),
                       latency_ms={"insert": insert_ms, "read": 1.0})
        summary = json.loads((run / "summary.json").read_text())
        cells = summary["cells"]
        cells["c00-datastore-sequential"]["forecast"] = forecasts["sequential"]
        cells["c01-datastore-random"]["forecast"] = forecasts["random"]
        failed = cells["c02-firestore-sequential"]  # every operation refused: no key was written or read
        del failed["keyspace"]
        for stats in (failed["total"], *failed["operations"].values()):
            stats.update(errors=stats["count"], error_rate=1.0,
                         errors_by_class={"PERMISSION_DENIED": {"count": stats["count"]}})
        (run / "summary.json").write_text(json.dumps(summary))
        # each key design's plan (real plans of the regenerated designs): sequential ids need shards
        add_plans(run, {"c00-datastore-sequential": ("datastore", "sequential"),
                        "c01-datastore-random": ("datastore", "random")})


def _stretch_to_one_hour(run: Path) -> None:
    """A 1-hour timeseries.csv (rows as the recorder writes them) with one stalled second
    and one 5x burst, so the chart must be downsampled and keep both in its band."""
    cells = list(json.loads((run / "summary.json").read_text())["cells"])
    lines = [("cell,op,second,count,errors,p50_ms,p99_ms,service_p99_ms,max_ms,target_ops_per_s,late,dropped,"
              "error_classes")]
    for s in range(3600):
        for cell in cells:
            for op in ("insert", "read", "*"):
                n = 0 if s == 1800 else (250 if s == 2400 else 50)
                lines.append(f"{cell},{op},{s},{n * (2 if op == '*' else 1)},0,{1 + (s % 60) / 60:.3f},"
                             f"{3 + (s % 600) / 100:.3f},3,9,{100 if op == '*' else 50},0,0,")
    (run / "timeseries.csv").write_text("\r\n".join(lines) + "\r\n")


def _keyspace(run: Path, *, png: bool) -> None:
    """Key-space files as `keyramp keyspace` writes them (a tiny stand-in if that module is absent)."""
    try:
        from keyramp.keyspace import run_keyspace
    except ImportError:
        (run / "keyspace").mkdir()
        for cell in ("c00-datastore-sequential", "c01-datastore-random"):
            counts = [[(t * 7 + b) % 13 for b in range(50)] for t in range(40)]
            (run / "keyspace" / f"{cell}.json").write_text(json.dumps({"counts": counts}))
        return
    run_keyspace(run, buckets=100, png=png)


@pytest.fixture(scope="module")
def base_url(results: Path) -> Iterator[str]:
    with serve_ui(results) as url:
        yield url




def test_list_click_run_chart_then_compare(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base_url}/")
    assert page.locator("table.runs tbody tr").count() == 6
    _shot(page, "web-runs")

    page.locator("a.run-link", has_text="quickstart").last.click()  # the older one has key-space data
    page.wait_for_selector(".chart canvas")
    assert "/runs/" in page.url
    canvases = page.locator(".chart canvas")
    assert canvases.count() >= 6  # 2 cells x (latency, throughput, errors)
    inked = canvases.first.evaluate(_INKED_PIXELS_JS)
    assert inked > 500, f"latency chart looks empty ({inked} inked pixels)"
    # switching the operation redraws the cell's charts
    page.locator(".op-select").first.select_option("read")
    page.wait_for_timeout(100)
    assert page.locator(".chart canvas").first.evaluate(_INKED_PIXELS_JS) > 500
    assert page.locator(".keyspace .badge.modelled").count() >= 1
    heatmap = page.locator("img.heatmap").first
    assert heatmap.evaluate("(img) => img.complete && img.naturalWidth") > 100  # the PNG loaded
    _shot(page, "web-run")

    page.goto(f"{base_url}/")
    boxes = page.locator("table.runs input[type=checkbox]:not([disabled])")
    runs = page.locator("a.run-link", has_text="quickstart")
    ids = [runs.nth(i).inner_text() for i in range(2)]
    for run_id in ids:
        page.locator(f"input[value='{run_id}']").check()
    assert boxes.count() == 6
    page.locator("#compare-form button").click()
    page.wait_for_selector(".compare-charts canvas")
    assert "/compare?" in page.url
    assert page.locator(".badge.baseline").count() >= 1
    assert page.locator(".compare-charts canvas").first.evaluate(_INKED_PIXELS_JS) > 500
    # the first ticked run (newest, insert median 4 ms) is the baseline: the other halves it
    assert page.locator(".ratio.better").count() >= 1
    _shot(page, "web-compare")

    assert page.console_errors == []  # type: ignore[attr-defined]
    assert page.dialogs == []  # type: ignore[attr-defined]


def test_hostile_profile_name_is_inert(page, base_url: str, results: Path) -> None:  # type: ignore[no-untyped-def]
    run_id = next(p.name for p in results.iterdir() if "script" in p.name)
    page.goto(f"{base_url}/")
    page.goto(f"{base_url}/runs/{run_id}")
    page.wait_for_selector(".chart canvas")
    assert XSS in page.locator("h1").inner_text()  # shown as text
    assert XSS in page.locator(".lint").inner_text()
    # the workload's own exception, with its traceback, beside the cell's error chart (as text)
    exceptions = page.locator("figure.exceptions").first
    assert exceptions.is_visible() and "/app/orders.py:31 in price_of" in exceptions.inner_text()
    assert f"KeyError: {XSS}" in exceptions.inner_text()
    errors_chart = page.locator('.chart[data-kind="errors"]').first.bounding_box()
    box = exceptions.bounding_box()
    assert errors_chart is not None and box is not None and box["y"] >= errors_chart["y"]  # in the chart grid, after it
    page.wait_for_selector(".heatmap-canvas canvas")
    assert page.locator(".heatmap-canvas canvas").first.evaluate(_INKED_PIXELS_JS) > 50
    # a bin with one sampled op is drawn clearly apart from an empty bin (log scale from 1)
    one, empty = page.locator(".heatmap-canvas").first.evaluate(_ONE_HIT_AND_EMPTY_JS)
    assert one is not None and empty is not None
    assert sum((a - b) ** 2 for a, b in zip(one, empty, strict=True)) ** 0.5 >= 100, (one, empty)
    assert page.locator("script:not([src]):not([type='application/json'])").count() == 0
    _shot(page, "web-run-hostile")
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_traversal_is_404_in_browser(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    resp = page.goto(f"{base_url}/runs/..%2F..%2Fetc%2Fpasswd")
    assert resp is not None and resp.status == 404


def test_one_hour_run_charts_downsampled_series(page, base_url: str, results: Path) -> None:  # type: ignore[no-untyped-def]
    run_id = next(p.name for p in results.iterdir() if "soak" in p.name)
    with page.expect_response(lambda r: "/series/" in r.url) as first_series:
        page.goto(f"{base_url}/runs/{run_id}")
    # the page itself carries no series: the charts fetched one cell's downsampled data
    doc = first_series.value.json()
    total = doc["ops"]["*"]
    assert total["bucket_s"] == 6 and len(total["t"]) == 600 and len(total["ops_min_per_s"]) == 600
    assert min(total["ops_min_per_s"]) == 0 and max(total["ops_max_per_s"]) == 500  # stall and burst kept
    page.wait_for_selector(".charts[data-loaded='true'] .chart canvas")
    page.wait_for_function("document.querySelectorAll(\".charts[data-loaded='true']\").length === 2")
    for kind in ("latency", "throughput", "errors"):
        canvas = page.locator(f".charts[data-loaded='true'] [data-kind='{kind}'] canvas").first
        assert canvas.evaluate(_INKED_PIXELS_JS) > (500 if kind != "errors" else 0), kind
    assert "Each point covers 6 s" in page.locator(".bucket-note").first.inner_text()
    assert page.locator(".op-select").first.locator("option").all_inner_texts() == ["all operations", "insert", "read"]
    assert page.locator(".chart-loading").count() == 0
    _shot(page, "web-run-1h")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_compare_three_runs(page, base_url: str, results: Path) -> None:  # type: ignore[no-untyped-def]
    ids = sorted(p.name for p in results.iterdir() if "quickstart" in p.name or "soak" in p.name)
    assert len(ids) == 3
    page.goto(f"{base_url}/compare?runs={','.join(ids)}")
    page.wait_for_selector(".compare-charts canvas")
    assert page.locator("table.runs-compared tbody tr").count() == 3
    assert page.locator(".badge.baseline").count() >= 1
    chart = page.locator(".compare-charts").first
    # one legend entry per run (plus uPlot's x entry) on the p99 overlay, and ink on the canvas
    assert chart.locator("[data-kind='cmp-p99'] .u-legend .u-series").count() == 4
    assert chart.locator("[data-kind='cmp-p99'] canvas").evaluate(_INKED_PIXELS_JS) > 500
    assert page.locator("table.compare-table").count() >= 1
    _shot(page, "web-compare-3")
    assert page.console_errors == []  # type: ignore[attr-defined]
    # Issue 39: at 1024 px the page opens with keyramp compare's own verdict line, above the evidence,
    # and each ratio's interval is on the page, not in a hover
    from keyramp.compare import run_compare
    from keyramp.compare._present import headline

    page.set_viewport_size({"width": 1024, "height": 900})
    page.goto(f"{base_url}/compare?runs={','.join(ids)}")
    verdict = page.locator("p.verdict-line")
    assert verdict.inner_text().strip() == headline(run_compare(ids, results=results))
    assert verdict.bounding_box()["y"] < page.locator("table.runs-compared").bounding_box()["y"]  # type: ignore[index]
    assert verdict.bounding_box()["y"] < 200  # type: ignore[index]  # in the first screen, under the heading
    assert page.locator(".compare-table .ci").first.is_visible()
    if page.locator("details.compare-warnings").count():
        assert not page.locator("details.compare-warnings").get_attribute("open")  # folded
        assert page.locator("details.compare-warnings li").first.is_hidden()


#: What a page must never show: Python's None, a NaN, a repr of a method, a float nobody rounded.
_UNREADABLE = re.compile(r"\bNone\b|\b(?:nan|NaN)\b|<built-in|\d+\.\d{5,}")


def test_every_page_reads_cleanly(page, base_url: str, results: Path) -> None:  # type: ignore[no-untyped-def]
    """Every page of the UI, for every run (a forecast, a failing cell, a comparison with both),
    shows no None, nan, <built-in …> or float with more than 4 decimals: with its collapsed
    details opened and its charts loaded."""
    runs = sorted(p.name for p in results.iterdir() if (p / "manifest.json").is_file())
    launch = [r for r in runs if "launch" in r]
    quick = [r for r in runs if "quickstart" in r]
    pages = ["/", "/runs?profile=launch&backend=firestore", *(f"/runs/{r}" for r in runs),
             f"/compare?runs={','.join(launch)}", f"/compare?runs={','.join(quick)}",
             "/runs/20990101T000000000Z-gone-0000"]  # the error page last: its 404 is the one console error
    texts = {}
    for path in pages:
        page.goto(f"{base_url}{path}")
        page.wait_for_load_state("networkidle")
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        texts[path] = page.locator("body").inner_text()
        bad = _UNREADABLE.findall(texts[path])
        assert not bad, (path, bad)
    assert page.console_errors == ["Failed to load resource: the server responded with a status of 404 (NOT FOUND)"]

    run = texts[f"/runs/{launch[0]}"]
    # the forecast chart has axes, units and a legend; the ok cell says so in one line, no empty box
    assert "time since the launch started" in run and "throttled share" in run and "unfavourable corner" in run
    assert "No throttling forecast at any point of the band" in run
    page.goto(f"{base_url}/runs/{launch[0]}")
    assert page.locator(".forecast-chart").count() == 1  # the hotspot cell's only: the ok cell draws none
    _shot(page, "web-run-forecast")
    # the answer first: the page's first card is the answer table, a row per cell; each planned cell's
    # plan section draws its ramp against 500/50/5 (read cleanly above: no None, nan)
    assert page.locator("section.card").first.get_attribute("id") == "answer"
    assert page.locator("#answer tbody tr").count() == 3
    assert "not reachable; fix: shards" in page.locator("#answer").inner_text()
    assert page.locator(".plan-chart polyline.planned").count() == 2
    plan = page.locator("#plan-c00-datastore-sequential").inner_text()
    assert "modelled" in plan and "not reachable" in plan and "500/50/5" in plan and "per hour" in plan
    page.locator("#plan-c01-datastore-random").scroll_into_view_if_needed()
    _shot(page, "web-run-plan")
    # the cell whose every operation failed gives that as the reason it has no keys
    assert re.search(r"all [\d,]+ operations failed", run), "the failed count"
    assert "a probe cell, or key sampling was off" not in run
    assert "failed (most often PERMISSION_DENIED" in run and "so no key was written or read" in run
    # the comparison shows both runs' forecasts and key space, rounded, model constants left out
    compare = texts[f"/compare?runs={','.join(launch)}"]
    assert "hottest 1 % of the key range" in compare and "71 %" in compare and "99 %" in compare
    assert "key pattern" in compare and "append ×1" in compare and "step_s" not in compare
    assert "hotspot" in compare and "ok 0 %" in compare


#: Whether the page scrolls sideways, or any card or table inside it does (the issue's 1,660-px
#: key-space table cut its "bad" column at 1024 px).
_SCROLLS_SIDEWAYS = """() => document.documentElement.scrollWidth > document.documentElement.clientWidth ||
  [...document.querySelectorAll('.card, .table-wrap')].some(e => e.scrollWidth > e.clientWidth + 1)"""


def test_every_page_fits_1024_px_and_the_charts_draw_what_they_gate(browser, base_url: str, results: Path,  # type: ignore[no-untyped-def]
                                                                      tmp_path: Path) -> None:
    """At 1024 px: no page scrolls sideways (every page type); the cell page answers first, draws the
    threshold it gates, the warm-up marker, the breached points and the latency distribution;
    the heatmap has axes; the runs list has the forecast column; a warm-up counts down."""
    context = browser.new_context(viewport={"width": 1024, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    runs = sorted(p.name for p in results.iterdir() if (p / "manifest.json").is_file())
    quick = next(r for r in runs if "quickstart" in r)  # the older one: thresholds, warm-up, key space
    launch = [r for r in runs if "launch" in r]
    cell = f"/runs/{quick}/cells/c00-datastore-sequential"
    pages = ["/", f"/runs/{launch[0]}", f"/compare?runs={','.join(launch)}", "/runs/20990101T000000000Z-gone-0000",
             cell]
    for path in pages:
        page.goto(f"{base_url}{path}")
        page.wait_for_load_state("networkidle")
        assert not page.evaluate(_SCROLLS_SIDEWAYS), path
        if path == "/":
            assert "launch forecast" in page.locator("table.runs thead").inner_text()
            assert page.locator("table.runs td.forecast-cell .badge").count() == len(launch)
        if path.startswith("/compare"):
            assert page.locator(".cell-links a.cell-link").count() >= 2  # each run's cell page
            _shot(page, "web-1024-compare")
        if path == f"/runs/{launch[0]}":
            assert page.locator("#answer a.cell-link").count() == 3  # the answer links each cell's page
            _shot(page, "web-1024-run")
    # the cell page (last above): the answer first, then the charts, with the threshold on insert's
    page.wait_for_selector(".charts[data-loaded='true'] [data-kind='distribution'] canvas")
    assert page.locator("section.card").first.get_attribute("id") == "answer"
    assert "1 of 2 failed: insert.p99_ms" in page.locator("#answer").inner_text()
    latency = page.locator("[data-kind='latency']")
    assert latency.get_attribute("data-lines") == "0" and latency.get_attribute("data-markers") == "1"
    page.locator(".op-select").select_option("insert")
    page.wait_for_function("() => document.querySelector(\"[data-kind='latency']\").getAttribute('data-lines') === '1'")
    assert int(latency.get_attribute("data-breaches") or 0) >= 1  # seconds over 3 ms are shaded
    assert page.locator("[data-kind='errors']").get_attribute("data-lines") == "0"  # error_rate is the cell's
    page.locator(".op-select").select_option("*")
    page.wait_for_function("() => document.querySelector(\"[data-kind='errors']\").getAttribute('data-lines') === '1'")
    assert page.locator("[data-kind='distribution'] canvas").evaluate(_INKED_PIXELS_JS) > 500
    assert "Markers: warm-up ended (12 s before, not measured)" in page.locator(".bucket-note").inner_text()
    assert page.locator("a[download]").count() == 4  # time series and key samples, CSV and Parquet
    _shot(page, "web-1024-cell")
    # a heatmap drawn on a canvas has its axes: key labels and time ticks in one unit
    hostile = next(r for r in runs if "script" in r)
    page.goto(f"{base_url}/runs/{hostile}")
    page.wait_for_selector(".heatmap-canvas .heat-x .heat-tick")
    ticks = page.locator(".heatmap-canvas").first.locator(".heat-x .heat-tick").all_inner_texts()
    assert ticks[0] == "0" and len(ticks) >= 3 and len({t.split(" ")[-1] for t in ticks[1:]}) == 1, ticks
    assert page.locator(".heatmap-canvas").first.locator(".heat-y .heat-tick").count() >= 2
    assert not page.evaluate(_SCROLLS_SIDEWAYS)
    # a lint chip never breaks inside its rule id ("BP-" / "KEY-1"): one line, as high as its text
    heights = page.locator(".lint .chip.rule").evaluate_all("els => els.map(e => e.getBoundingClientRect().height)")
    assert heights and max(heights) < 24, heights
    assert errors == ["Failed to load resource: the server responded with a status of 404 (NOT FOUND)"]
    # a run warming up: the banner counts down without a reload
    warming = make_run(tmp_path, profile_name="warming", seconds=2, seed=9, status="running")
    (warming / "live.json").write_text(json.dumps({
        "schema": 1, "run_id": warming.name, "status": "running", "cells": 2, "finished": [],
        "updated_epoch": time.time(), "cell": {"id": "c00-datastore-sequential", "index": 0, "phase": "warming up 60s",
                                               "phase_since_epoch": time.time(), "warmup_s": 60.0}}))
    with serve_ui(tmp_path) as url:
        page.goto(f"{url}/runs/{warming.name}")
        first = page.locator("#live .live-text").inner_text()
        assert re.search(r"warming up \(not measured\): (60|59) s left of 60 s", first), first
        page.wait_for_function(f"() => !document.querySelector('#live .live-text').textContent.includes({first!r})",
                               timeout=5000)
        assert "s left of 60 s" in page.locator("#live .live-text").inner_text()
    context.close()
