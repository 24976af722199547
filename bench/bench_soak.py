"""Compressed soak: 30 schedule-minutes of load on the Bigtable emulator, RSS sampled over time.

    .venv/bin/python bench/bench_soak.py [--wall 180] [--rate 300]

Runs ``keyramp run`` in a subprocess (time_scale = 1800 / wall seconds), samples the
keyramp process's RSS with psutil every second, and prints memory growth in MB/min
(least-squares slope after the first 20 % of the run, so start-up allocation is not
counted as growth).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from keyramp.targets._emulators import EmulatorManager  # noqa: E402

SOAK_SCHEDULE_S = 1800.0


def _slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    return 60.0 * sum((t - mt) * (r - mr) for t, r in samples) / var if var else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wall", type=float, default=180.0, help="wall seconds (default 180)")
    ap.add_argument("--rate", type=float, default=300.0, help="ops/s (default 300)")
    args = ap.parse_args()
    scale = SOAK_SCHEDULE_S / args.wall
    with tempfile.TemporaryDirectory(prefix="keyramp-soak-") as tmp_name:
        tmp = Path(tmp_name)
        manager = EmulatorManager(state_dir=tmp / "state")
        try:
            emu = manager.up(["bigtable"])["bigtable"]
            profile = tmp / "soak.toml"
            profile.write_text(
                f'name = "soak"\nbackend = "bigtable"\nduration = "{args.wall:g}s"\n'
                f'[workload]\nops = {{ insert = 0.4, read = 0.4, update = 0.1, scan = 0.1 }}\nrecord_count = 5000\n'
                f'[keys]\nstrategy = "hashed_prefix"\n'
                f'[schedule]\nkind = "constant"\nrate = {args.rate:g}\ntime_scale = {scale:g}\n')
            env = {**__import__("os").environ, "BIGTABLE_EMULATOR_HOST": emu.endpoint}
            proc = subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--out",
                                     str(tmp / "out"), "--quiet"], cwd=ROOT, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            ps = psutil.Process(proc.pid)
            samples: list[tuple[float, float]] = []
            t0 = time.monotonic()
            while proc.poll() is None:
                try:
                    rss = ps.memory_info().rss / 1e6
                    if rss > 0:
                        samples.append((time.monotonic() - t0, rss))
                except psutil.Error:
                    break
                time.sleep(1.0)
            _, stderr = proc.communicate()
            if proc.returncode != 0:
                print(stderr[-2000:], file=sys.stderr)
                return 1
            run_dir = next(p for p in (tmp / "out").iterdir() if p.is_dir())
            total = next(iter(json.loads((run_dir / "summary.json").read_text())["cells"].values()))["total"]
        finally:
            manager.down()
    steady = [s for s in samples if s[0] >= 0.2 * args.wall]
    slope = _slope_mb_per_min(steady)
    print(f"soak: {args.wall:g} s wall = {SOAK_SCHEDULE_S / 60:g} schedule-minutes (time_scale {scale:g}), "
          f"{total['count']} ops, {total['errors']} errors, p99 {total['latency_ms']['p99']} ms")
    print(f"RSS: start {samples[0][1]:.1f} MB, after 20 % {steady[0][1]:.1f} MB, peak "
          f"{max(r for _, r in samples):.1f} MB, end {samples[-1][1]:.1f} MB")
    print(f"memory growth: {slope:.2f} MB/min (steady state, least squares over {len(steady)} samples)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
