"""``keyramp list`` and the UI's runs page over 1,000 runs: cold (no index) and warm.

Writes 1,000 run directories (manifest.json + summary.json, which is all a listing reads):
nine in ten are quickstart-like (12 cells of 10 s), one in ten a soak (2 cells of 1 hour,
whose summary holds two 3,600-point target timelines: 0.9 MB of JSON) — about 130 MB of
JSON in all. Then it times, in fresh processes, interleaved:

* ``list`` before the catalog: ``list_runs`` (every manifest and summary parsed, as
  ``keyramp list`` did), then the same rows sorted;
* ``list`` cold: no index file; the catalog is built from the directories and queried;
* ``list`` warm: the index exists; one directory scan and two stats per run, then SQL;
* the runs page (``GET /runs``, first page of 50, through Flask's test client) cold and warm;
* a filtered, sorted page (profile + backend, sorted by p99) warm;
* ``keyramp list`` as a whole command (subprocess, interpreter start included), warm.

Goals (issue 20): warm < 200 ms, cold < 2 s. Usage: ``.venv/bin/python bench/bench_catalog.py
[--runs 1000] [--reps 3]`` -> bench/results/catalog.json. ``--smoke``: 12 runs, one repetition,
every measurement in the bench's own process (``--in-process``: not the fresh-process figures).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, parse_args, save, table

PROFILES = ("checkout", "search", "ingest", "quickstart", "soak")
BACKENDS = ("datastore", "firestore", "firestore-datastore", "bigtable")
STRATEGIES = ("sequential", "random", "hashed_prefix")


def _cell(backend: str, strategy: str, seconds: int, i: int) -> dict[str, Any]:
    lat = {"p50": 1.1 + i % 7, "p90": 1.9, "p95": 2.3, "p99": 4.0 + i % 13, "p999": 9.1, "max": 12.0, "mean": 1.3}
    op = {"count": 4000 + i, "errors": i % 3, "error_rate": 0.0, "errors_by_class": {}, "attempts": 4000 + i,
          "ops_per_s": 400.0 + i % 50, "latency_ms": lat, "service_ms": lat, "late": 0, "dropped": 0}
    return {"backend": backend, "strategy": strategy, "schedule": "constant", "distribution": "uniform",
            "duration_s": float(seconds), "time_scale": 1.0, "users": 4, "warmup_s": 2.0,
            "operations": {"insert": op, "read": op}, "total": op,
            "target_ops_per_s": [{"t": s, "target": 400.0, "achieved": 399.0} for s in range(seconds)],
            "keyspace": {"hottest_1pct_share": 0.7, "modelled": False}, "thresholds": []}


def write_runs(results: Path, n: int) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(n):
        when = start + timedelta(minutes=37 * i)
        profile = PROFILES[i % len(PROFILES)]
        run_id = f"{when:%Y%m%dT%H%M%S}{i % 1000:03d}Z-{profile}-{i % 65536:04x}"
        soak = i % 10 == 0
        seconds = 3600 if soak else 10
        matrix = [(b, s) for b in BACKENDS for s in STRATEGIES][: 2 if soak else None]
        cells = {f"c{j:02d}-{b}-{s}".replace("_", "-"): _cell(b, s, seconds, i + j)
                 for j, (b, s) in enumerate(matrix)}
        status = "failed" if i % 17 == 0 else "complete"
        manifest = {
            "schema": 1,
            "run_id": run_id,
            "profile_name": profile,
            "profile_path": f"profiles/{profile}.toml",
            "profile": {"name": profile, "backend": list(BACKENDS), "keys": {"strategy": list(STRATEGIES)}},
            "cells": [{"id": cid, "backend": c["backend"], "strategy": c["strategy"]} for cid, c in cells.items()],
            "versions": {"keyramp": "0.1.0"},
            "git_sha": None,
            "host": "bench",
            "seed": i,
            "started_at": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "ended_at": None,
            "status": status,
            "reason": None,
            "lint": [],
        }
        summary = {"schema": 1, "run_id": run_id, "profile_name": profile, "status": status, "reason": None,
                   "cells": cells, "thresholds_passed": True, "warnings": []}
        run = results / run_id
        run.mkdir()
        (run / "manifest.json").write_text(json.dumps(manifest, indent=2))
        (run / "summary.json").write_text(json.dumps(summary, indent=2))


def child(results: Path, what: str) -> float:
    """One measurement in a fresh process: ms for ``what``."""
    from keyramp.results._catalog import list_runs
    from keyramp.results._index import RunQuery, query_rows
    from keyramp.web import create_app

    if what == "list_before":
        t0 = time.perf_counter()
        runs = list_runs(results)
        [r.to_dict() for r in runs]
        return (time.perf_counter() - t0) * 1000
    if what in ("list_cold", "list_warm"):
        t0 = time.perf_counter()
        rows, total = query_rows(results, RunQuery())
        assert total == len(rows) > 0
        return (time.perf_counter() - t0) * 1000
    client = create_app(results).test_client()
    url = "/runs?profile=checkout&backend=bigtable&sort=p99_ms" if what == "page_filtered_warm" else "/runs"
    t0 = time.perf_counter()
    resp = client.get(url)
    assert resp.status_code == 200
    return (time.perf_counter() - t0) * 1000


def _fresh(results: Path, what: str) -> float:
    proc = subprocess.run([sys.executable, __file__, "--child", str(results), what], capture_output=True, text=True,
                          timeout=300, check=True)
    return float(proc.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--in-process", action="store_true",
                        help="measure in this process, not in fresh ones (warm imports: not the figures)")
    args = parse_args(parser, argv, smoke={"runs": 12, "reps": 1, "in_process": True})
    if args.child:
        print(child(Path(args.child[0]), args.child[1]))
        return 0
    from keyramp.results._index import INDEX_FILE

    measure = child if args.in_process else _fresh
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp)
        write_runs(results, args.runs)
        json_mb = sum(f.stat().st_size for f in results.glob("*/*.json")) / 1e6
        index = results / INDEX_FILE
        load_before = os.getloadavg()
        for rep in range(args.reps):
            order = ["list_before", "list_cold", "page_cold"]
            for what in order if rep % 2 == 0 else order[::-1]:
                index.unlink(missing_ok=True)
                samples.setdefault(what, []).append(measure(results, what))
            measure(results, "list_cold")  # builds the index the warm figures use
            for what in ("list_warm", "page_warm", "page_filtered_warm"):
                samples.setdefault(what, []).append(measure(results, what))
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "keyramp", "list", "--results", str(results)], capture_output=True,
                           check=True, timeout=120)
            samples.setdefault("keyramp_list_command_warm", []).append((time.perf_counter() - t0) * 1000)
        load_after = os.getloadavg()
        index_kib = index.stat().st_size / 1024
    med = {k: round(statistics.median(v), 1) for k, v in samples.items()}
    rows = [[k, med[k], f"{min(v):.0f}-{max(v):.0f}"] for k, v in samples.items()]
    print(f"{args.runs} runs ({json_mb:.0f} MB of manifest + summary JSON), {args.reps} reps, fresh process each; "
          f"load {load_before[0]:.1f} -> {load_after[0]:.1f}; index {index_kib:.0f} KiB")
    print(table(["what", "median ms", "range ms"], rows))
    met = {"warm_lt_200ms": max(med["list_warm"], med["page_warm"]) < 200,
           "cold_lt_2s": max(med["list_cold"], med["page_cold"]) < 2000}
    print(f"warm < 200 ms: {met['warm_lt_200ms']}; cold < 2 s: {met['cold_lt_2s']}")
    path = save("catalog", {"bench": "catalog", "machine": machine(), "runs": args.runs, "reps": args.reps,
                            "json_mb": round(json_mb), "loadavg_before": load_before, "loadavg_after": load_after,
                            "index_kib": round(index_kib),
                            "median_ms": med, "samples_ms": samples, "met": met})
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
