"""Where does a shared test box stop measuring the store? The evidence for ``MACHINE_LIMIT``.

The emulator runs on the load machine, so when that machine nears saturation the
generator's queue *and* the emulator's slowness are the machine's. This bench runs three
profiles against one Bigtable emulator while spinning processes keep 0 … 2 cores busy
(``_series.busy_cores``; levels in ascending then descending order, so a drift in the other
load on the machine hits both ends): a light open-model profile (200 ops/s), the closed
model of issue 32 (8 users, inserts) and an overloaded open-model profile (3,000 ops/s).
Per run it records what ``keyramp run`` measured itself (``load_cpu.machine_busy``, the
busiest load process, late and dropped shares, service time) and the verdict it wrote
(``generator_limited`` and its reason), so the threshold can be read off the point where the
light profile's service time (the emulator as the client sees it) leaves its unloaded value.

    .venv/bin/python bench/bench_machine_limit.py --save            # ~12 min
    .venv/bin/python bench/bench_machine_limit.py --smoke           # a few runs of 1 s
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, median, parse_args, save, table, write_profile
from _series import MachineState, bigtable, busy_cores, run_profile

from keyramp.results._catalog import load_run
from keyramp.results._summary import GeneratorVerdict, Latency, LoadCpu, OpStats

PROFILES: dict[str, dict[str, Any]] = {
    "light": {"workload": {"ops": {"insert": 0.7, "read": 0.3}, "record_count": 300, "value_size": 128},
              "schedule": {"kind": "constant", "rate": 200, "max_users": 10}},
    "closed": {"workload": {"ops": {"insert": 1.0}, "record_count": 300, "value_size": 128},
               "schedule": {"kind": "users", "users": 8}},
    "overload": {"workload": {"ops": {"insert": 1.0}, "record_count": 300, "value_size": 128},
                 "schedule": {"kind": "constant", "rate": 3000, "max_users": 50}},
}
LEVELS = (0.0, 0.5, 1.0, 1.25, 1.5, 1.75, 2.0)


def _figures(run_dir: Path) -> dict[str, Any]:
    run = load_run(run_dir)
    (cell,) = run.cells.values()
    total, cpu, gen = cell.total or OpStats(count=0), cell.load_cpu or LoadCpu(), cell.generator or GeneratorVerdict()
    latency, service = total.latency_ms or Latency(), total.service_ms or Latency()
    count = total.count or 0
    return {"machine_busy": cpu.machine_busy, "busiest_process": cpu.max_process_cores,
            "ops_per_s": total.ops_per_s, "p50_ms": latency.p50, "p99_ms": latency.p99,
            "service_p50_ms": service.p50, "service_mean_ms": service.mean,
            "late": round((total.late or 0) / count, 3) if count else None,
            "dropped": gen.dropped_fraction, "users_busy": gen.users_busy,
            "generator_limited": cell.generator_limited, "reason": gen.reason}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="light,closed,overload")
    parser.add_argument("--levels", default=",".join(f"{x:g}" for x in LEVELS), help="cores kept busy")
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--emulator", metavar="HOST:PORT", help="a running Bigtable emulator (default: start one)")
    parser.add_argument("--save", action="store_true", help="write bench/results/machine_limit.json")
    parser.add_argument("--out", type=Path, help="write the result JSON here too")
    # --smoke: levels 0 and 0.5, 2 s runs, light profile, one way up: the path
    args = parse_args(parser, argv, smoke={"profiles": "light", "levels": "0,0.5", "duration": "2s"})
    names = args.profiles.split(",")
    levels = [float(x) for x in args.levels.split(",")]
    order = levels + levels[::-1][1:-1] if not args.smoke else levels  # up, then down: drift hits both ends
    warmup = "0s" if args.smoke else "2s"
    duration = args.duration
    start = machine()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kr-machine-") as tmp, bigtable(args.emulator) as (env, _):
        results = Path(tmp) / "results"
        profiles = {n: write_profile(Path(tmp) / f"{n}.toml",
                                     {"name": f"bench-machine-{n}", "backend": "bigtable", "duration": duration,
                                      "seed": 7}, keys={"strategy": "random"},
                                     workload=PROFILES[n]["workload"],
                                     schedule={**PROFILES[n]["schedule"], "warmup": warmup}) for n in names}
        for level in order:
            with busy_cores(level):
                for name in names:
                    state = MachineState().start()
                    run_id = run_profile(profiles[name], results, env)
                    state.sample()
                    row = {"profile": name, "busy_cores": level, "outside_busy": state.busy[0],
                           "loadavg_1m": state.loads[0], **_figures(results / run_id)}
                    rows.append(row)
                    print(f"{name:8s} {level:4.2f} cores busy: machine {row['machine_busy']}, "
                          f"service p50 {row['service_p50_ms']} ms, late {row['late']}, "
                          f"limited {row['generator_limited']}", flush=True)
    base = {n: median([r["service_p50_ms"] for r in rows if r["profile"] == n and r["busy_cores"] == 0.0
                       and r["service_p50_ms"]]) for n in names}
    for r in rows:
        r["service_p50_vs_unloaded"] = round(r["service_p50_ms"] / base[r["profile"]], 3) \
            if r["service_p50_ms"] and base[r["profile"]] else None
    rows.sort(key=lambda r: (r["profile"], r["machine_busy"] or 0.0))
    print(table(["profile", "cores busy", "machine", "busiest", "ops/s", "svc p50", "x unloaded", "late",
                 "dropped", "limited"],
                [[r["profile"], r["busy_cores"], r["machine_busy"], r["busiest_process"], r["ops_per_s"],
                  r["service_p50_ms"], r["service_p50_vs_unloaded"], r["late"], r["dropped"],
                  r["generator_limited"]] for r in rows]))
    result = {"machine_start": start, "machine_end": machine(),
              "conditions": {"backend": "bigtable", "duration": duration, "levels": order,
                             "profiles": {n: PROFILES[n] for n in names}},
              "runs": rows}
    if args.save:
        save("machine_limit", result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
