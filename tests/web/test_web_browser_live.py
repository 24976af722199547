"""A real run in progress, watched in real headless Chromium: the runs list shows it running,
its page's charts grow while it runs (no reload), the banner names the current cell, and when
it ends the page swaps in the summaries and draws the heatmaps computed from the sampled keys.
The same run serves ``--metrics``: its local (single-process) exporter shows non-zero samples
labelled with the running cell.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from _browser import serve_ui, shot
from _poll import wait_for
from _runs import emulator_env, write_profile

from keyramp.results._catalog import RUN_ID_RE
from keyramp.targets._emulators import free_port

pytestmark = [pytest.mark.browser, pytest.mark.emulator, pytest.mark.slow]


#: Time series points drawn so far, over every cell's charts on the page.
_ALL_POINTS = ("[...document.querySelectorAll('.charts')]"
               ".reduce((n, c) => n + Number(c.getAttribute('data-points') || 0), 0)")


def _points(page: Any, cell: str) -> int:
    return int(page.get_attribute(f'.charts[data-cell="{cell}"]', "data-points") or 0)


def test_a_running_run_grows_its_charts_in_the_browser(tmp_path: Path, bigtable_emulator: Any, page: Any) -> None:
    profile = write_profile(
        tmp_path / "live.toml", {"name": "live", "backend": "bigtable", "duration": "8s", "seed": 5},
        workload={"ops": {"insert": 0.8, "read": 0.2}, "record_count": 100},
        keys={"strategy": ["sequential", "random"]},
        schedule={"kind": "step", "steps": [100, 200], "step": "4s", "warmup": "1s"},
    )
    results = tmp_path / "results"
    metrics_port = free_port()
    run = subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(results), "--quiet",
                            "--metrics", f"127.0.0.1:{metrics_port}"], env=emulator_env(bigtable_emulator),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_dir = wait_for(lambda: next((p for p in results.glob("*") if RUN_ID_RE.match(p.name)
                                         and (p / "manifest.json").exists()), None) if results.is_dir() else None,
                           "a run directory with a manifest", timeout=60, every=0.2)
        first = "c00-bigtable-sequential"
        with serve_ui(results) as ui:
            page.goto(f"{ui}/runs")
            row = page.locator("table.runs tbody tr").first
            assert row.locator(".badge").inner_text() == "running"
            # the list follows live.json: the line names the running cell once it gets going
            page.wait_for_function("() => /cell [12] of 2: c0[01]-bigtable-/.test("
                                   "document.querySelector('.live-line').textContent)", timeout=60_000)
            shot(page, "web-live-runs")
            row.locator("a.run-link").click()
            page.wait_for_selector("#live")
            # charts grow without a reload: two different point counts seen on one page load
            # (counted over both cells: on a busy machine the first may end before the page looks)
            page.wait_for_function(f"() => {_ALL_POINTS} >= 2", timeout=60_000)
            early = page.evaluate(f"() => {_ALL_POINTS}")
            page.evaluate("() => { window.__sameDocument = true; }")
            page.wait_for_function(f"() => {_ALL_POINTS} > {early}", timeout=30_000)
            assert page.evaluate("() => window.__sameDocument") is True  # no reload happened
            banner = page.locator("#live .live-text").inner_text()
            assert "of 2: c0" in banner, banner  # names the current cell (its phase: as timing has it)
            shot(page, "web-live-run")

            # while it runs, its --metrics endpoint has non-zero samples labelled with the running cell
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as resp:
                exposition = resp.read().decode()
            live_ops = [line for line in exposition.splitlines()
                        if line.startswith("keyramp_operations_total{") and f'cell="{first}"' in line]
            assert live_ops and all(float(line.rsplit(" ", 1)[1]) > 0 for line in live_ops), exposition[:2000]

            stdout, stderr = run.communicate(timeout=180)
            assert run.returncode == 0, stderr[-3000:]
            assert stdout.splitlines()[-1] == run_dir.name
            # the page notices the end: head and summaries swapped in, heatmaps drawn from the keys
            page.wait_for_selector("#run-head .badge.status-complete", timeout=30_000)
            page.wait_for_function("() => !document.querySelector('.cell-pending')", timeout=30_000)
            page.wait_for_function("() => document.querySelectorAll('.heatmap-canvas canvas.heatmap').length === 2",
                                   timeout=60_000)
            assert page.locator("#live b").inner_text() == "Ended"
            assert page.locator("table.keyspace-metrics").count() == 2
            second = "c01-bigtable-random"
            assert _points(page, second) >= 6
            shot(page, "web-live-ended")
            assert page.console_errors == []
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
