from __future__ import annotations

import subprocess
import sys

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
