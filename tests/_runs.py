"""Running the real ``keyramp`` CLI in a subprocess against the session's emulators."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from keyramp.keyspace._metrics import _RUN_SLACK
from keyramp.profile._files import toml_value, write_profile
from keyramp.results._generator import DROP_LIMIT, LATE_LIMIT
from keyramp.results._thresholds import is_latency
from keyramp.targets._emulators import EMULATORS, RunningEmulator

__all__ = [
    "ENV_FOR_KIND",
    "assert_append_points",
    "assert_rate_held",
    "assert_thresholds_hold",
    "emulator_env",
    "key_rows",
    "keyramp",
    "keyramp_each",
    "load",
    "only_run_dir",
    "recorded_seconds",
    "timeseries_rows",
    "toml_value",
    "write_profile",
]

# The standard variable per emulator kind, from the emulator registry.
ENV_FOR_KIND = {kind: spec.env_var for kind, spec in EMULATORS.items()}


def emulator_env(*emulators: RunningEmulator) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV_FOR_KIND.values()}
    env.update({ENV_FOR_KIND[e.kind]: e.endpoint for e in emulators})
    env["PYTHONUNBUFFERED"] = "1"
    return env


def keyramp(*args: str, env: dict[str, str] | None = None, timeout: float = 240,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "keyramp", *args], capture_output=True, text=True, timeout=timeout,
        env=env, cwd=cwd, check=False,
    )


#: Each command line through the CLI's entry point (as ``python -m keyramp`` calls it), all in
#: one fresh interpreter: a process per command costs a start-up (~2-4 s CPU importing Locust,
#: grpc and numpy) that a test of refusals, which never get to start anything, need not pay.
_EACH = r"""
import contextlib, io, json, sys, traceback
from keyramp.cli._main import main
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            traceback.print_exc()
            code = None
    results.append({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
print(json.dumps(results))
"""


def keyramp_each(argvs: Iterable[Iterable[str]], *, env: dict[str, str] | None = None,
                 timeout: float = 300) -> list[dict[str, Any]]:
    """``{"code", "stdout", "stderr"}`` of each ``keyramp`` command line, run one after another in
    one subprocess (see ``_EACH``)."""
    argvs = [list(a) for a in argvs]
    proc = subprocess.run([sys.executable, "-c", _EACH, json.dumps(argvs)], capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(proc.stdout.splitlines()[-1])
    assert len(results) == len(argvs), results
    return results


def only_run_dir(out: Path) -> Path:
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def load(run_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((run_dir / name).read_text())


def timeseries_rows(run_dir: Path) -> list[dict[str, Any]]:
    """Every time series row of a run (finished cells and the parts of one in progress)."""
    from keyramp.results._read import read_timeseries

    return read_timeseries(run_dir).to_pylist()


def key_rows(run_dir: Path) -> list[dict[str, Any]]:
    from keyramp.results._read import read_keys

    return read_keys(run_dir).to_pylist()


def recorded_seconds(out: Path) -> int:
    """Closed seconds (``op = "*"`` rows) recorded so far by the run being written under ``out``."""
    runs = [p for p in out.iterdir() if p.is_dir() and (p / "timeseries").is_dir()] if out.exists() else []
    return sum(1 for r in timeseries_rows(runs[0]) if r["op"] == "*") if runs else 0


# -- Verdicts that hold on a busy machine ------------------------------------------------------------
# CI shares its 2 cores with other work: a run's latency and per-second counts are timings, and
# a loaded machine may starve the generator (or the emulator beside it). These helpers assert
# what a correct run guarantees whatever the load; each can still fail when the code is wrong.


def assert_thresholds_hold(cell: Mapping[str, Any], results: Iterable[Any] | None = None) -> None:
    """Every threshold of ``cell`` passed, or is a latency threshold of a cell the generator check
    flagged: "inconclusive" (never "pass"), its note giving the flag's reason. Never "fail".
    ``results``: ``ThresholdResult`` objects or their dicts; default: the cell's own."""
    rows = [r if isinstance(r, Mapping) else r.to_json() for r in (cell["thresholds"] if results is None else results)]
    assert rows, "no threshold evaluated"
    for r in rows:
        if r["verdict"] == "pass":
            assert r["passed"] is True, r
            continue
        assert r["verdict"] == "inconclusive" and r["passed"] is False, r
        assert is_latency(r["name"].rpartition(".")[2]), r  # only measured latency can be
        assert cell["generator_limited"] is True, (r, cell.get("generator"))
        assert "generator" in r["note"] and cell["generator"]["reason"] in r["note"], (r, cell["generator"])


def assert_rate_held(cell: Mapping[str, Any]) -> bool:
    """The measured phase ran its schedule, or records that it fell behind; returns whether it kept up.

    Judged over the whole phase (per-second counts are timings): never more operations than
    the schedule's timeline asked for, and at least 80 % of them unless the generator's own
    figures say it fell behind (over ``LATE_LIMIT`` of the operations late or ``DROP_LIMIT`` of
    the schedule dropped). An under-issuing pacer or a lost count fails either way.
    """
    timeline, total = cell["target_ops_per_s"], cell["total"]
    scheduled = sum(p["target"] for p in timeline)  # one point per second
    count, late, dropped = total["count"], total["late"], total["dropped"]
    assert 0 < count <= scheduled * 1.01 + 2, (count, scheduled)
    behind = late > LATE_LIMIT * count or dropped > DROP_LIMIT * (count + dropped)
    assert behind or count >= 0.8 * scheduled, (count, scheduled, late, dropped)
    return not behind


def assert_append_points(cell: Mapping[str, Any], expected: int) -> None:
    """``keyspace.append_points`` is what the key format implies, or more only when an insert's
    service time exceeded the metric's slack: inserts are sampled at completion, so one that
    took longer than the slack (5 % of the phase; a busy machine's stall on a short test run)
    completes after later keys and splits an append run. A stall never merges runs."""
    got = cell["keyspace"]["append_points"]
    stall_ms = cell["operations"]["insert"]["service_ms"]["max"]
    split = stall_ms > _RUN_SLACK * cell["duration_s"] * 1000
    assert got == expected or (split and got > expected), (got, expected, stall_ms)
