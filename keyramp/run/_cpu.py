"""The load process's own CPU over a measured phase, and its machine's (psutil).

Every thread of the process counts (gRPC's and the grpc driver's loop thread included). A
cell's summary carries both (``load_cpu``) so that ``keyramp.results._generator`` can tell a
generator that ran out of CPU, or a machine that starved it, from a slow store.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import psutil

from keyramp.results import LoadCpu

__all__ = ["CpuMeter", "CpuSample", "load_cpu_summary"]


class CpuSample(NamedTuple):
    """Since the meter started: this process's CPU s, wall s, and the machine's busy fraction."""

    cpu_s: float
    wall_s: float
    machine_busy: float


def _machine() -> tuple[float, float]:
    """(busy CPU s, total CPU s) of the whole machine, all cores."""
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    total = float(sum(times))
    return total - idle, total


class CpuMeter:
    """Samples CPU use since it was made; cheap enough for once a second."""

    def __init__(self) -> None:
        self._process = psutil.Process()
        self._cpu0 = self._cpu()
        self._wall0 = time.perf_counter()
        self._busy0, self._total0 = _machine()

    def _cpu(self) -> float:
        times = self._process.cpu_times()
        return float(times.user + times.system)

    def sample(self) -> CpuSample:
        busy, total = _machine()
        elapsed = total - self._total0
        return CpuSample(self._cpu() - self._cpu0, time.perf_counter() - self._wall0,
                         (busy - self._busy0) / elapsed if elapsed > 0 else 0.0)


def load_cpu_summary(samples: Sequence[Sequence[float]]) -> LoadCpu | None:
    """``load_cpu`` of a cell from each load process's ``CpuSample`` (a worker's comes as a list):
    cores used together and by the busiest process, and the busiest machine's busy share."""
    usable = [CpuSample(*s) for s in samples if len(s) == 3 and s[1] > 0]
    if not usable:
        return None
    per_process = [s.cpu_s / s.wall_s for s in usable]
    return LoadCpu(processes=len(usable), cpu_s=round(sum(s.cpu_s for s in usable), 3),
                   cores=round(sum(per_process), 3), max_process_cores=round(max(per_process), 3),
                   machine_busy=round(max(s.machine_busy for s in usable), 3), machine_cores=psutil.cpu_count())
