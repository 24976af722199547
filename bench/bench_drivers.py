"""Drivers (issue 18): the official client vs raw gRPC, per store, writes and reads, in one run.

Contestants (each one process, ``bench/_contestant.py``, same operation code and keys):

- ``bare``: the official client in N OS threads (default 8), no gevent, no Locust;
- ``aio``: raw ``grpc.aio`` tasks on one event loop, requests built by the ``grpc``
  driver (the practical limit of Python gRPC on this box);
- ``locust``: a plain Locust ``User`` on the official client;
- ``kr-client``: ``keyramp run``, ``driver = "client"``;
- ``kr-grpc``: ``keyramp run``, ``driver = "grpc"`` (``grpc.aio`` executor behind gevent);
- ``kr-grpc-gevent``: ``driver = "grpc"`` with gRPC's synchronous API under gevent;
- ``kr-grpc-base``: ``kr-grpc`` importing the keyramp of ``--base-tree DIR`` (another commit's
  source, e.g. ``git archive main | tar -x -C DIR``): an A/B of the driver in the same run.

All gevent contestants run ``--users`` (default 32) users, closed model. Repetitions are
interleaved (``_order``: A B, B A, B A, A B for two contestants) because the machine is
shared; verdicts are ratios of medians within this run. Each result carries the load
process's CPU per operation, the emulator's CPU per operation and the machine's busy
cores over the same measured window: on 2 cores, the emulator and other processes take
their share, which is what bounds every contestant's absolute ops/s.

Run: ``.venv/bin/python bench/bench_drivers.py [--stores bigtable] [--ops insert] [--reps 3]``
Writes ``bench/results/drivers.json``. ``--smoke``: Bigtable inserts, ``aio`` and
``kr-grpc``, 3 s each (``keyramp``'s window opens after the phase's first second).
``--emulator HOST:PORT --emulator-pid PID``: a running Bigtable emulator instead of a fresh one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, emulators, env_for, machine, median, parse_args, save, table, write_profile

from keyramp.targets._emulators import RunningEmulator

#: name -> (_contestant mode, driver, executor)
CONTESTANTS: dict[str, tuple[str, str, str]] = {
    "bare": ("bare", "client", "aio"),
    "aio": ("aio", "grpc", "aio"),
    "locust": ("locust", "client", "aio"),
    "kr-client": ("keyramp", "client", "aio"),
    "kr-grpc": ("keyramp", "grpc", "aio"),
    "kr-grpc-gevent": ("keyramp", "grpc", "gevent"),
    "kr-grpc-base": ("keyramp", "grpc", "aio"),  # keyramp of --base-tree (another commit), driver grpc
}
STORES = ("datastore", "firestore", "bigtable")


def contestant(name: str, profile: Path, endpoint: str, emulator_pid: int, *, users: int, threads: int,
               duration: float, env: dict[str, str], out: Path, base_tree: str | None = None) -> dict[str, Any]:
    mode, driver, executor = CONTESTANTS[name]
    if name == "kr-grpc-base":
        if not base_tree:
            raise SystemExit("kr-grpc-base needs --base-tree DIR (a keyramp source tree)")
        env = {**env, "KEYRAMP_BENCH_TREE": base_tree}
    cmd = [sys.executable, str(ROOT / "bench" / "_contestant.py"), mode, str(profile), "--endpoint", endpoint,
           "--users", str(threads if mode == "bare" else users), "--duration", str(duration), "--out", str(out),
           "--driver", driver, "--executor", executor, "--emulator-pid", str(emulator_pid)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH ")), None)
    if proc.returncode or line is None:
        raise RuntimeError(f"{name} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return {"contestant": name, **json.loads(line[6:])}


def _profile(tmp: Path, store: str, op: str, driver: str, *, users: int, duration: float, warmup: str,
             rate: float | None = None) -> Path:
    """Closed model with ``users`` users, or (``rate``) an open-model constant rate."""
    schedule = ({"kind": "users", "users": users, "spawn_rate": users, "warmup": warmup} if rate is None else
                {"kind": "constant", "rate": rate, "max_users": users, "warmup": warmup})
    return write_profile(
        tmp / f"{store}-{op}-{driver}-{rate or 'closed'}.toml",
        {"name": f"bench-{store}-{op}-{driver}", "backend": store, "driver": driver, "duration": f"{duration}s",
         "seed": 1},
        workload={"ops": {op: 1.0}, "record_count": 2000 if op == "read" else 0, "read_distribution": "uniform",
                  "value_size": 64},
        keys={"strategy": "random"},
        schedule=schedule,
    )


def _order(names: Sequence[str], rep: int) -> list[str]:
    """Repetition ``rep``'s order: rotated every other repetition, reversed on odd ones, so two
    contestants alternate A B, B A, B A, A B (a rotation and a reversal would cancel out for two)."""
    shift = (rep // 2) % len(names)
    order = list(names[shift:]) + list(names[:shift])
    return order[::-1] if rep % 2 else order


def summarise(runs: list[dict[str, Any]], stores: list[str], ops: list[str], names: list[str]) -> list[dict[str, Any]]:
    summary = []
    for store in stores:
        for op in ops:
            med: dict[str, dict[str, float]] = {}
            for name in names:
                rs = [r for r in runs if r["store"] == store and r["op"] == op and r["contestant"] == name]
                med[name] = {k: median([r[k] for r in rs if r.get(k) is not None])
                             for k in ("ops_per_s", "cpu_us_per_op", "emulator_us_per_op", "machine_busy_cores")}
            bare = med["bare"]["ops_per_s"] if "bare" in med else None
            summary.append({"store": store, "op": op, "median": med,
                            "vs_bare": {n: round(m["ops_per_s"] / bare, 3) for n, m in med.items()} if bare else {},
                            "vs_aio_per_rep": _paired([r for r in runs if r["store"] == store and r["op"] == op],
                                                      names, "aio")})
    return summary


def _paired(runs: list[dict[str, Any]], names: list[str], base: str) -> dict[str, dict[str, list[float]]]:
    """Each contestant's ops/s and CPU per op over ``base``'s in the same repetition (its neighbour
    in the interleaved order): the ratios the shared machine disturbs least, one per repetition."""
    out: dict[str, dict[str, list[float]]] = {}
    by_rep = {(r["rep"], r["contestant"]): r for r in runs}
    for name in names:
        if name == base:
            continue
        pairs = [(by_rep[rep, name], by_rep[rep, base]) for rep, n in by_rep if n == name and (rep, base) in by_rep]
        out[name] = {
            "ops": [round(a["ops_per_s"] / b["ops_per_s"], 3) for a, b in pairs if b["ops_per_s"]],
            "cpu": [round(a["cpu_us_per_op"] / b["cpu_us_per_op"], 3) for a, b in pairs
                    if a.get("cpu_us_per_op") and b.get("cpu_us_per_op")]}
    return out


@contextlib.contextmanager
def _emulator(store: str, given: str | None, pid: int | None) -> Iterator[RunningEmulator]:
    """A fresh emulator for ``store``, or the running Bigtable emulator ``given`` (HOST:PORT, its
    process ``pid``): the test suite's, so a smoke run starts no JVM of its own."""
    if given is None:
        with emulators(store) as running:
            yield running[store]
        return
    if store != "bigtable" or pid is None:
        raise SystemExit("--emulator is a running Bigtable emulator: with --stores bigtable and --emulator-pid")
    host, port = given.rsplit(":", 1)
    yield RunningEmulator(kind="bigtable", host=host, port=int(port), pid=pid, log_path="", started_at="")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stores", nargs="+", default=list(STORES), choices=STORES)
    parser.add_argument("--ops", nargs="+", default=["insert", "read"])
    parser.add_argument("--contestants", nargs="+", default=list(CONTESTANTS), choices=list(CONTESTANTS))
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--users", type=int, default=32, help="gevent users and aio tasks")
    parser.add_argument("--threads", type=int, default=8, help="OS threads of the bare loop")
    parser.add_argument("--latency-rate", type=float, default=300.0,
                        help="also run keyramp client vs grpc at this open-model rate (0: skip)")
    parser.add_argument("--warmup", type=float, default=20.0,
                        help="seconds of unmeasured load on each fresh emulator first (JVM JIT)")
    parser.add_argument("--schedule-warmup", default="2s", help="each run's own unmeasured warm-up (schedule.warmup)")
    parser.add_argument("--name", default="drivers", help="result file name (bench/results/NAME.json)")
    parser.add_argument("--emulator", metavar="HOST:PORT", help="a running Bigtable emulator (default: start one)")
    parser.add_argument("--emulator-pid", type=int, help="its process (the emulator's CPU per op is measured)")
    parser.add_argument("--base-tree", metavar="DIR", help="the keyramp source tree kr-grpc-base imports")
    args = parse_args(parser, argv, smoke={
        "stores": ["bigtable"], "ops": ["insert"], "contestants": ["aio", "kr-grpc"], "reps": 1,
        "duration": 3.0, "users": 4, "threads": 2, "latency_rate": 0.0, "warmup": 0.0, "schedule_warmup": "0s"})
    before = machine()
    runs: list[dict[str, Any]] = []
    latencies: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-") as tmp:
        tmpdir = Path(tmp)
        for store in args.stores:
            with _emulator(store, args.emulator, args.emulator_pid) as emu:
                env = env_for(emu)
                if args.warmup > 0:  # a fresh JVM emulator is several times slower until JIT-compiled
                    warm = _profile(tmpdir, store, "insert", "grpc", users=args.users, duration=args.warmup,
                                    warmup=args.schedule_warmup)
                    contestant("kr-grpc", warm, emu.endpoint, emu.pid, users=args.users, threads=args.threads,
                               duration=args.warmup, env=env, out=tmpdir / "out")
                for op in args.ops:
                    profiles = {d: _profile(tmpdir, store, op, d, users=args.users, duration=args.duration,
                                            warmup=args.schedule_warmup) for d in ("client", "grpc")}
                    for rep in range(args.reps):
                        order = _order(args.contestants, rep)
                        for name in order:
                            r = contestant(name, profiles[CONTESTANTS[name][1]], emu.endpoint, emu.pid,
                                           users=args.users, threads=args.threads, duration=args.duration,
                                           env=env, out=tmpdir / "out", base_tree=args.base_tree)
                            r.update(store=store, op=op, rep=rep)
                            runs.append(r)
                            print(f"{store:9} {op:6} rep{rep} {name:14} {r['ops_per_s']:8.1f} ops/s "
                                  f"{r['cpu_us_per_op'] or 0:7.1f} µs CPU/op  emulator "
                                  f"{r.get('emulator_us_per_op') or 0:6.1f} µs/op  machine "
                                  f"{r['machine_busy_cores']:.2f} cores", flush=True)
                    if not args.latency_rate:
                        continue
                    # The same open-model rate through both drivers: what switching driver does to latency.
                    paced = {d: _profile(tmpdir, store, op, d, users=args.users, duration=args.duration,
                                         warmup=args.schedule_warmup, rate=args.latency_rate)
                             for d in ("client", "grpc")}
                    for rep in range(args.reps):
                        for name in (("kr-client", "kr-grpc") if rep % 2 == 0 else ("kr-grpc", "kr-client")):
                            r = contestant(name, paced[CONTESTANTS[name][1]], emu.endpoint, emu.pid,
                                           users=args.users, threads=args.threads, duration=args.duration,
                                           env=env, out=tmpdir / "out")
                            r.update(store=store, op=op, rep=rep, paced=args.latency_rate)
                            latencies.append(r)
                            print(f"{store:9} {op:6} rep{rep} {name:14} at {args.latency_rate:g} ops/s: p50 "
                                  f"{r['latency_ms_p50']:.2f} ms p99 {r['latency_ms_p99']:.2f} ms (service p50 "
                                  f"{r['service_ms_p50']:.2f} p99 {r['service_ms_p99']:.2f}) "
                                  f"{r['cpu_us_per_op'] or 0:.0f} µs CPU/op", flush=True)
    summary = summarise(runs, args.stores, args.ops, args.contestants)
    rows = []
    for entry in summary:
        for name in args.contestants:
            m = entry["median"][name]
            rows.append([entry["store"], entry["op"], name, m["ops_per_s"], entry["vs_bare"].get(name, float("nan")),
                         m["cpu_us_per_op"], m["emulator_us_per_op"], m["machine_busy_cores"]])
    print(table(["store", "op", "contestant", "ops/s", "× bare", "µs CPU/op", "emulator µs/op", "busy cores"], rows))
    for entry in summary:
        for name, ratios in entry["vs_aio_per_rep"].items():
            if ratios["ops"]:
                print(f"{entry['store']} {entry['op']} {name} / aio, per repetition: ops/s {ratios['ops']} "
                      f"(median {median(ratios['ops']):.3f}), CPU/op {ratios['cpu']}")
    paced_summary = []
    for store in args.stores:
        for op in args.ops:
            for name in ("kr-client", "kr-grpc"):
                rs = [r for r in latencies if r["store"] == store and r["op"] == op and r["contestant"] == name]
                if rs:
                    paced_summary.append({"store": store, "op": op, "contestant": name, **{
                        k: median([r[k] for r in rs]) for k in ("ops_per_s", "latency_ms_p50", "latency_ms_p99",
                                                                 "service_ms_p50", "service_ms_p99", "cpu_us_per_op")}})
    if paced_summary:
        print(table(["store", "op", "driver", "ops/s", "p50 ms", "p99 ms", "service p50", "service p99", "µs CPU/op"],
                    [[e["store"], e["op"], e["contestant"], e["ops_per_s"], e["latency_ms_p50"], e["latency_ms_p99"],
                      e["service_ms_p50"], e["service_ms_p99"], e["cpu_us_per_op"]] for e in paced_summary]))
    path = save(args.name, {"bench": "drivers", "args": vars(args), "machine_before": before,
                            "machine_after": machine(), "summary": summary, "paced": paced_summary, "runs": runs,
                            "paced_runs": latencies})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
