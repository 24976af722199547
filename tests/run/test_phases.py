from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from keyramp.run._phases import _SETTLE_WINDOW_S, MAX_WARMUP_S
from _runs import emulator_env, keyramp, load, only_run_dir, write_profile

# The runner monkey-patches the standard library on import (Locust), so it is imported in a
# fresh interpreter, as `keyramp run` does, not in pytest's process.
_CHECK = """
import gc
from keyramp.run._phases import freeze_heap
gc.unfreeze()
before = gc.get_freeze_count()
kept = [object() for _ in range(1000)]
freeze_heap()
frozen = gc.get_freeze_count()
gc.unfreeze()
print(before, frozen, gc.get_freeze_count())
"""


def test_freeze_heap_moves_live_objects_out_of_the_collectors_view() -> None:
    out = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True, timeout=60, check=True)
    before, frozen, after = map(int, out.stdout.split())
    assert before == 0 and after == 0
    assert frozen >= 1000 + 10_000  # the objects above plus everything the imports left alive


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
