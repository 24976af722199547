"""Series of runs on a shared machine: a competing CPU load, the machine state, one run.

``busy_cores(1.0)`` keeps one core busy (one process spinning), ``busy_cores(1.5)`` a core
and a half (a spinning process plus one busy half of every 10 ms); each process is
started here and stopped here by its pid. ``MachineState`` measures the whole machine's
CPU busy share (psutil, every core, every process) and its load average over a stretch,
so each figure says what state the machine was really in, not what we hoped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from _common import ENV_FOR_KIND, emulators, env_for, save

from keyramp.results._catalog import list_runs

__all__ = ["MachineState", "bigtable", "busy_cores", "recorded_series", "run_profile", "save_series", "series_options"]

# One process: busy for ``duty`` of every 10 ms period (1.0: always).
_SPIN = """
import sys, time
duty = float(sys.argv[1])
period = 0.01
while True:
    start = time.perf_counter()
    while time.perf_counter() - start < duty * period:
        pass
    if duty < 1.0:
        time.sleep((1.0 - duty) * period)
"""


@contextlib.contextmanager
def busy_cores(cores: float) -> Iterator[list[int]]:
    """Keep ``cores`` cores busy with spinning processes while the block runs; yields their pids."""
    duties = [1.0] * int(cores) + ([cores - int(cores)] if cores - int(cores) > 1e-6 else [])
    procs = [subprocess.Popen([sys.executable, "-c", _SPIN, f"{d:.3f}"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for d in duties]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _busy_total() -> tuple[float, float]:
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    total = float(sum(times))
    return total - idle, total


@dataclass
class MachineState:
    """The machine's CPU busy share and 1-min load average from ``start()`` to each ``sample()``."""

    label: str = ""
    _busy0: float = 0.0
    _total0: float = 0.0
    loads: list[float] = field(default_factory=list)
    busy: list[float] = field(default_factory=list)

    def start(self) -> MachineState:
        self._busy0, self._total0 = _busy_total()
        return self

    def sample(self) -> float:
        """Busy share since the last sample (or start); also records the load average now."""
        busy, total = _busy_total()
        share = (busy - self._busy0) / (total - self._total0) if total > self._total0 else math.nan
        self._busy0, self._total0 = busy, total
        self.busy.append(round(share, 3))
        self.loads.append(round(os.getloadavg()[0], 2))
        return share

    def to_dict(self) -> dict[str, Any]:
        def span(values: list[float]) -> dict[str, float] | None:
            vals = sorted(v for v in values if not math.isnan(v))
            if not vals:
                return None
            return {"min": vals[0], "median": vals[len(vals) // 2], "max": vals[-1], "samples": len(vals)}

        return {"state": self.label, "cpus": os.cpu_count(), "cpu_busy_share": span(self.busy),
                "loadavg_1m": span(self.loads)}


def run_profile(profile: Path, results: Path, env: dict[str, str]) -> str:
    """One ``keyramp run`` into ``results``; the new run's id."""
    before = {r.run_id for r in list_runs(results)} if results.exists() else set()
    subprocess.run([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(results), "--quiet"],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (new,) = {r.run_id for r in list_runs(results)} - before
    return new


@contextlib.contextmanager
def bigtable(endpoint: str | None = None) -> Iterator[tuple[dict[str, str], str]]:
    """(environment for ``keyramp run``, endpoint) of a Bigtable emulator: the one at ``endpoint``
    (a test's, ``--emulator``), else one started here and stopped at the end."""
    if endpoint:
        env = {k: v for k, v in os.environ.items() if k not in ENV_FOR_KIND.values()}
        yield {**env, "BIGTABLE_EMULATOR_HOST": endpoint, "PYTHONUNBUFFERED": "1"}, endpoint
        return
    with emulators("bigtable") as running:
        yield env_for(running["bigtable"]), running["bigtable"].endpoint


def series_options(parser: argparse.ArgumentParser, *, name: str) -> None:
    """The options of every compare series (``name``: its result file, ``compare_aa`` …)."""
    parser.add_argument("--models", default="open,closed", help="comma-separated: open, closed")
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--busy", action="store_true", help="keep one core busy for the whole series")
    parser.add_argument("--busy-cores", type=float, default=1.0, metavar="N",
                        help="with --busy: how many cores to keep busy (2: both cores of the 2-core box)")
    parser.add_argument("--keep", type=Path, help="keep the runs here (an existing series.json is reanalysed)")
    parser.add_argument("--emulator", metavar="HOST:PORT", help="a running Bigtable emulator (default: start one)")
    parser.add_argument("--save", action="store_true", help=f"write bench/results/{name}[_busy].json")
    parser.add_argument("--out", type=Path, help="write the result JSON here too")


def recorded_series(keep: Path | None, tmp: Path,
                    record: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
    """(results directory, series): ``record(results)`` runs the series, unless ``keep`` already holds
    one (its ``series.json``), which is then only reanalysed."""
    results = keep or tmp / "results"
    results.mkdir(parents=True, exist_ok=True)
    series_file = results / "series.json"
    if series_file.exists():
        return results, json.loads(series_file.read_text())
    series = record(results)
    series_file.write_text(json.dumps(series))
    return results, series


def save_series(args: argparse.Namespace, name: str, result: dict[str, Any]) -> None:
    """``--save`` (``name`` or ``name_busy``) and ``--out``."""
    if args.save:
        save(f"{name}_busy" if args.busy else name, result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
