"""``keyramp calibrate suite|fit``: the calibration suite's profiles and the fit (``keyramp.forecast._calibrate``,
``keyramp.forecast._fit``). It costs what the plan says: see docs/cloud.md."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from keyramp.core import UsageError
from keyramp.forecast import DEFAULT_RATES, load_prices, write_suite
from keyramp.results import resolve_run

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "calibrate", help="measure the forecast's unpublished parameters on your own cloud project (costs money)",
        description="suite: write the calibration profiles and print their plan (nothing runs); run them with "
                    "`keyramp run DIR --allow-cloud PROJECT`; fit: fit the parameters to those runs "
                    "(docs/keyspace-model.md, 'Calibrating on your project').")
    sub = p.add_subparsers(dest="calibrate_verb", metavar="suite|fit")
    s = sub.add_parser("suite", help="write the calibration profiles for one store and print the plan")
    s.add_argument("store", help="the store to calibrate (one with a cloud service and a tablet model: "
                                 "datastore, firestore, firestore-datastore, bigtable)")
    s.add_argument("--project", required=True, help="the Google Cloud project the suite will run in")
    s.add_argument("--instance", default="", help="Bigtable instance (bigtable only)")
    s.add_argument("--database", default="(default)", help="Firestore / Datastore-mode database id")
    s.add_argument("--rates", default=",".join(f"{r:g}" for r in DEFAULT_RATES),
                   help="append-point rates in writes/s (default 250,500,1000,2000)")
    s.add_argument("--step", default="3m", help="how long each rate runs (default 3m)")
    s.add_argument("--jump", type=float, default=2000.0, help="the 0 -> N jump's writes/s (default 2000)")
    s.add_argument("--jump-duration", default="10m", help="how long the jump runs (default 10m)")
    s.add_argument("--out", type=Path, default=Path("calibration"), help="directory for the profiles")
    s.add_argument("--prices", metavar="FILE", type=Path, default=None,
                   help="prices overriding keyramp's list-price table for the cost estimate (docs/plan.md#cost)")
    s.add_argument("--location", default=None, help="price the suite at this location (default: the table's)")
    s.set_defaults(func=_suite)
    f = sub.add_parser("fit", help="fit the parameters to finished calibration runs; write a parameter file")
    f.add_argument("runs", nargs="+", metavar="RUN", help="run directories (or ids under --results)")
    f.add_argument("--out", type=Path, required=True, help="the parameter file to write (JSON)")
    f.add_argument("--storage", default=None, help="storage type of the runs' store (Bigtable: ssd or hdd)")
    f.add_argument("--nodes", type=int, default=1, help="Bigtable nodes the runs had (default 1)")
    f.add_argument("--results", type=Path, default=Path("results"))
    f.set_defaults(func=_fit)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _rates(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--rates: comma-separated numbers, got {text!r}") from None


def _suite(args: argparse.Namespace) -> int:
    from keyramp.forecast import budget_costs  # deferred: start-up cost (the cost model: suite only)
    from keyramp.targets import render_budget, run_budget  # deferred: start-up cost (psutil: suite only)

    costs = budget_costs(load_prices(args.prices), location=args.location)  # a bad file: exit 2 before writing
    written = write_suite(args.out, args.store, project=args.project, instance=args.instance,
                          database=args.database, rates=_rates(args.rates), step=args.step, jump=args.jump,
                          jump_duration=args.jump_duration)
    for profile in written.values():
        plan = run_budget(profile)
        print(render_budget(plan))
        print(costs(profile, plan))
    print(f"\nwrote {', '.join(str(p) for p in written)}. Nothing has run. Next, in a shell with Application Default "
          f"Credentials for {args.project}:\n"
          f"  keyramp run {args.out} --allow-cloud {args.project} --plan   # the checks, no network\n"
          f"  keyramp run {args.out} --allow-cloud {args.project}          # costs money: see docs/cloud.md\n"
          f"  keyramp calibrate fit RUN_APPEND RUN_JUMP --out {args.out}/{args.store}.json\n"
          f"then point a profile's [launch] params (or keyramp forecast --params) at that file.")
    return 0


def _fit(args: argparse.Namespace) -> int:
    from keyramp.forecast import (  # deferred: start-up cost (numpy and the forecast model: fit only)
        fit,
        traces_from_runs,
        write_params_file,
    )

    if args.nodes < 1:
        raise UsageError(f"--nodes: must be at least 1, got {args.nodes}")
    runs = [resolve_run(r, args.results) for r in args.runs]
    result = fit(traces_from_runs(runs), storage=args.storage, nodes=args.nodes)
    write_params_file(args.out, [result])
    for name, r in result.ranges.items():
        print(f"{name}: {r.low:g} – {r.high:g} (best {r.mid:g} {r.unit})")
    print(f"wrote {args.out} (store {result.store}); use it with [launch] params = \"{args.out}\" or "
          f"keyramp forecast RUN --params {args.out}")
    return 0
