"""``keyramp forecast RUN``: re-project a finished run to a launch (``keyramp.forecast._reforecast``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from keyramp.cli._output import add_json_flags, json_target, json_text, to_stdout, write_text
from keyramp.core import UsageError, parse_duration
from keyramp.forecast import format_table, reforecast
from keyramp.results import resolve_run

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "forecast",
        help="project a finished run's key streams to launch traffic (modelled bands)",
        description=(
            "Re-project every cell of RUN to the launch in its profile's [launch] (or --launch FILE, "
            "--rate, --nodes, --duration): the band of throttled operations over the model's parameter "
            "ranges and a verdict (docs/keyspace-model.md). Prints a table, or JSON with --json (--out FILE "
            "writes it to FILE); the run directory is not changed."
        ),
    )
    p.add_argument("run", metavar="RUN", help="run directory (or run id under ./results)")
    p.add_argument("--launch", metavar="FILE", help="a TOML file with a [launch] table (a profile works)")
    p.add_argument("--rate", type=float, default=None,
                   help="peak launch rate in ops/s (a ramp's ceiling; other kinds scale every rate). Without "
                        "any [launch]: a constant rate")
    p.add_argument("--nodes", type=int, default=None, help="Bigtable nodes (Bigtable cells)")
    p.add_argument("--storage", choices=("ssd", "hdd"), default=None, help="Bigtable storage type")
    p.add_argument("--duration", default=None, help="launch length, e.g. 1h (default: the launch's, else 1h)")
    p.add_argument("--params", metavar="FILE", default=None, help="parameter ranges from `keyramp calibrate`")
    p.add_argument("--cell", default=None, help="only this cell id")
    add_json_flags(p, json_help="print JSON (cell -> forecast)")
    p.add_argument("--results", type=Path, default=Path("results"), help="where run ids are looked up")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    target = json_target(args)
    run = resolve_run(args.run, args.results)
    if run.manifest is None:
        raise UsageError(f"{run.path}: {run.manifest_error or 'no readable manifest.json'}")
    if args.nodes is not None and args.nodes < 1:
        raise UsageError(f"--nodes: must be at least 1, got {args.nodes}")
    results = reforecast(
        run, launch_file=Path(args.launch) if args.launch else None, rate=args.rate, nodes=args.nodes,
        storage=args.storage, duration_s=parse_duration(args.duration, field="--duration") if args.duration else None,
        params=Path(args.params) if args.params else None, cell=args.cell,
    )
    if not results:
        raise UsageError(f"{run.path}: no cell with a key stream to forecast")
    if target is not None:
        write_text(target, json_text({cell: fc.to_json() for cell, fc in results.items()}))
    if not to_stdout(target):
        print(format_table(results))
    return 0
