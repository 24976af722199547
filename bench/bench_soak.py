"""Compressed soak: 30 schedule-minutes of load on the Bigtable emulator, RSS sampled over time.

    .venv/bin/python bench/bench_soak.py [--wall 180] [--rate 300]

Runs ``keyramp run`` in a subprocess (time_scale = 1800 / wall seconds), samples the
keyramp process's RSS with psutil every second, and prints memory growth in MB/min
(least-squares slope after the first 20 % of the run, so start-up allocation is not
counted as growth). Writes ``bench/results/soak.json``. ``--smoke``: 3 s at 50 ops/s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, emulators, env_for, machine, parse_args, save, write_profile

SOAK_SCHEDULE_S = 1800.0


def _slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    return 60.0 * sum((t - mt) * (r - mr) for t, r in samples) / var if var else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wall", type=float, default=180.0, help="wall seconds (default 180)")
    ap.add_argument("--rate", type=float, default=300.0, help="ops/s (default 300)")
    ap.add_argument("--schedule-warmup", default="2s", help="the run's unmeasured warm-up (schedule.warmup)")
    args = parse_args(ap, argv, smoke={"wall": 3.0, "rate": 50.0, "schedule_warmup": "0s"})
    scale = SOAK_SCHEDULE_S / args.wall
    with tempfile.TemporaryDirectory(prefix="keyramp-soak-") as tmp_name, emulators("bigtable") as running:
        tmp = Path(tmp_name)
        profile = write_profile(
            tmp / "soak.toml", {"name": "soak", "backend": "bigtable", "duration": f"{args.wall:g}s"},
            workload={"ops": {"insert": 0.4, "read": 0.4, "update": 0.1, "scan": 0.1}, "record_count": 5000},
            keys={"strategy": "hashed_prefix"},
            schedule={"kind": "constant", "rate": args.rate, "time_scale": scale, "warmup": args.schedule_warmup},
        )
        proc = subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--out",
                                 str(tmp / "out"), "--quiet"], cwd=ROOT, env=env_for(running["bigtable"]),
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
    steady = [s for s in samples if s[0] >= 0.2 * args.wall]
    slope = _slope_mb_per_min(steady)
    print(f"soak: {args.wall:g} s wall = {SOAK_SCHEDULE_S / 60:g} schedule-minutes (time_scale {scale:g}), "
          f"{total['count']} ops, {total['errors']} errors, p99 {total['latency_ms']['p99']} ms")
    print(f"RSS: start {samples[0][1]:.1f} MB, after 20 % {steady[0][1]:.1f} MB, peak "
          f"{max(r for _, r in samples):.1f} MB, end {samples[-1][1]:.1f} MB")
    print(f"memory growth: {slope:.2f} MB/min (steady state, least squares over {len(steady)} samples)")
    save("soak", {"bench": "soak", "machine": machine(), "args": vars(args), "ops": total["count"],
                  "errors": total["errors"], "rss_mb": samples, "growth_mb_per_min": round(slope, 3)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
