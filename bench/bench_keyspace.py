"""Benchmark: key-space analysis of 10 million sampled accesses, and heatmap rendering.

    .venv/bin/python bench/bench_keyspace.py [--samples N]

Prints the time for positions + hotspot metrics + tablet model over N sampled
accesses of a 1-hour cell (target: 10 M in under 10 s), then for the heatmap matrix
and PNG. Keys are random 16-hex-digit names (the common case: one 64-bit word each)
and zero-padded sequential ids; times are evenly spread over 3,600 s.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from keyramp.keyspace import analyze_cell, heatmap_data, render_png

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def _hex_keys(n: int, rng: np.random.Generator) -> np.ndarray:
    return _HEX[rng.integers(0, 16, (n, 16))].view("S16").reshape(-1).astype("U16")


def _sequential_keys(n: int) -> np.ndarray:
    digits = np.zeros((n, 20), dtype=np.uint8)
    ids = np.arange(1, n + 1, dtype=np.int64)
    for j in range(19, -1, -1):
        digits[:, j] = ids % 10
        ids //= 10
    return (digits + ord("0")).view("S20").reshape(-1).astype("U20")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000_000)
    args = parser.parse_args()
    n = args.samples
    rng = np.random.default_rng(1)
    times = np.linspace(0.0, 3600.0, n, endpoint=False)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, keys in (("random", _hex_keys(n, rng)), ("sequential", _sequential_keys(n))):
        ops = np.full(n, "insert")
        start = time.perf_counter()
        kp, t, metrics, timeline = analyze_cell(keys, times, ops, backend="firestore", rate_fn=lambda s: 2000.0)
        analysis = time.perf_counter() - start
        start = time.perf_counter()
        heat = heatmap_data(kp, t, buckets=1000, duration_s=3600.0)
        matrix = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            render_png(heat, Path(tmp) / "cell.png", title=f"bench — {name}", time_scale=1.0)
            png = time.perf_counter() - start
        assert timeline is not None
        print(
            f"{name:10s} {n:,} accesses: analysis {analysis:.2f} s "
            f"({n / analysis / 1e6:.1f} M/s; hot 1% {metrics['hottest_1pct_share']:.3f}, "
            f"peak tablets {timeline.summary()['peak_tablets']}), "
            f"heatmap matrix {matrix:.2f} s, PNG {png:.2f} s"
        )


if __name__ == "__main__":
    main()
