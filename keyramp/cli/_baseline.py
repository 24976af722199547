"""``keyramp baseline set|list|rm``: named baselines (``keyramp.results._baselines``) for compare."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from keyramp.core import UsageError
from keyramp.results import list_runs, load_baselines, remove_baseline, set_baseline

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("baseline", help="name runs as baselines for compare",
                                   description="Named baselines, stored in <results>/baselines.json.")
    parser.add_argument("--results", type=Path, default=Path("results"), metavar="DIR",
                        help="results directory (default: ./results)")
    verbs = parser.add_subparsers(dest="baseline_verb", metavar="{set,list,rm}", required=True)
    set_p = verbs.add_parser("set", help="name a run, or several runs of one build, as baseline",
                             description="Several runs of one build make one baseline: compare measures the "
                                         "between-run noise from their spread.")
    set_p.add_argument("name")
    set_p.add_argument("runs", nargs="*", metavar="RUN", help="run id or run directory")
    set_p.add_argument("--last", type=int, metavar="N", help="also the newest N usable runs (with --profile, of it)")
    set_p.add_argument("--profile", help="with --last: only runs of this profile")
    verbs.add_parser("list", help="list named baselines")
    rm_p = verbs.add_parser("rm", help="forget a named baseline (the run stays)")
    rm_p.add_argument("name")
    parser.set_defaults(func=_cmd_baseline)


def _cmd_baseline(args: argparse.Namespace) -> int:
    results = Path(args.results)
    if args.baseline_verb == "set":
        specs = list(args.runs)
        if args.profile is not None and args.last is None:
            raise UsageError("--profile selects runs for --last; give --last N too")
        if args.last is not None:
            if args.last < 1:
                raise UsageError("--last must be >= 1")
            # The directory, not the catalog index (which reads this module's file): a one-off scan.
            usable = [r.run_id for r in list_runs(results)
                      if r.ok and (args.profile is None or r.profile_name == args.profile)][:args.last]
            if not usable:
                raise UsageError(f"no usable run in {results}" + (f" of profile {args.profile!r}" if args.profile
                                                                   else ""))
            specs += [r for r in reversed(usable) if r not in specs]
        runs = set_baseline(results, args.name, specs)
        print(f"baseline {args.name} -> {', '.join(r.run_id for r in runs)}")
    elif args.baseline_verb == "rm":
        remove_baseline(results, args.name)
        print(f"removed baseline {args.name}")
    else:
        baselines = load_baselines(results)
        if not baselines:
            print(f"no baselines in {results}")
        for name, entry in sorted(baselines.items()):
            path = Path(entry["path"])
            exists = (path if path.is_absolute() else results / path).is_dir()
            missing = "" if exists else "\t(missing)"
            more = len(entry.get("runs") or []) - 1
            shown = f"{entry.get('run_id', '?')}" + (f" (+{more} run{'s' if more > 1 else ''})" if more > 0 else "")
            sys.stdout.write(f"{name}\t{shown}\t{entry.get('set_at', '')}{missing}\n")
    return 0
