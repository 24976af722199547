"""``keyramp keyspace RUN``: heatmaps, hotspot metrics and the tablet model for a run (``keyramp.keyspace``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from keyramp.results import resolve_run

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "keyspace",
        help="key-space heatmap, hotspot metrics and modelled tablet splits for a run",
        description=(
            "Where the load of each cell landed in the key space (measured from the sampled keys) and what "
            "a range-partitioned store would do with it (modelled). Writes RUN/keyspace/<cell>.png "
            "and <cell>.json and prints the metrics."
        ),
    )
    parser.add_argument("run", metavar="RUN", help="run directory (or run id under ./results)")
    parser.add_argument("--cell", help="only this cell id")
    parser.add_argument("--buckets", type=int, default=1000, help="key-range buckets (default 1000)")
    parser.add_argument(
        "--time-bins", type=int, default=None, help="heatmap time bins (default: 1 per second, max 300)"
    )
    parser.add_argument("--out", default=None, help="output directory (default RUN/keyspace)")
    parser.add_argument("--no-png", action="store_true", help="write the JSON only")
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from keyramp.keyspace import (
        format_table,  # deferred: start-up cost (as above)
        run_keyspace,  # deferred: start-up cost (numpy, pyarrow, matplotlib)
    )

    run = resolve_run(args.run, Path("results"))
    results = run_keyspace(
        run,
        cell=args.cell,
        buckets=args.buckets,
        time_bins=args.time_bins,
        out_dir=Path(args.out) if args.out else None,
        png=not args.no_png,
    )
    print(format_table(results))
    return 0
