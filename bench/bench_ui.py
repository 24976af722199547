"""Server time of the run page for a synthetic 1-hour run with 10 operations.

Writes a run (2 cells x 10 ops x 3600 s of timeseries.csv = 79,200 rows, a 3600-point
target timeline per cell) and times the run page and its JSON twin through Flask's
test client: cold (first request parses and caches) and warm (median of repeats).
Target: warm < 300 ms (the cache is per (path, mtime), so only the first view of a run,
or of a run still being written, pays the parse). Also prints the time ``csv.reader``
alone takes to read the file, and the load average, to normalise cold figures on a busy
machine. Usage: ``.venv/bin/python bench/bench_ui.py``.
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _synthetic import make_run  # noqa: E402

from keyramp.web import create_app  # noqa: E402

OPS = ("insert", "read", "update", "delete", "scan", "query", "batch_write", "batch_read", "transaction", "increment")
SECONDS = 3600


def one_hour_run(root: Path) -> Path:
    """A short synthetic run, then its timeseries and target timeline stretched to one hour
    (real .hlog files for an hour of 10 ops take minutes to write and the page does not read them)."""
    run = make_run(root, seconds=2, ops=OPS, rate=20.0, profile_name="bench-1h")
    rng = np.random.default_rng(0)
    cells = json.loads((run / "summary.json").read_text())["cells"]
    with (run / "timeseries.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["cell", "op", "second", "count", "errors", "p50_ms", "p99_ms", "service_p99_ms", "max_ms",
                    "target_ops_per_s", "late", "dropped", "error_classes"])
        for cell in cells:
            for op in (*OPS, "*"):
                n = rng.poisson(200 if op == "*" else 20, SECONDS)
                p50 = rng.lognormal(0.5, 0.2, SECONDS)
                for s in range(SECONDS):
                    err = int(n[s] > 215)
                    w.writerow([cell, op, s, int(n[s]), err, round(p50[s], 3), round(p50[s] * 3, 3),
                                round(p50[s] * 2.8, 3), round(p50[s] * 5, 3), 200 if op == "*" else 20, 0, 0,
                                f"UNAVAILABLE:{err}" if err else ""])
    summary = json.loads((run / "summary.json").read_text())
    for cell in summary["cells"].values():
        cell["duration_s"] = float(SECONDS)
        cell["target_ops_per_s"] = [{"t": s, "target": 200.0, "achieved": 199.0} for s in range(SECONDS)]
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def timed(client, url: str) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    resp = client.get(url)
    elapsed = (time.perf_counter() - t0) * 1000
    assert resp.status_code == 200, (url, resp.status_code)
    return elapsed, len(resp.data)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        run = one_hour_run(Path(tmp))
        rows = sum(1 for _ in (run / "timeseries.csv").open()) - 1
        client = create_app(Path(tmp)).test_client()
        url = f"/runs/{run.name}"
        cold, size = timed(client, url)
        warm = [timed(client, url)[0] for _ in range(20)]
        cold_json_app = create_app(Path(tmp)).test_client()
        cold_json, json_size = timed(cold_json_app, url + ".json")
        warm_json = [timed(client, url + ".json")[0] for _ in range(20)]
        list_ms = statistics.median(timed(client, "/runs")[0] for _ in range(20))
        print(f"1-hour run, 2 cells x 10 ops, {rows:,} timeseries rows")
        print(f"run page  : cold {cold:7.1f} ms, warm median {statistics.median(warm):6.1f} ms "
              f"(max {max(warm):.1f}), {size / 1024:.0f} KiB HTML")
        print(f"run .json : cold {cold_json:7.1f} ms, warm median {statistics.median(warm_json):6.1f} ms, "
              f"{json_size / 1024:.0f} KiB")
        print(f"runs list : warm median {list_ms:.1f} ms")
        t0 = time.perf_counter()
        with (run / "timeseries.csv").open(newline="") as fh:
            sum(1 for _ in csv.reader(fh))
        print(f"baseline  : csv.reader alone reads timeseries.csv in {(time.perf_counter() - t0) * 1000:.1f} ms; "
              f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        ok = statistics.median(warm) < 300
        print(f"target warm < 300 ms: {'met' if ok else 'NOT met'}; cold/warm ratio {cold / statistics.median(warm):.0f}x")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
