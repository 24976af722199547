"""Every bench in ``bench/`` runs its ``--smoke`` path, so a bench cannot rot.

A smoke run goes through every code path of its bench at toy sizes, in a few seconds, as
``.venv/bin/python bench/<bench>.py --smoke`` (the way docs/performance.md runs the benches),
and writes its JSON into a temporary directory (``KEYRAMP_BENCH_RESULTS``), never into
``bench/results/``. The figures of a smoke run mean nothing; what is checked is that the bench
ran to its end and measured something. Benches that need a quiet machine for their figures
still run here: their smoke path does not judge a goal.

Most of a smoke run is waiting (interpreter start-up, emulators, seconds-long phases at a low
rate), so the benches selected in this module start together, at most ``_AT_ONCE`` at a time,
when the first of their tests asks; each test then waits for its own bench. Nothing here
times anything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _runs import emulator_env

BENCH = Path(__file__).resolve().parents[2] / "bench"
#: Bench smoke runs at once (2 cores: most of a smoke run waits).
_AT_ONCE = 3


@dataclass(frozen=True)
class Smoke:
    script: str
    #: ``bench/results/<saves>.json`` it writes (None: it prints only).
    saves: str | None
    #: What its JSON (or, without one, its stdout) must show: the bench measured something.
    check: Callable[[Any], bool]
    #: Exit codes it may end with: a bench that judges a goal exits 1 when its (meaningless) smoke figure misses.
    codes: tuple[int, ...] = (0,)
    #: Needs the official emulators (it starts its own, or runs against the session's Bigtable emulator).
    emulator: bool = False
    #: About how long its smoke run takes alone (s): the longest start first.
    cost: float = 2.0


def _every(rows: list[dict[str, Any]], key: str) -> bool:
    return bool(rows) and all((r.get(key) or 0) > 0 for r in rows)


SMOKES = [
    Smoke("bench_hotpath.py", "hotpath", lambda d: d["us_per_op"]["recorder.record (recording only)"] > 0),
    Smoke("bench_keys.py", None, lambda out: "next_index" in out and "template" in out),
    Smoke("bench_metrics.py", "metrics", lambda d: d["tick_ms"] > 0 and d["scrape_bytes"] > 0),
    Smoke("bench_sink.py", "sink", lambda d: d["median"]["after (Parquet)"]["median_ms"] > 0),
    Smoke("bench_keyspace.py", "keyspace", lambda d: [r["samples"] for r in d["rows"]] == [20_000, 20_000], cost=7),
    Smoke("bench_catalog.py", "catalog", lambda d: d["runs"] == 12 and d["median_ms"]["list_warm"] > 0, cost=7),
    Smoke("bench_ui.py", "ui", lambda d: d["median"]["first_view_ms"] > 0, codes=(0, 1), cost=5),
    Smoke("bench_drivers.py", "drivers", lambda d: _every(d["runs"], "ops") and
          {r["contestant"] for r in d["runs"]} == {"aio", "kr-grpc-gevent"}, emulator=True, cost=16),
    Smoke("bench_overhead.py", "overhead", lambda d: _every(d["runs"], "ops") and
          {r["mode"] for r in d["runs"]} == {"bare", "locust"}, emulator=True, cost=12),
    Smoke("bench_saturation.py", "saturation", lambda d: _every(d["runs"], "ops_per_s"), emulator=True, cost=13),
    Smoke("bench_workers.py", "workers", lambda d: _every(d["runs"], "count") and
          d["summary"]["2 workers"]["ops_per_s"] > 0, emulator=True, cost=21),
    Smoke("bench_rate.py", "rate", lambda d: all(_every(r["steps"], "achieved") for r in d["runs"]),
          emulator=True, cost=34),
    Smoke("bench_rundir.py", "rundir", lambda d: _every(d["runs"], "mb_per_hour_total"), emulator=True, cost=22),
    Smoke("bench_soak.py", "soak", lambda d: d["ops"] > 0 and d["errors"] == 0, emulator=True, cost=13),
]


#: Benches whose smoke runs ``test_bench_compare.py`` checks in detail (issue 32).
_COMPARE = ["bench_compare_aa.py", "bench_compare_ab.py", "bench_machine_limit.py"]


def test_every_bench_has_a_smoke_run() -> None:
    assert sorted([s.script for s in SMOKES] + _COMPARE) == sorted(p.name for p in BENCH.glob("bench_*.py"))


def _run(smoke: Smoke, where: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    where.mkdir(parents=True)
    return subprocess.run([sys.executable, str(BENCH / smoke.script), "--smoke"], cwd=where,
                          env={**env, "KEYRAMP_BENCH_RESULTS": str(where / "results")}, capture_output=True,
                          text=True, timeout=300, check=False)


class _Runs:
    """The smoke runs of the benches selected for one test function, started together."""

    def __init__(self, request: pytest.FixtureRequest, tmp: Path, env: dict[str, str],
                 test: Callable[..., None]) -> None:
        self.tmp = tmp
        selected = [item.callspec.params["smoke"] for item in request.session.items
                    if getattr(item, "function", None) is test and hasattr(item, "callspec")]
        self.pool = ThreadPoolExecutor(max_workers=_AT_ONCE)
        self.runs: dict[str, Future[subprocess.CompletedProcess[str]]] = {
            s.script: self.pool.submit(_run, s, self._dir(s), env) for s in sorted(selected, key=lambda s: -s.cost)}

    def _dir(self, smoke: Smoke) -> Path:
        return self.tmp / smoke.script.removesuffix(".py")

    def check(self, smoke: Smoke) -> None:
        proc = self.runs[smoke.script].result()
        results = self._dir(smoke) / "results"
        tail = f"{smoke.script} exited {proc.returncode}:\n{proc.stdout[-1500:]}\n{proc.stderr[-3000:]}"
        assert proc.returncode in smoke.codes and "Traceback" not in proc.stderr, tail
        if smoke.saves is None:
            assert smoke.check(proc.stdout), tail
            return
        assert [p.name for p in results.iterdir()] == [f"{smoke.saves}.json"], tail
        assert smoke.check(json.loads((results / f"{smoke.saves}.json").read_text())), tail

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def plain_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Runs]:
    runs = _Runs(request, tmp_path_factory.mktemp("smoke"), emulator_env(), test_bench_smoke)
    yield runs
    runs.close()


@pytest.fixture(scope="module")
def emulator_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                  bigtable_emulator: Any) -> Iterator[_Runs]:
    # Benches that start their own emulators stop them; the rest attach to the session's.
    runs = _Runs(request, tmp_path_factory.mktemp("smoke"), emulator_env(bigtable_emulator),
                 test_bench_smoke_against_an_emulator)
    yield runs
    runs.close()


@pytest.mark.parametrize("smoke", [s for s in SMOKES if not s.emulator], ids=lambda s: s.script)
def test_bench_smoke(smoke: Smoke, plain_runs: _Runs) -> None:
    plain_runs.check(smoke)


@pytest.mark.emulator
@pytest.mark.slow
@pytest.mark.parametrize("smoke", [s for s in SMOKES if s.emulator], ids=lambda s: s.script)
def test_bench_smoke_against_an_emulator(smoke: Smoke, emulator_runs: _Runs) -> None:
    emulator_runs.check(smoke)
