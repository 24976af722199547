"""``keyramp run --workers 2 --metrics``, scraped by a real Prometheus (Debian's ``prometheus``).

The test starts Prometheus on a free loopback port with a generated config that scrapes the
run every second, checks that live samples carry the running cell's labels, and after the
run checks PromQL results against the run's summary.json: the master serves the merged view
of both workers, so its counters must equal the summary's counts exactly.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _runs import emulator_env, load, write_profile

from keyramp.metrics import BUCKETS_S
from keyramp.targets._emulators import free_port

pytestmark = [pytest.mark.emulator, pytest.mark.slow]

RATE = 200


def _prometheus() -> str:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("Debian's prometheus is not installed (bash scripts/setup.sh --test installs it)")
    return binary


@contextlib.contextmanager
def _running_prometheus(tmp: Path, target: str) -> Iterator[str]:
    port = free_port()
    config = tmp / "prometheus.yml"
    config.write_text(json.dumps({  # YAML is a superset of JSON
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [{"job_name": "keyramp", "static_configs": [{"targets": [target]}]}],
    }))
    with open(tmp / "prometheus.log", "wb") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen([_prometheus(), f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL)
    try:
        api = f"http://127.0.0.1:{port}"
        _poll(lambda: _ready(api), 60, "prometheus did not become ready", proc, tmp / "prometheus.log")
        yield api
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ready(api: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api}/-/ready", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def _poll(cond: Any, timeout: float, what: str, proc: subprocess.Popen[Any] | None = None,
          log: Path | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-2000:] if log is not None and log.exists() else ""
    raise AssertionError(f"{what}\n{tail}")


def _query(api: str, promql: str, at: float | None = None) -> list[dict[str, Any]]:
    params = {"query": promql} | ({"time": f"{at:.3f}"} if at is not None else {})
    url = f"{api}/api/v1/query?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=10) as resp:
        doc = json.load(resp)
    assert doc["status"] == "success", doc
    return doc["data"]["result"]

#: The dashboard's $__rate_interval in these queries (Grafana's is at least 4 scrape intervals).
RATE_WINDOW = "8s"


def _by(result: list[dict[str, Any]], *labels: str) -> dict[tuple[str, ...], float]:
    return {tuple(r["metric"].get(k, "") for k in labels): float(r["value"][1]) for r in result}


def test_prometheus_scrapes_the_merged_live_view_of_a_two_worker_run(tmp_path: Path, bigtable_emulator: Any) -> None:
    profile = write_profile(
        tmp_path / "p.toml", {"name": "metrics", "backend": "bigtable", "duration": "5s", "seed": 3},
        workload={"ops": {"insert": 0.7, "read": 0.3}, "record_count": 100},
        keys={"strategy": ["sequential", "random"]},
        schedule={"kind": "constant", "rate": RATE, "warmup": "1s"},
    )
    port = free_port()
    out = tmp_path / "results"
    with _running_prometheus(tmp_path, f"127.0.0.1:{port}") as api:
        run = subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--workers", "2", "--quiet",
                                "--metrics", f"127.0.0.1:{port}", "--out", str(out)],
                               env=emulator_env(bigtable_emulator), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        try:
            # While it runs: non-zero samples labelled with the running cell (either: on a busy
            # machine a scrape may miss the first cell's 5 s), at the scheduled rate.
            live = _poll(lambda: _query(api, "keyramp_operations_total > 0 and on(run, cell) keyramp_cell_active == 1"),
                         120, "no live keyramp_operations_total sample of a running cell", proc=run)
            assert {r["metric"]["op"] for r in live} <= {"insert", "read"}
            strategy = {"c00-bigtable-sequential": "sequential", "c01-bigtable-random": "random"}
            assert live[0]["metric"]["backend"] == "bigtable"
            assert live[0]["metric"]["strategy"] == strategy[live[0]["metric"]["cell"]], live[0]["metric"]
            target = _poll(lambda: _query(api, "keyramp_target_operations_per_second"), 30, "no target gauge")
            assert float(target[0]["value"][1]) == RATE
            # Both workers pace: a user each at least. Polled, not one instant: between cells (or
            # a scrape before a busy machine's workers spawn) the gauge is rightly 0.
            _poll(lambda: [u for u in _query(api, "keyramp_users") if float(u["value"][1]) >= 2], 60,
                  "keyramp_users never reached 2 (a user a worker)", proc=run)
            # A moment in a running cell whose rate() window already holds two scrapes, for the
            # dashboard's queries below (a busy machine delays scrapes: the window is asked, not
            # assumed from the cell's elapsed time); cells are 5 s long, so one comes by in either.
            live = _poll(lambda: _query(api, "keyramp_cell_active == 1 and on(run, cell) "
                                             "keyramp_achieved_operations_per_second > 0 and on(run, cell) "
                                             f"rate(keyramp_operations_total[{RATE_WINDOW}]) > 0"),
                         60, "no live moment", proc=run)
            live_at = float(live[0]["value"][0])
            stdout, stderr = run.communicate(timeout=180)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        assert run.returncode == 0, stderr[-3000:]
        run_id = stdout.splitlines()[-1]
        summary = load(out / run_id, "summary.json")
        assert load(out / run_id, "manifest.json")["workers"] == 2
        sel = f'run="{run_id}"'
        # The exporter is gone: range selectors see its last samples (instant ones see the stale markers).
        counts = _by(_query(api, f"max_over_time(keyramp_operations_total{{{sel}}}[10m])"), "cell", "op")
        hist_counts = _by(_query(api, f"max_over_time(keyramp_operation_latency_seconds_count{{{sel}}}[10m])"),
                          "cell", "op")
        late = _by(_query(api, f"max_over_time(keyramp_late_operations_total{{{sel}}}[10m])"), "cell", "op")
        dropped = _by(_query(api, f"max_over_time(keyramp_dropped_operations_total{{{sel}}}[10m])"), "cell")
        totals = _by(_query(api, f"sum by (cell) (max_over_time(keyramp_operations_total{{{sel}}}[10m]))"), "cell")
        want = {(cell, op): s["count"] for cell, c in summary["cells"].items() for op, s in c["operations"].items()}
        assert counts == want and hist_counts == want
        assert late == {(cell, op): s["late"] for cell, c in summary["cells"].items()
                        for op, s in c["operations"].items()}
        assert dropped == {(cell,): c["total"]["dropped"] for cell, c in summary["cells"].items()}
        assert totals == {(cell,): c["total"]["count"] for cell, c in summary["cells"].items()}
        # histogram_quantile over the final buckets lands in the bucket holding summary.json's exact p99
        p99 = _by(_query(api, "histogram_quantile(0.99, sum by (cell, le) "
                              f"(max_over_time(keyramp_operation_latency_seconds_bucket{{{sel}}}[10m])))"), "cell")
        for cell, c in summary["cells"].items():
            exact = c["total"]["latency_ms"]["p99"] / 1000
            upper = min((b for b in BUCKETS_S if b >= exact), default=math.inf)
            lower = max((b for b in BUCKETS_S if b < exact), default=0.0)
            assert lower <= p99[(cell,)] <= upper, (cell, exact, p99[(cell,)])
        finished = _by(_query(api, f"max_over_time(keyramp_cell_active{{{sel}}}[10m])"), "cell")
        assert set(finished) == {(cell,) for cell in summary["cells"]}
        last_active = _by(_query(api, f"last_over_time(keyramp_cell_active{{{sel}}}[10m])"), "cell")
        assert set(last_active.values()) == {0.0}  # the final scrape saw every cell finished

        # Every query of the shipped Grafana dashboard runs on the real Prometheus; all but the
        # error and generator-limited panels have data at a moment when the run was live.
        dashboard = json.loads((Path(__file__).resolve().parents[2] / "examples" / "grafana" /
                                "keyramp-dashboard.json").read_text())
        for panel in dashboard["panels"]:
            for t in panel["targets"]:
                expr = (t["expr"].replace("$run", run_id).replace("$cell", ".*").replace("$op", ".*")
                        .replace("$__rate_interval", RATE_WINDOW))
                result = _query(api, expr, at=live_at)
                if "errors" not in expr and "generator_limited" not in expr:
                    assert result, (panel["title"], expr)
