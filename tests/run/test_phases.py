from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _runs import emulator_env, keyramp, load, only_run_dir, write_profile

from keyramp.run._phases import _SETTLE_WINDOW_S, MAX_WARMUP_S

# The runner monkey-patches the standard library on import (Locust), so it is imported in a
# fresh interpreter, as `keyramp run` does, not in pytest's process.
_CHECK = """
import gc
from keyramp.run._driver import PHASE_GC_THRESHOLD, freeze_heap, thaw_heap
gc.unfreeze()
gc.set_threshold(700, 10, 10)
before = gc.get_freeze_count()
kept = [object() for _ in range(1000)]
saved = freeze_heap()
frozen, during = gc.get_freeze_count(), gc.get_threshold()
thaw_heap(saved)
print(before, frozen, gc.get_freeze_count(), *during, *gc.get_threshold(), PHASE_GC_THRESHOLD)
"""


def test_freeze_heap_moves_live_objects_out_of_the_collectors_view() -> None:
    out = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True, timeout=60, check=True)
    before, frozen, after, *thresholds = map(int, out.stdout.split())
    assert before == 0 and after == 0
    assert frozen >= 1000 + 10_000  # the objects above plus everything the imports left alive
    during, restored, phase = thresholds[:3], thresholds[3:6], thresholds[6]
    assert during == [phase, 10, 10] and phase > 700  # fewer young collections during the phase
    assert restored == [700, 10, 10]  # and the thresholds of before after it


@pytest.mark.slow
@pytest.mark.emulator
def test_local_and_distributed_cells_warm_up_the_same_way(tmp_path: Path, bigtable_emulator: Any) -> None:
    """One lifecycle: the first cell on an emulator warms up until settled whether its users run
    here or on two workers (the workers report their warm-up latencies to the master), and both
    write the same summary fields."""
    env = emulator_env(bigtable_emulator)
    profile = write_profile(
        tmp_path / "life.toml", {"name": "life", "backend": "bigtable", "duration": "2s", "seed": 3},
        workload={"ops": {"insert": 0.5, "read": 0.5}, "record_count": 100},
        schedule={"kind": "constant", "rate": 200, "warmup": "1s"},
    )
    summaries = {}
    for mode, extra in (("local", []), ("workers", ["--workers", "2"])):
        result = keyramp("run", str(profile), "--out", str(tmp_path / mode), "--quiet", *extra, env=env)
        assert result.returncode == 0, result.stderr[-2000:]
        summaries[mode] = load(only_run_dir(tmp_path / mode), "summary.json")
    cells = {mode: next(iter(s["cells"].values())) for mode, s in summaries.items()}
    for mode, cell in cells.items():
        # The profile's 1 s, then settle windows of 2 s: at least two windows are compared.
        assert 1.0 + 2 * _SETTLE_WINDOW_S <= cell["warmup_s"] <= MAX_WARMUP_S + 2.0, (mode, cell["warmup_s"])
        assert cell["total"]["count"] > 0 and cell["total"]["errors"] == 0
    assert set(cells["local"]) == set(cells["workers"])
    assert set(summaries["local"]) == set(summaries["workers"])


_CLOCK = """
import json, time
from gevent.event import Event
from keyramp.run._driver import final_tick, tick_phase
from keyramp.core._types import ALL_OPS
from keyramp.run._recorder import Recorder

class Sink:
    def __init__(self): self.rows = []
    def interval(self, **kw): pass
    def timeseries(self, rows): self.rows.extend(r for r in rows if r.op == ALL_OPS)
    def keys(self, cell, samples): pass
    def flush(self): pass

class Ctx:
    pacer = None

out = []
for duration in (2.0, 1.3, 1.6):
    sink = Sink()
    rec = Recorder(cell="c", ops=["insert"], sink=sink)
    start = time.perf_counter()
    rec.begin(start, duration_s=duration)
    loop = len(list(tick_phase(Ctx(), rec, start=start, duration_s=duration, stop=Event())))
    reached_end = time.perf_counter() >= start + duration
    final_tick(Ctx(), rec)
    out.append([duration, loop, reached_end, [r.second for r in sink.rows]])
stop = Event()
stop.set()
rec = Recorder(cell="c", ops=["insert"], sink=Sink())
out.append(len(list(tick_phase(Ctx(), rec, start=time.perf_counter(), duration_s=5.0, stop=stop))))
print(json.dumps(out))
"""


def test_the_phase_clock_leaves_its_last_second_to_the_final_tick() -> None:
    import json

    out = subprocess.run([sys.executable, "-c", _CLOCK], capture_output=True, text=True, timeout=60, check=True)
    *phases, stopped = json.loads(out.stdout)
    # whole seconds minus the last (closed after the drain); a remainder < 0.5 s joins the last second
    assert phases == [[2.0, 1, True, [0, 1]], [1.3, 0, True, [0]], [1.6, 1, True, [0, 1]]]
    assert stopped == 0  # a stop before the first second: no tick at all
