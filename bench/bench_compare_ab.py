"""A/B check for ``keyramp compare``: a real, injected regression must be flagged every time.

One Bigtable emulator; runs alternate between a direct connection (A) and one through
``keyramp.targets._netem.LatencyProxy`` adding ``--delay-ms`` per direction (B), in ABBA order so
a drift in machine load does not line up with one side. Every pair (A_i, B_i) goes
through the real ``keyramp compare B_i --baseline A_i`` CLI: it must exit 1 with p50 and
p99 ``worse``. The reverse pairs (B_i vs A_i) must flag ``better``, and consecutive A runs
(A/A on the same emulator) must flag nothing. Records the added latency next to the
injected round trip.

    .venv/bin/python bench/bench_compare_ab.py --pairs 5 --delay-ms 2 --keep /tmp/ab

``--smoke``: one pair of 3-second runs without warm-up (its verdicts mean nothing).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import emulators, env_for, machine, median, parse_args, save, table
from bench_compare_aa import PROFILE

from keyramp.compare import build_comparison
from keyramp.results._catalog import list_runs
from keyramp.targets._netem import LatencyProxy


def _run(profile: Path, results: Path, env: dict[str, str]) -> str:
    before = {r.run_id for r in list_runs(results)} if results.exists() else set()
    subprocess.run([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(results), "--quiet"],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (new,) = {r.run_id for r in list_runs(results)} - before
    return new


def _compare(results: Path, cand: str, base: str) -> tuple[int, dict]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        proc = subprocess.run([sys.executable, "-m", "keyramp", "compare", cand, "--baseline", base,
                               "--results", str(results), "--json", out.name, "--quiet"],
                              capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                              check=False)
        return proc.returncode, json.loads(Path(out.name).read_text())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--delay-ms", type=float, default=2.0, help="per direction (round trip gains twice this)")
    parser.add_argument("--keep", type=Path, help="keep the runs here; an existing series.json is reused")
    parser.add_argument("--name", default="compare_ab", help="bench/results/<name>.json (default %(default)s)")
    parser.add_argument("--warmup", default="2s", help="each run's unmeasured warm-up (schedule.warmup)")
    args = parse_args(parser, argv, smoke={"pairs": 1, "duration": "3s", "rate": 50, "warmup": "0s"})
    start_load = machine()
    with tempfile.TemporaryDirectory(prefix="kr-ab-") as tmp:
        results = args.keep or Path(tmp) / "results"
        results.mkdir(parents=True, exist_ok=True)
        series_file = results / "series.json"
        series: list[dict] = json.loads(series_file.read_text()) if series_file.exists() else []
        loads_file = results / "loads.json"  # 1-min load average after each run
        loads: list[float] = json.loads(loads_file.read_text()) if loads_file.exists() else []
        if not series:
            profile = Path(tmp) / "ab.toml"
            profile.write_text(PROFILE.format(backend="bigtable", duration=args.duration, rate=args.rate,
                                              warmup=args.warmup))
            with emulators("bigtable") as running:
                emulator = running["bigtable"]
                direct = env_for(emulator)
                with LatencyProxy(emulator.endpoint, delay_ms=args.delay_ms) as proxy:
                    slowed = {**direct, "BIGTABLE_EMULATOR_HOST": proxy.endpoint}
                    for i in range(args.pairs):
                        order = ("A", "B") if i % 2 == 0 else ("B", "A")  # ABBA: drift hits both sides
                        pair = {}
                        for side in order:
                            started = time.monotonic()
                            pair[side] = _run(profile, results, direct if side == "A" else slowed)
                            load = round(os.getloadavg()[0], 2)
                            loads.append(load)
                            print(f"pair {i + 1}/{args.pairs} {side} in {time.monotonic() - started:.1f} s "
                                  f"(load {load:.1f})", flush=True)
                        series.append(pair)
            series_file.write_text(json.dumps(series))
            loads_file.write_text(json.dumps(loads))
        runs = {r.run_id: r for r in list_runs(results)}

        rows, record = [], []
        for i, pair in enumerate(series):
            code, data = _compare(results, pair["B"], pair["A"])
            verdicts = {(v["op"], v["metric"]): v for v in data["verdicts"]}
            back = build_comparison([runs[pair["A"]]], baseline=runs[pair["B"]])
            back_flags = {(r.op, r.metric): r.verdict for r in back.rows}
            for op in ("insert", "read"):
                p50, p99 = verdicts[(op, "p50_ms")], verdicts[(op, "p99_ms")]
                added = p50["value"] - p50["baseline"]
                rows.append([i + 1, op, code, p50["verdict"], p99["verdict"], p50["baseline"], p50["value"],
                             p50["ratio"], added, back_flags[(op, "p50_ms")]])
                record.append({"pair": i + 1, "op": op, "exit_code": code, "baseline": pair["A"],
                               "candidate": pair["B"], "p50": {k: p50[k] for k in ("baseline", "value", "ratio",
                                                                                       "ci_low", "ci_high", "verdict")},
                               "p99": {k: p99[k] for k in ("baseline", "value", "ratio", "ci_low", "ci_high",
                                                           "verdict")},
                               "p50_added_ms": added, "reverse_p50_verdict": back_flags[(op, "p50_ms")]})
        print(table(["pair", "op", "exit", "p50", "p99", "A p50 ms", "B p50 ms", "ratio", "+ms", "B→A"], rows))

        # A/A on the same emulator: each A run against the previous one.
        a_runs = [runs[p["A"]] for p in series]
        aa = [build_comparison([cur], baseline=prev) for prev, cur in itertools.pairwise(a_runs)]
        aa_flagged = sum(1 for c in aa if any(r.verdict in ("worse", "better") for r in c.rows))

    exit1 = sum(1 for i in range(len(series)) if any(r["exit_code"] == 1 for r in record if r["pair"] == i + 1))
    p50_worse = {
        op: sum(1 for r in record if r["op"] == op and r["p50"]["verdict"] == "worse") for op in ("insert", "read")
    }
    p99_worse = {
        op: sum(1 for r in record if r["op"] == op and r["p99"]["verdict"] == "worse") for op in ("insert", "read")
    }
    reversed_ok = sum(1 for r in record if r["reverse_p50_verdict"] == "better")
    added = [r["p50_added_ms"] for r in record]
    print(f"A/B: exit 1 in {exit1} of {len(series)} pairs; p50 worse {p50_worse}, p99 worse {p99_worse} "
          f"(of {len(series)} each); reverse 'better' {reversed_ok}/{len(record)}; p50 added median "
          f"{median(added):.2f} ms for an injected {2 * args.delay_ms:g} ms round trip; "
          f"A/A (consecutive A runs): {aa_flagged} of {len(aa)} flagged")
    save(args.name, {
        "machine_start": start_load, "machine_end": machine(),
        "conditions": {"backend": "bigtable", "duration": args.duration, "rate": args.rate,
                       "delay_ms_per_direction": args.delay_ms, "pairs": len(series), "order": "ABBA",
                       "loadavg_1m_after_each_run": loads},
        "pairs": record,
        "summary": {"pairs_exit_1": exit1, "pairs": len(series), "p50_worse": p50_worse, "p99_worse": p99_worse,
                    "reverse_better": reversed_ok,
                    "p50_added_ms_median": median(added), "injected_round_trip_ms": 2 * args.delay_ms,
                    "aa_consecutive_flagged": aa_flagged, "aa_consecutive_of": len(aa)},
    })
    return 0 if exit1 == len(series) else 1


if __name__ == "__main__":
    raise SystemExit(main())
