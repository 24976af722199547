"""bench/bench_forecast.py in its smoke mode, so it cannot rot: a finished run of the quickstart's
shape written, ``keyramp forecast``'s function timed in a fresh process, every cell given a verdict."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_forecast_bench_smoke(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import bench_forecast
    finally:
        sys.path.remove(str(BENCH))
    out = tmp_path / "forecast.json"
    bench_forecast.main(["--smoke", "--out", str(out)])  # the run written here, timed in a fresh process
    result = json.loads(out.read_text())
    assert result["cells"] == 2 and len(result["seconds"]["this"]["all"]) == 1
    assert result["seconds"]["this"]["median"] > 0 and len(result["machine"]["loadavg"]) == 3
    # The quickstart's first cells (sequential, random ids on Datastore) at its 500/50/5 launch.
    assert result["verdicts"]["this"] == "2 ['hotspot', 'ok']"
