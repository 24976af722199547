"""The store proxy's pass-through cost (issue 38): keyramp against the emulator directly and
through a store proxy whose model admits everything (``mode = "admit"``: every request is still
decoded and offered), in one run, interleaved.

Two measurements per store, each rep alternating direct and proxied:

- **throughput**: ``keyramp run``, ``driver = "grpc"``, ``--users`` users as fast as they go
  (closed model): ops/s, the load process's CPU µs per operation, and the proxy process's
  own CPU µs per operation over the same window;
- **latency**: the same at an open-model ``--rate`` (well under both limits): p50/p99 of the
  recorded latency; the proxy's cost is the difference.

Targets (issue 38): at most 0.3 ms added at p50 and at least 0.7x the direct throughput for
Bigtable inserts. Run: ``.venv/bin/python bench/bench_proxy.py [--stores bigtable firestore]
[--reps 3]``; writes ``bench/results/proxy.json``; docs/performance.md has the figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ENV_FOR_KIND, env_for, machine, median, parse_args, save, table
from bench_drivers import _emulator, _profile, contestant

from keyramp.backends import EMULATOR_FOR
from keyramp.targets._proxy_process import ProxyProcess
from keyramp.targets._proxy_stats import ProxyConfig

STORES = ("bigtable", "firestore", "datastore")


def _cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def _measure(name: str, profile: Path, endpoint: str, emulator_pid: int, proxy: ProxyProcess | None, *,
             args: argparse.Namespace, env: dict[str, str], out: Path) -> dict[str, Any]:
    before = _cpu_s(proxy.pid) if proxy is not None else 0.0
    result = contestant("kr-grpc", profile, endpoint, emulator_pid, users=args.users, threads=1,
                        duration=args.duration, env=env, out=out)
    ops = result.get("count") or result["ops_per_s"] * args.duration
    if proxy is not None:
        # the proxy's CPU over the whole run (warm-up included) per measured op: an upper bound
        result["proxy_us_per_op"] = round((_cpu_s(proxy.pid) - before) * 1e6 / max(ops, 1), 1)
    result["way"] = name
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stores", nargs="+", default=["bigtable"], choices=STORES)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--users", type=int, default=32)
    parser.add_argument("--rate", type=float, default=200.0, help="open-model rate of the latency runs (0: skip)")
    parser.add_argument("--warmup", default="2s", help="each run's schedule.warmup")
    parser.add_argument("--emulator", metavar="HOST:PORT", help="a running Bigtable emulator (default: start one)")
    parser.add_argument("--emulator-pid", type=int, help="its process")
    args = parse_args(parser, argv, smoke={"reps": 1, "duration": 3.0, "users": 4, "rate": 50.0, "warmup": "0s"})
    before = machine()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-") as tmp:
        tmpdir = Path(tmp)
        for store in args.stores:
            with _emulator(store, args.emulator, args.emulator_pid) as emu:
                proxy = ProxyProcess(store=store, upstream=emu.endpoint, config=ProxyConfig(mode="admit"),
                                     log_dir=tmpdir).start()
                try:
                    env = env_for(emu)
                    kinds = [("closed", _profile(tmpdir, store, "insert", "grpc", users=args.users,
                                                 duration=args.duration, warmup=args.warmup))]
                    if args.rate:
                        kinds.append(("paced", _profile(tmpdir, store, "insert", "grpc", users=args.users,
                                                        duration=args.duration, warmup=args.warmup, rate=args.rate)))
                    for rep in range(args.reps):
                        for kind, profile in kinds:
                            ways = [("direct", emu.endpoint, None), ("proxied", proxy.endpoint, proxy)]
                            for way, endpoint, through in (ways if rep % 2 == 0 else ways[::-1]):
                                # the profile's run reaches its emulator through the variable: point it here
                                run_env = {**env, ENV_FOR_KIND[EMULATOR_FOR[store]]: endpoint}
                                r = _measure(way, profile, endpoint, emu.pid, through, args=args, env=run_env,
                                             out=tmpdir / "out")
                                r.update(store=store, kind=kind, rep=rep)
                                runs.append(r)
                                print(f"{store:9} {kind:6} rep{rep} {way:8} {r['ops_per_s']:8.1f} ops/s  p50 "
                                      f"{r.get('latency_ms_p50') or 0:.2f} ms  p99 {r.get('latency_ms_p99') or 0:.2f} "
                                      f"ms  load {r['cpu_us_per_op'] or 0:.0f} µs/op  proxy "
                                      f"{r.get('proxy_us_per_op', 0):.0f} µs/op", flush=True)
                finally:
                    proxy.stop()
    summary = _summary(runs, args.stores)
    rows = [[s["store"], k, v["direct"], v["proxied"], v["vs"]] for s in summary for k, v in s["figures"].items()]
    print(table(["store", "figure", "direct", "proxied", "proxied / direct or added"], rows))
    path = save("proxy", {"bench": "proxy", "args": vars(args), "machine_before": before, "machine_after": machine(),
                          "summary": summary, "runs": runs})
    print(f"wrote {path}")
    bigtable = next((s for s in summary if s["store"] == "bigtable"), None)
    if bigtable is None:
        return 0
    ok = (bigtable["figures"]["ops/s (closed)"]["vs"] >= 0.7 and
          bigtable["figures"].get("p50 ms (paced)", {"vs": 0.0})["vs"] <= 0.3)
    print(f"targets (Bigtable inserts, driver grpc: >= 0.7x throughput, <= 0.3 ms added at p50): "
          f"{'met' if ok else 'missed'}")
    return 0 if ok else 1


def _summary(runs: list[dict[str, Any]], stores: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for store in stores:
        def med(kind: str, way: str, key: str, store: str = store) -> float:
            return median([r[key] for r in runs if r["store"] == store and r["kind"] == kind and r["way"] == way
                           and r.get(key) is not None])
        figures: dict[str, dict[str, float]] = {}
        direct, proxied = med("closed", "direct", "ops_per_s"), med("closed", "proxied", "ops_per_s")
        figures["ops/s (closed)"] = {"direct": direct, "proxied": proxied, "vs": round(proxied / direct, 3)}
        figures["load µs/op (closed)"] = {"direct": med("closed", "direct", "cpu_us_per_op"),
                                          "proxied": med("closed", "proxied", "cpu_us_per_op"), "vs": float("nan")}
        figures["proxy µs/op (closed)"] = {"direct": 0.0, "proxied": med("closed", "proxied", "proxy_us_per_op"),
                                           "vs": float("nan")}
        if any(r["kind"] == "paced" for r in runs):
            for pct in ("p50", "p99"):
                d, p = med("paced", "direct", f"latency_ms_{pct}"), med("paced", "proxied", f"latency_ms_{pct}")
                figures[f"{pct} ms (paced)"] = {"direct": d, "proxied": p, "vs": round(p - d, 3)}
        out.append({"store": store, "figures": figures})
    return out


if __name__ == "__main__":
    sys.exit(main())
