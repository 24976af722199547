"""examples/pageviews: an application's own code (the official client, its own retries) meets the
hotspot on the store-like target, and survives it with the sharded counter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from keyramp.targets._emulators import RunningEmulator
from keyramp.targets._proxy_process import ProxyProcess
from keyramp.targets._proxy_stats import ProxyConfig

APP = Path(__file__).resolve().parents[2] / "examples" / "pageviews" / "pageviews.py"


@pytest.mark.emulator
def test_the_single_counter_loses_views_after_its_retries_and_the_sharded_one_survives(
        firestore_emulator: RunningEmulator, tmp_path: Path) -> None:
    proxy = ProxyProcess(store="firestore", upstream=firestore_emulator.endpoint,
                         config=ProxyConfig(scale=10, time_scale=1), log_dir=tmp_path).start()
    try:
        env = {**os.environ, "FIRESTORE_EMULATOR_HOST": proxy.endpoint}
        runs = {design: subprocess.run([sys.executable, str(APP), "--design", design, "--seconds", "4",
                                        "--page", f"p-{design}"], env=env, capture_output=True, text=True,
                                       timeout=120, check=False)
                for design in ("single", "sharded")}
        stats = proxy.stats()
    finally:
        proxy.stop()
    single, sharded = runs["single"], runs["sharded"]
    assert single.returncode == 1 and "lost after retries" in single.stdout and "Aborted" in single.stdout, single
    assert sharded.returncode == 0 and " 0 lost after retries" in sharded.stdout, sharded
    # the contention answers came from the per-document limit (cause "key"), not from a range
    assert set(stats["totals"]["throttled_by_cause"]) == {"key"}
