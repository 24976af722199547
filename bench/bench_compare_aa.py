"""A/A check for ``keyramp compare`` with real emulator runs, per load model and machine state.

Runs an open-model profile (200 ops/s, 70 % insert / 30 % read) and the closed-model
profile of issue 32 (8 users as fast as they go, inserts) N times each against one Bigtable
emulator, the models interleaved in ABBA order (open, closed, closed, open, …) so a drift
in the machine's load hits both alike; ``--busy`` keeps one core busy with a spinning
process for the whole series (started and stopped here). On an A/A series every verdict
should be ``same`` or ``n/a``; a comparison *flags* when any metric is ``worse`` or
``better`` (the strict reading of "20 comparisons flag at most 1"). Per model:

* every run against the first: N-1 comparisons;
* every ordered pair (``--all-pairs``): N(N-1);
* baseline sets (``--set K``): each run against the K runs before it (cyclically), N
  comparisons, the between-run noise measured from the set.

Records per run what ``keyramp run`` measured of the machine (busy share, busiest load
process, machine- or generator-limited) and, for the series, the machine's load average and
CPU busy share (psutil). Exits 1 when a model flags more than ``--max-flag-rate`` against
the first run.

    .venv/bin/python bench/bench_compare_aa.py --runs 21 --all-pairs --set 4 --save          # ~15 min
    .venv/bin/python bench/bench_compare_aa.py --runs 21 --all-pairs --set 4 --busy --save   # one core busy
    .venv/bin/python bench/bench_compare_aa.py --smoke                                        # seconds
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, parse_args, write_profile
from _series import MachineState, bigtable, busy_cores, recorded_series, run_profile, save_series, series_options

from keyramp.compare import Comparison, build_comparison
from keyramp.results._catalog import Run, load_run
from keyramp.results._summary import GeneratorVerdict, Latency, LoadCpu, OpStats

#: The two load models, as profile tables (the open one is the series docs/ci.md first measured).
MODELS: dict[str, dict[str, dict[str, Any]]] = {
    "open": {"workload": {"ops": {"insert": 0.7, "read": 0.3}, "record_count": 300, "value_size": 128,
                          "read_distribution": "uniform"},
             "schedule": {"kind": "constant", "rate": 200, "max_users": 10}},
    "closed": {"workload": {"ops": {"insert": 1.0}, "record_count": 300, "value_size": 128},
               "schedule": {"kind": "users", "users": 8}},
}


def write_model(directory: Path, model: str, *, duration: str, warmup: str, seed: int = 7) -> Path:
    """The profile of one load model (shared with bench_compare_ab)."""
    return write_profile(directory / f"{model}.toml",
                         {"name": f"bench-{model}", "description": f"compare series, {model} model",
                          "backend": "bigtable", "duration": duration, "seed": seed},
                         workload=MODELS[model]["workload"], keys={"strategy": "random"},
                         schedule={**MODELS[model]["schedule"], "warmup": warmup})


def abba(models: Sequence[str], i: int) -> list[str]:
    """Round ``i`` of an ABBA order: forwards on even rounds, backwards on odd ones."""
    return list(models) if i % 2 == 0 else list(models)[::-1]


@contextlib.contextmanager
def machine_load(busy: bool, *, cores: float = 1.0) -> Iterator[MachineState]:
    """The series' machine state; with ``busy`` one core kept busy meanwhile (a smoke run spins a
    fraction of one: it proves the path, and the suite around it shares the machine)."""
    label = f"{cores:g} core{'' if cores == 1 else 's'} kept busy by the bench"
    state = MachineState(label=label if busy else "no load added by the bench")
    with busy_cores(cores if busy else 0.0):
        time.sleep(0.5 if busy else 0.0)  # the spinner is running before the first run starts
        yield state.start()


def run_facts(run: Run) -> dict[str, Any]:
    """What ``keyramp run`` measured of the machine, per run."""
    (cell,) = run.cells.values()
    cpu, total, gen = cell.load_cpu or LoadCpu(), cell.total or OpStats(count=0), cell.generator or GeneratorVerdict()
    count = total.count or 0
    return {"run_id": run.run_id, "ops_per_s": total.ops_per_s,
            "p50_ms": (total.latency_ms or Latency()).p50, "machine_busy": cpu.machine_busy,
            "busiest_process": cpu.max_process_cores,
            "late": round((total.late or 0) / count, 3) if count else None,
            "generator_limited": cell.generator_limited, "machine_limited": gen.machine_limited}


def per_comparison(cmp: Comparison) -> dict[str, tuple[bool, bool]]:
    """Candidate run id -> (any metric flagged, any metric inconclusive)."""
    out: dict[str, tuple[bool, bool]] = {}
    for r in cmp.rows:
        flag, unsure = out.get(r.run_id, (False, False))
        out[r.run_id] = (flag or r.verdict in ("worse", "better"), unsure or r.note.startswith("inconclusive"))
    return out


def _tally(comparisons: list[dict[str, tuple[bool, bool]]]) -> dict[str, int]:
    flags = [f for c in comparisons for f, _ in c.values()]
    return {"comparisons": len(flags), "flagged": sum(flags),
            "with_inconclusive": sum(u for c in comparisons for _, u in c.values())}


def analyse(runs: list[Run], *, all_pairs: bool, set_k: int) -> dict[str, Any]:
    """Flag counts of one model's series (runs oldest first)."""
    first = build_comparison(runs[1:], baseline=runs[0])
    verdicts = Counter(f"{r.metric}:{r.verdict}" for r in first.rows)
    out: dict[str, Any] = {"runs": len(runs), "vs_first": _tally([per_comparison(first)]),
                           "vs_first_flagged_rows": [f"{r.run_id[-4:]} {r.op} {r.metric} ×{r.ratio:.2f} "
                                                     f"[{r.ci_low:.2f}, {r.ci_high:.2f}] {r.verdict}"
                                                     for r in first.rows if r.verdict in ("worse", "better")
                                                     and r.ratio and r.ci_low and r.ci_high],
                           "verdict_counts": dict(sorted(verdicts.items()))}
    if all_pairs:
        out["all_pairs"] = _tally([per_comparison(build_comparison([r for r in runs if r is not b], baseline=b))
                                   for b in runs])
    if set_k and len(runs) > set_k:
        sets = [per_comparison(build_comparison([runs[j]], baseline=[runs[(j - i) % len(runs)]
                                                                     for i in range(set_k, 0, -1)]))
                for j in range(len(runs))]
        out[f"vs_set_of_{set_k}"] = _tally(sets)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    series_options(parser, name="compare_aa")
    parser.add_argument("--runs", type=int, default=21, help="runs per model")
    parser.add_argument("--all-pairs", action="store_true", help="also compare every ordered pair of runs")
    parser.add_argument("--set", type=int, default=0, metavar="K", help="also each run vs the K runs before it")
    parser.add_argument("--max-flag-rate", type=float, default=0.05)
    # --smoke: 3 runs of 2 s per model, sets of 2, every pair (--busy spins 1/4 core): a few seconds each
    args = parse_args(parser, argv, smoke={"runs": 3, "duration": "2s", "set": 2, "all_pairs": True})
    models = args.models.split(",")
    n, duration, set_k = args.runs, args.duration, args.set
    start = machine()
    with tempfile.TemporaryDirectory(prefix="kr-aa-") as tmp:

        def record(results: Path) -> dict[str, Any]:
            profiles = {m: write_model(Path(tmp), m, duration=duration, warmup="0s" if args.smoke else "2s")
                        for m in models}
            series: dict[str, Any] = {"models": {m: [] for m in models}}
            spin = 0.25 if args.smoke else args.busy_cores
            with bigtable(args.emulator) as (env, _), machine_load(args.busy, cores=spin) as state:
                for i in range(n):
                    for model in abba(models, i):
                        started = time.monotonic()
                        series["models"][model].append(run_profile(profiles[model], results, env))
                        share = state.sample()
                        print(f"{model} run {i + 1}/{n} in {time.monotonic() - started:.1f} s (machine {share:.0%} "
                              f"busy, load {state.loads[-1]})", flush=True)
            return {**series, "machine_state": state.to_dict()}

        results, series = recorded_series(args.keep, Path(tmp), record)
        runs = {m: [load_run(results / rid) for rid in ids] for m, ids in series["models"].items()}
        result = {"machine_start": start, "machine_end": machine(), "machine_state": series["machine_state"],
                  "conditions": {"backend": "bigtable", "duration": duration, "order": "ABBA across models",
                                 "emulator": "one for the series", "profiles": {m: MODELS[m] for m in runs},
                                 "options": build_comparison([], baseline=None).to_dict()["options"]},
                  "models": {m: {**analyse(rs, all_pairs=args.all_pairs, set_k=set_k),
                                 "per_run": [run_facts(r) for r in rs]} for m, rs in runs.items()}}
    for model, res in result["models"].items():
        parts = [f"vs first {res['vs_first']['flagged']}/{res['vs_first']['comparisons']} flagged "
                 f"({res['vs_first']['with_inconclusive']} with an inconclusive metric)"]
        parts += [f"{k} {v['flagged']}/{v['comparisons']}" for k, v in res.items()
                  if k == "all_pairs" or k.startswith("vs_set")]
        print(f"A/A {model}: " + "; ".join(parts))
        for line in res["vs_first_flagged_rows"]:
            print(f"  {line}")
    print(f"machine: {result['machine_state']}")
    save_series(args, "compare_aa", result)
    rates = [r["vs_first"]["flagged"] / max(r["vs_first"]["comparisons"], 1) for r in result["models"].values()]
    result["passed"] = all(rate <= args.max_flag_rate for rate in rates)
    return result


if __name__ == "__main__":
    raise SystemExit(0 if main()["passed"] else 1)
