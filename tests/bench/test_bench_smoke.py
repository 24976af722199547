"""Every bench in ``bench/`` is imported and parses its arguments; most run their ``--smoke`` path.
So a bench cannot rot.

Two processes, started together when the first test of this module asks (the emulator one
only when its test is selected):

* **One interpreter for the plain benches**: it imports every ``bench_*.py`` and calls its
  ``main(["--smoke", "--help"])`` (its parser built, ``_common.parse_args`` checking that every
  smoke default names an option), then runs ``main(["--smoke"])`` of each bench in ``PLAIN``,
  one after another. Start-up and the imports (Locust, the clients, numpy, Flask) are paid
  once, not once per bench.
* **bench_drivers' smoke run** on the suite's Bigtable emulator (``EMULATOR``), its keyramp
  contestant alone: the contestant that drives ``keyramp.run_profile`` through a
  ``RunObserver``, the public hook that replaced the monkey-patching that broke the bench.

The other emulator benches (``bench_overhead``, ``bench_rate``, …) take tens of seconds each
to run: here they are imported and parsed (and ``mypy`` type-checks ``bench/`` against the
library, as the README's test command runs it); ``KEYRAMP_BENCH_SMOKE=all`` runs their smoke
paths too, each in its own process. The compare benches' and ``bench_forecast``'s smoke runs
are checked in detail by ``test_bench_compare.py`` and ``test_bench_forecast.py``.

A smoke run writes its JSON into a temporary directory (``KEYRAMP_BENCH_RESULTS``), never into
``bench/results/``. Its figures mean nothing; what is checked is that the bench ran to its end
and measured something. Nothing here times anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _runs import emulator_env

from keyramp.targets._emulators import RunningEmulator

BENCH = Path(__file__).resolve().parents[2] / "bench"
ALL = os.environ.get("KEYRAMP_BENCH_SMOKE") == "all"

#: Run in one interpreter: each bench's ``main(argv)``, its stdout captured, its exit code and
#: any exception kept, a report written after every step (a crash still says how far it got).
_SCRIPT = r"""
import contextlib, importlib, io, json, sys, time, traceback
bench, report_file, steps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, bench)
report = {}
for name, mode, *extra in steps:
    out, entry, started = io.StringIO(), {}, time.monotonic()
    try:
        with contextlib.redirect_stdout(out):
            result = importlib.import_module(name).main(["--smoke", "--help"] if mode == "parse" else
                                                        ["--smoke", *extra])
        entry["code"] = (0 if result["passed"] else 1) if isinstance(result, dict) else (result or 0)
    except SystemExit as exc:
        entry["code"] = exc.code or 0
    except BaseException:
        entry["code"], entry["error"] = None, traceback.format_exc()
    entry["stdout"], entry["s"] = out.getvalue(), round(time.monotonic() - started, 2)  # (for the curious)
    report.setdefault(name, {})[mode] = entry
    with open(report_file, "w") as fh:
        json.dump(report, fh)
"""


@dataclass(frozen=True)
class Smoke:
    script: str
    #: ``bench/results/<saves>.json`` it writes (None: it prints only).
    saves: str | None
    #: What its JSON (or, without one, its stdout) must show: the bench measured something.
    check: Callable[[Any], bool]
    #: Exit codes it may end with: a bench that judges a goal exits 1 when its (meaningless) smoke figure misses.
    codes: tuple[int, ...] = (0,)

    @property
    def name(self) -> str:
        return self.script.removesuffix(".py")


def _every(rows: list[dict[str, Any]], key: str) -> bool:
    return bool(rows) and all((r.get(key) or 0) > 0 for r in rows)


#: Run in the plain benches' interpreter.
PLAIN = [
    Smoke("bench_hotpath.py", "hotpath", lambda d: d["us_per_op"]["recorder.record (recording only)"] > 0 and
          d["us_per_op"]["recorder.record, workload exception (capturing)"] > 0),
    Smoke("bench_keys.py", None, lambda out: "next_index" in out and "template" in out),
    Smoke("bench_metrics.py", "metrics", lambda d: d["tick_ms"] > 0 and d["scrape_bytes"] > 0),
    Smoke("bench_sink.py", "sink", lambda d: d["median"]["after (Parquet)"]["median_ms"] > 0),
    Smoke("bench_keyspace.py", "keyspace",
          lambda d: [(r["keys"], r["samples"]) for r in d["rows"]] == [("random", 5_000)]),
    Smoke("bench_catalog.py", "catalog", lambda d: d["runs"] == 12 and d["median_ms"]["list_warm"] > 0),
    Smoke("bench_ui.py", "ui", lambda d: d["median"]["first_view_ms"] > 0, codes=(0, 1)),
    Smoke("bench_storemodel.py", "storemodel", lambda d: all(v > 0 for v in d["us_per_offer"].values()) and
          d["cases"]["write, 1 document"]["state"]["admitted"] > 0),
    Smoke("bench_fidelity_scale.py", "fidelity_scale", lambda d: [r["store"] for r in d["rows"]] == ["firestore"]
          and d["rows"][0]["sequential_ops"] > 0),
    Smoke("bench_plan.py", "plan", lambda d: d["cells"] == 2 and len(d["cells_planned"]) == 2 and
          d["seconds"]["plan"]["median"] > 0, codes=(0, 1)),
]
#: Each in its own process against the official emulators it starts (``ALL``: every one).
EMULATOR = [
    Smoke("bench_drivers.py", "drivers", lambda d: _every(d["runs"], "ops") and
          {r["contestant"] for r in d["runs"]} == {"kr-grpc-gevent"}),
]
EMULATOR_TOO = [
    Smoke("bench_overhead.py", "overhead", lambda d: _every(d["runs"], "ops") and
          {r["mode"] for r in d["runs"]} == {"bare", "locust"}),
    Smoke("bench_saturation.py", "saturation", lambda d: _every(d["runs"], "ops_per_s")),
    Smoke("bench_workers.py", "workers", lambda d: _every(d["runs"], "count") and
          d["summary"]["2 workers"]["ops_per_s"] > 0),
    Smoke("bench_rate.py", "rate", lambda d: all(_every(r["steps"], "achieved") for r in d["runs"])),
    Smoke("bench_rundir.py", "rundir", lambda d: _every(d["runs"], "mb_per_hour_total")),
    Smoke("bench_soak.py", "soak", lambda d: d["ops"] > 0 and d["errors"] == 0),
    Smoke("bench_proxy.py", "proxy", lambda d: {r["way"] for r in d["runs"]} == {"direct", "proxied"} and
          _every(d["runs"], "ops_per_s"), codes=(0, 1)),
]
if ALL:
    EMULATOR += EMULATOR_TOO
#: Smoke-run by a test of their own (``test_bench_compare.py``, ``test_bench_forecast.py``).
OWN_TEST = ["bench_compare_aa.py", "bench_compare_ab.py", "bench_machine_limit.py", "bench_forecast.py"]
BENCHES = sorted(p.stem for p in BENCH.glob("bench_*.py"))


def test_the_lists_name_every_bench_once() -> None:
    listed = [s.script for s in PLAIN + EMULATOR] + ([] if ALL else [s.script for s in EMULATOR_TOO]) + OWN_TEST
    assert sorted(listed) == [f"{b}.py" for b in BENCHES]


class _Process:
    """One interpreter running ``steps`` (``[bench, "parse"]`` or ``[bench, "run", *args]``) into ``where``."""

    def __init__(self, steps: list[list[str]], where: Path, env: dict[str, str]) -> None:
        where.mkdir(parents=True)
        self.where, self.report_file = where, where / "report.json"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SCRIPT, str(BENCH), str(self.report_file), json.dumps(steps)], cwd=where,
            env={**env, "KEYRAMP_BENCH_RESULTS": str(where / "results")}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self._done: tuple[str, str] | None = None

    def wait(self) -> tuple[dict[str, Any], str]:
        if self._done is None:
            try:
                self._done = self.proc.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self._done = self.proc.communicate()
        report = json.loads(self.report_file.read_text()) if self.report_file.exists() else {}
        return report, f"exit {self.proc.returncode}; stderr:\n{self._done[1][-3000:]}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def _selected(request: pytest.FixtureRequest, test: Callable[..., None]) -> list[Smoke]:
    return [item.callspec.params["smoke"] for item in request.session.items
            if getattr(item, "function", None) is test and hasattr(item, "callspec")]


@pytest.fixture(scope="module")
def plain(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Process]:
    """The plain benches' interpreter: every bench parsed, the selected ones' smoke runs."""
    steps = [[b, "parse"] for b in BENCHES] + [[s.name, "run"] for s in _selected(request, test_bench_smoke)]
    process = _Process(steps, tmp_path_factory.mktemp("smoke") / "plain", emulator_env())
    yield process
    process.stop()


@pytest.fixture(scope="module")
def emulator_benches(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, plain: _Process,
                     bigtable_emulator: RunningEmulator) -> Iterator[dict[str, _Process]]:
    """Each selected emulator bench's process, started while the plain interpreter runs.
    bench_drivers runs on the suite's Bigtable emulator (no JVM of its own to start); the
    others (``KEYRAMP_BENCH_SMOKE=all``) start and stop their own."""
    tmp, env = tmp_path_factory.mktemp("smoke"), emulator_env()
    # keyramp's contestant alone: the public-hook path (aio's is the bench's own, imported and type-checked)
    shared = ["--emulator", bigtable_emulator.endpoint, "--emulator-pid", str(bigtable_emulator.pid),
              "--contestants", "kr-grpc-gevent"]
    started = {s.name: _Process([[s.name, "run", *(shared if s.name == "bench_drivers" else [])]], tmp / s.name, env)
               for s in _selected(request, test_emulator_bench_smoke)}
    yield started
    for process in started.values():
        process.stop()


def _check(smoke: Smoke, process: _Process) -> None:
    report, tail = process.wait()
    run = report.get(smoke.name, {}).get("run")
    assert run is not None, f"{smoke.script} did not run to its end: {tail}"
    why = f"{smoke.script} exited {run['code']}:\n{run['stdout'][-1500:]}\n{run.get('error', '')}\n{tail}"
    assert run["code"] in smoke.codes and "error" not in run, why
    if smoke.saves is None:
        assert smoke.check(run["stdout"]), why
        return
    saved = process.where / "results" / f"{smoke.saves}.json"
    assert saved.exists(), why
    assert smoke.check(json.loads(saved.read_text())), why


@pytest.mark.emulator
@pytest.mark.parametrize("smoke", EMULATOR, ids=lambda s: s.script)
def test_emulator_bench_smoke(smoke: Smoke, emulator_benches: dict[str, _Process]) -> None:
    """First in the module: its fixture starts the plain interpreter too, so both run at once."""
    _check(smoke, emulator_benches[smoke.name])


@pytest.mark.parametrize("bench", BENCHES)
def test_every_bench_imports_and_parses_its_arguments(bench: str, plain: _Process) -> None:
    report, tail = plain.wait()
    parsed = report.get(bench, {}).get("parse")
    assert parsed is not None, f"{bench} was not parsed: {tail}"
    assert parsed["code"] == 0 and "error" not in parsed, (parsed, tail)
    assert "--smoke" in parsed["stdout"] and "usage:" in parsed["stdout"], parsed["stdout"]


@pytest.mark.parametrize("smoke", PLAIN, ids=lambda s: s.script)
def test_bench_smoke(smoke: Smoke, plain: _Process) -> None:
    _check(smoke, plain)


def test_smoke_runs_leave_only_their_own_results(plain: _Process) -> None:
    """All plain benches share one results directory: each writes only its own file."""
    plain.wait()
    results = plain.where / "results"
    report = json.loads(plain.report_file.read_text())
    ran = [s for s in PLAIN if "run" in report.get(s.name, {})]
    written = sorted(p.name for p in results.iterdir()) if results.exists() else []
    assert written == sorted(f"{s.saves}.json" for s in ran if s.saves is not None)
