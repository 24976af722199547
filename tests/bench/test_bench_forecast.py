"""bench/bench_forecast.py in its smoke mode, so it cannot rot: a finished run of the quickstart's
shape written, ``keyramp forecast``'s function timed in a fresh process, every cell given a verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_forecast_bench_smoke(tmp_path: Path) -> None:
    out = tmp_path / "forecast.json"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_forecast.py"), "--smoke", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["cells"] == 2 and len(result["seconds"]["this"]["all"]) == 1
    assert result["seconds"]["this"]["median"] > 0 and len(result["machine"]["loadavg"]) == 3
    # The quickstart's first cells (sequential, random ids on Datastore) at its 500/50/5 launch.
    assert result["verdicts"]["this"] == "2 ['hotspot', 'ok']"
