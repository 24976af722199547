"""keyramp vs a bare 8-thread client loop vs a plain Locust User: throughput and CPU per op.

Issue 11, items 1–3. Each contestant is one process (``bench/_contestant.py``) doing the
same operation code against the same emulator; repetitions are interleaved (the order of
contestants rotates every repetition) because the machine is shared and noisy, and the
verdicts are ratios of medians within this one run.

Run: ``.venv/bin/python bench/bench_overhead.py [--backends datastore bigtable] [--reps 2]``
Writes ``bench/results/overhead.json``. ``--smoke``: Bigtable inserts, ``bare`` and ``locust``
for 1 s (``bench_drivers --smoke`` runs the ``keyramp`` contestant).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, emulators, env_for, machine, median, parse_args, save, table, write_profile

MODES = ("bare", "locust", "keyramp")


def contestant(mode: str, profile: Path, endpoint: str, *, users: int, duration: float, env: dict[str, str],
               out: Path) -> dict[str, Any]:
    cmd = [sys.executable, str(ROOT / "bench" / "_contestant.py"), mode, str(profile), "--endpoint", endpoint,
           "--users", str(users), "--duration", str(duration), "--out", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH ")), None)
    if proc.returncode or line is None:
        raise RuntimeError(f"{mode} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return json.loads(line[6:])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backends", nargs="+", default=["datastore", "bigtable"])
    parser.add_argument("--ops", nargs="+", default=["insert", "read"])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--users", type=int, default=50, help="Locust/keyramp users (bare uses --threads)")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--schedule-warmup", default="2s", help="keyramp's unmeasured warm-up (schedule.warmup)")
    args = parse_args(parser, argv, smoke={"backends": ["bigtable"], "ops": ["insert"], "reps": 1, "duration": 1.0,
                                           "users": 4, "threads": 2, "modes": ["bare", "locust"],
                                           "schedule_warmup": "0s"})
    modes = [m for m in MODES if m in args.modes]
    before = machine()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-") as tmp:
        tmpdir = Path(tmp)
        for backend in args.backends:
            with emulators(backend) as running:
                emu = running[backend]
                env = env_for(emu)
                for op in args.ops:
                    profile = write_profile(
                        tmpdir / f"{backend}-{op}.toml",
                        {"name": f"bench-{backend}-{op}", "backend": backend, "duration": f"{args.duration}s",
                         "seed": 1},
                        workload={"ops": {op: 1.0}, "record_count": 2000 if op == "read" else 0,
                                  "read_distribution": "uniform"},
                        keys={"strategy": "random"},
                        schedule={"kind": "users", "users": args.users, "spawn_rate": args.users,
                                  "warmup": args.schedule_warmup},
                    )
                    for rep in range(args.reps):
                        order = modes if rep % 2 == 0 else modes[::-1]
                        for mode in order:
                            users = args.threads if mode == "bare" else args.users
                            r = contestant(mode, profile, emu.endpoint, users=users, duration=args.duration, env=env,
                                           out=tmpdir / "out")
                            r.update(backend=backend, op=op, rep=rep)
                            runs.append(r)
                            print(f"{backend:9} {op:6} rep{rep} {mode:8} {r['ops_per_s']:8.1f} ops/s "
                                  f"{r['cpu_us_per_op'] or 0:7.1f} µs CPU/op", flush=True)
    rows, summary = [], []
    for backend in args.backends:
        for op in args.ops:
            med = {}
            for mode in MODES:  # a mode left out (--modes) has nan figures
                rs = [r for r in runs if r["backend"] == backend and r["op"] == op and r["mode"] == mode]
                med[mode] = {"ops_per_s": median([r["ops_per_s"] for r in rs]),
                             "cpu_us_per_op": median([r["cpu_us_per_op"] for r in rs])}
            entry = {
                "backend": backend, "op": op, **{f"{m}_{k}": v for m in MODES for k, v in med[m].items()},
                "keyramp_vs_bare": round(med["keyramp"]["ops_per_s"] / med["bare"]["ops_per_s"], 3),
                "keyramp_vs_locust": round(med["keyramp"]["ops_per_s"] / med["locust"]["ops_per_s"], 3),
                "locust_vs_bare": round(med["locust"]["ops_per_s"] / med["bare"]["ops_per_s"], 3),
                "cpu_keyramp_vs_locust": round(med["keyramp"]["cpu_us_per_op"] / med["locust"]["cpu_us_per_op"], 3),
            }
            summary.append(entry)
            rows.append([backend, op, med["bare"]["ops_per_s"], med["locust"]["ops_per_s"], med["keyramp"]["ops_per_s"],
                         entry["keyramp_vs_bare"], entry["keyramp_vs_locust"], med["bare"]["cpu_us_per_op"],
                         med["locust"]["cpu_us_per_op"], med["keyramp"]["cpu_us_per_op"]])
    print(table(["backend", "op", "bare ops/s", "locust ops/s", "keyramp ops/s", "kr/bare", "kr/locust",
                 "bare µs/op", "locust µs/op", "kr µs/op"], rows))
    path = save("overhead", {"bench": "overhead", "args": vars(args), "machine_before": before,
                             "machine_after": machine(), "summary": summary, "runs": runs})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
