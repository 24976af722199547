"""Benchmark: key-space analysis of 10 million sampled accesses, per stage, and the heatmap.

    .venv/bin/python bench/bench_keyspace.py [--samples N] [--no-save] [--before-src DIR] [--smoke]

For random 16-hex-digit keys and zero-padded sequential ids (N inserts evenly spread over
a 1-hour cell), writes the samples as the run directory does (``keys/<cell>.parquet``
through the Parquet writer) and times each stage: the load (``load_keys``: pyarrow into
numpy arrays), positions (lead words + ``searchsorted`` against the reference), hotspot
metrics (time-binned, with positions against the range at each bin's start), the tablet
model, the heatmap matrix and PNG. Goals: analysis (positions + metrics + model) of 10 M
in under 10 s (issue 5); load < 1 s and load + analysis < 3 s (issue 20).
Then the launch forecast (issue #16) of the same cell, which runs after every cell: keys
regenerated from the strategy (the usual path: its cost does not grow with the samples),
and the recorded 10 M positions replayed (the path for store-allocated keys: thinned).

``--before-src DIR`` (the code before Parquet: ``git archive 5413844 | tar -x -C DIR``)
also writes the same samples as ``keys.csv`` and times that code's numpy CSV loader against
this one's Parquet load, each in fresh processes, interleaved (A B B A), so the before and
after figures come from one session on the same data. Writes bench/results/keyspace.json
with the machine's load and versions. ``--smoke``: 5,000 random keys, a 10-minute launch to 200 ops/s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from _common import machine, parse_args, save, table

from keyramp.forecast._forecast import forecast_cell
from keyramp.keyspace import (
    heatmap_data,
    hotspot_metrics,
    key_positions,
    load_keys,
    params_for,
    render_png,
    simulate,
)
from keyramp.keyspace._load import insert_mask
from keyramp.profile._profile import parse_profile

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)


def _hex_keys(n: int, rng: np.random.Generator) -> np.ndarray:
    return _HEX[rng.integers(0, 16, (n, 16), dtype=np.uint8)].view("S16").reshape(-1)


def _digits(values: np.ndarray, width: int) -> np.ndarray:
    out = np.empty((len(values), width), dtype=np.uint8)
    v = values.astype(np.int64)
    for j in range(width - 1, -1, -1):
        out[:, j] = _DIGITS[v % 10]
        v //= 10
    return out


def _sequential_keys(n: int) -> np.ndarray:
    return np.ascontiguousarray(_digits(np.arange(1, n + 1), 20)).view("S20").reshape(-1)


def _write_csv(path: Path, keys: np.ndarray, times: np.ndarray) -> None:
    """``cell,t,op,key`` rows as the run directory writes them (built as one byte matrix)."""
    n, width = len(keys), keys.itemsize
    tenths = np.round(times * 10_000).astype(np.int64)  # t with 4 decimals, fixed width "0000.0000"
    t_txt = np.concatenate([_digits(tenths // 10_000, 4), np.full((n, 1), ord("."), np.uint8),
                            _digits(tenths % 10_000, 4)], axis=1)
    parts = [np.frombuffer(b"c00,", np.uint8), t_txt, np.frombuffer(b",insert,", np.uint8),
             keys.view(np.uint8).reshape(n, width), np.frombuffer(b"\r\n", np.uint8)]
    rows = np.concatenate([np.broadcast_to(p, (n, len(p))) if p.ndim == 1 else p for p in parts], axis=1)
    with path.open("wb") as fh:
        fh.write(b"cell,t,op,key\r\n")
        rows.tofile(fh)


def _write_parquet(run: Path, keys: np.ndarray, times: np.ndarray) -> None:
    """The samples as the run directory writes them: parts, then compacted into keys/c00.parquet."""
    from keyramp.results._parquet import KEYS_SCHEMA, CellWriter

    (run / "keys").mkdir(parents=True)
    writer = CellWriter(run / "keys", "c00", "keys")
    step = 1 << 20
    for a in range(0, len(keys), step):
        n = len(keys[a:a + step])
        columns = [pa.array(["c00"] * n, pa.string()), pa.array(np.rint(times[a:a + step] * 1e6).astype(np.int64)),
                   pa.array(["insert"] * n, pa.string()), pa.array(keys[a:a + step], pa.binary()).cast(pa.string())]
        # the columns a newer recorder adds (kind, index, access) are null, as in an older run's files
        columns += [pa.nulls(n, f.type) for f in list(KEYS_SCHEMA)[len(columns):]]
        writer.append(pa.Table.from_arrays(columns, schema=KEYS_SCHEMA))
        writer.flush()
    writer.finish()


# imports before the clock (this code's reader is imported lazily by load_keys; the old one has none)
_LOAD = ("import sys, time, contextlib; from pathlib import Path; from keyramp.keyspace import load_keys\n"
         "with contextlib.suppress(ImportError): import keyramp.results._read\n"
         "t0 = time.perf_counter(); ck = load_keys(Path(sys.argv[1]))['c00']; "
         "print(time.perf_counter() - t0, len(ck))")


def _load_in_fresh_process(path: Path, src: Path | None) -> float:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    proc = subprocess.run([sys.executable, "-c", _LOAD, str(path)], env=env, cwd=src or Path.cwd(),
                          capture_output=True, text=True, timeout=600, check=True)
    seconds, _ = proc.stdout.split()
    return float(seconds)


def _forecast(name: str, ck: Any, metrics: dict[str, Any], *, regenerate: bool, ceiling: float,
              launch_s: int = 3600) -> dict[str, Any]:
    """The launch forecast of the cell (500/50/5 to ``ceiling`` ops/s for ``launch_s``), as the runner makes it."""
    strategy = {"random": "random", "sequential": "padded_sequential"}[name]
    profile = parse_profile({"name": "bench", "backend": "firestore", "workload": {"ops": {"insert": 1.0}},
                             "keys": {"strategy": strategy if regenerate else "server_allocated"},
                             "launch": {"kind": "ramp_500_50_5", "ceiling": ceiling, "duration": f"{launch_s}s"}})
    assert profile.launch is not None
    summary = {"operations": {"insert": {"count": len(ck)}}, "duration_s": 3600.0,
               "keyspace": {"hottest_1pct_share": metrics["hottest_1pct_share"], "samples": len(ck)}}
    cell = profile.cells[0]
    return forecast_cell(backend="firestore", strategy=cell.strategy, settings=profile, launch=profile.launch,
                         cell_summary=summary, samples=None if regenerate else ck, cell_schedule=cell.schedule,
                         horizon_s=float(launch_s))


def _timed(stages: dict[str, float], name: str, fn: Any) -> Any:
    start = time.perf_counter()
    out = fn()
    stages[name] = round(time.perf_counter() - start, 3)
    return out


def bench(name: str, keys: np.ndarray, times: np.ndarray, tmp: Path, before_src: Path | None, *,
          ceiling: float = 10_000, launch_s: int = 3600) -> dict[str, Any]:
    n = len(keys)
    stages: dict[str, float] = {}
    run = tmp / f"run-{name}"
    _write_parquet(run, keys, times)
    sizes = {"parquet_mb": round((run / "keys" / "c00.parquet").stat().st_size / 1e6, 2)}
    fresh: dict[str, list[float]] = {"parquet": []}
    if before_src is not None:
        _write_csv(tmp / "keys.csv", keys, times)
        sizes["csv_mb"] = round((tmp / "keys.csv").stat().st_size / 1e6, 1)
        fresh["csv_before"] = []
        for order in (("csv_before", "parquet"), ("parquet", "csv_before")):
            for what in order:
                src, path = (before_src, tmp / "keys.csv") if what == "csv_before" else (None, run)
                fresh[what].append(round(_load_in_fresh_process(path, src), 3))
        (tmp / "keys.csv").unlink()
    ck = _timed(stages, "load", lambda: load_keys(run)["c00"])
    assert len(ck) == n
    inserts = insert_mask(ck.op)
    kp = _timed(stages, "positions", lambda: key_positions(ck.key, inserts=inserts, times=ck.t))
    metrics = _timed(stages, "metrics", lambda: hotspot_metrics(kp.pos, ck.t, inserts=inserts, distinct=kp.distinct,
                                                                   positions=kp))
    timeline = _timed(stages, "tablet_model", lambda: simulate(kp.pos, ck.t, rate_fn=lambda s: 2000.0,
                                                                params=params_for("firestore"), duration_s=3600.0))
    fc = _timed(stages, "forecast_regenerated", lambda: _forecast(name, ck, metrics, regenerate=True, ceiling=ceiling,
                                                                  launch_s=launch_s))
    _timed(stages, "forecast_recorded", lambda: _forecast(name, ck, metrics, regenerate=False, ceiling=ceiling,
                                                          launch_s=launch_s))
    heat = _timed(stages, "heatmap_matrix", lambda: heatmap_data(kp, ck.t, buckets=1000, duration_s=3600.0))
    _timed(stages, "png", lambda: render_png(heat, tmp / "cell.png", title=f"bench - {name}"))
    analysis = round(stages["positions"] + stages["metrics"] + stages["tablet_model"], 3)
    return {
        "keys": name,
        "samples": n,
        **stages,
        "analysis_s": analysis,
        "analysis_with_load_s": round(analysis + stages["load"], 3),
        **sizes,
        "load_fresh_process_s": fresh,
        "hottest_1pct_share": round(metrics["hottest_1pct_share"], 4),
        "moving_hotspot": metrics["moving_hotspot"],
        "peak_tablets": timeline.summary()["peak_tablets"],
        "forecast": f"{fc['verdict']} {fc['throttled_fraction']}",
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--before-src", type=Path, default=None, metavar="DIR")
    parser.add_argument("--launch-ceiling", type=float, default=10_000, help="the forecast launch's peak ops/s")
    parser.add_argument("--launch-s", type=int, default=3600, help="the forecast launch's length (s)")
    parser.add_argument("--keys", nargs="+", default=["random", "sequential"], choices=["random", "sequential"])
    # (--smoke: random keys only; sequential ones take the same code path, with a different answer)
    args = parse_args(parser, argv, smoke={"samples": 5_000, "launch_ceiling": 200, "launch_s": 600,
                                                  "keys": ["random"]})
    n = args.samples
    facts = machine()
    rng = np.random.default_rng(1)
    times = np.linspace(0.0, 3600.0, n, endpoint=False)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        makers = {"random": lambda: _hex_keys(n, rng), "sequential": lambda: _sequential_keys(n)}
        for name in args.keys:
            rows.append(bench(name, makers[name](), times, Path(tmp), args.before_src, ceiling=args.launch_ceiling,
                              launch_s=args.launch_s))
            print(rows[-1], flush=True)
    cols = ["keys", "samples", "load", "positions", "metrics", "tablet_model", "analysis_s", "analysis_with_load_s",
            "forecast_regenerated", "forecast_recorded", "heatmap_matrix", "png", "parquet_mb", "hottest_1pct_share"]
    print(f"load average before {facts['loadavg']} on {facts['cpus']} cores")
    print(table(cols, [[r[c] for c in cols] for r in rows]))
    for r in rows:
        print(f"{r['keys']}: load in fresh processes {r['load_fresh_process_s']} (sizes {r.get('csv_mb', '-')} MB CSV, "
              f"{r['parquet_mb']} MB Parquet)")
    if not args.no_save:
        save("keyspace", {"machine": facts, "machine_after": machine(),
                          "goal": "analysis of 10 M samples < 10 s; load < 1 s; load + analysis < 3 s", "rows": rows})


if __name__ == "__main__":
    main()
