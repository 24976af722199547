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


def _finished(app: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = app.communicate(timeout=120)
    return subprocess.CompletedProcess(app.args, app.returncode, out, err)


@pytest.mark.emulator
def test_the_single_counter_loses_views_after_its_retries_and_the_sharded_one_survives(
        firestore_emulator: RunningEmulator, tmp_path: Path) -> None:
    proxy = ProxyProcess(store="firestore", upstream=firestore_emulator.endpoint,
                         config=ProxyConfig(scale=10, time_scale=1), log_dir=tmp_path).start()
    started: dict[str, subprocess.Popen[str]] = {}
    try:
        env = {**os.environ, "FIRESTORE_EMULATOR_HOST": proxy.endpoint}
        started |= {design: subprocess.Popen([sys.executable, str(APP), "--design", design, "--seconds", "4",
                                             "--page", f"p-{design}"], env=env, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True)
                   for design in ("single", "sharded")}  # at once: their documents differ, so do their limits
        runs = {design: _finished(app) for design, app in started.items()}
        stats = proxy.stats()
    finally:
        for app in started.values():
            if app.poll() is None:
                app.kill()
        proxy.stop()
    single, sharded = runs["single"], runs["sharded"]
    assert single.returncode == 1 and "lost after retries" in single.stdout and "Aborted" in single.stdout, single
    assert sharded.returncode == 0 and " 0 lost after retries" in sharded.stdout, sharded
    # the contention answers came from the per-document limit (cause "key"), not from a range
    assert set(stats["totals"]["throttled_by_cause"]) == {"key"}
