"""``keyramp compare RUN... [--baseline RUN|NAME]``: parse, ``keyramp.compare.run_compare``, render.

Exit codes: 0 pass, 1 a regression or failed threshold, 2 bad input (unknown run,
unusable baseline, bad threshold), 3 a gated metric inconclusive (``--inconclusive`` decides).
Corrupt runs among several are skipped with a warning.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from keyramp.cli._output import add_json_flags, json_target, to_stdout, write_text
from keyramp.compare import INCONCLUSIVE_POLICIES, CompareOptions
from keyramp.core import UsageError
from keyramp.results import latest_runs

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``compare`` (``keyramp.cli._baseline.register`` adds ``baseline``)."""
    parser = subparsers.add_parser(
        "compare", help="compare runs side by side; verdicts vs a baseline",
        description="Compare runs cell by cell (matched by backend/strategy, not position). With a baseline "
                    "(--baseline, else the first RUN) every other run gets a verdict per metric: better, same "
                    "or worse. Exit 0 pass, 1 regression or threshold failed, 2 bad input, 3 a gated metric "
                    "inconclusive (the machine, not the store, was measured: retry on a quieter machine).")
    parser.add_argument("runs", nargs="*", metavar="RUN", help="run id (under --results) or run directory")
    parser.add_argument("--last", type=int, metavar="N",
                        help="the newest N usable runs in --results (from the catalog; with --profile, of it): "
                             "without --baseline they are the baseline, a set whose spread measures the "
                             "between-run noise, for the RUNs (no RUN: for the newest of them); with --baseline "
                             "they are compared with it")
    parser.add_argument("--profile", help="with --last: only runs of this profile")
    parser.add_argument("--baseline", metavar="RUN|NAME",
                        help="baseline run id, directory or baseline name (a name can hold several runs)")
    parser.add_argument("--threshold", action="append", default=[], metavar="EXPR",
                        help="extra threshold, e.g. 'insert.p99_ms<50' (repeatable)")
    parser.add_argument("--results", type=Path, default=Path("results"), metavar="DIR",
                        help="results directory (default: ./results)")
    add_json_flags(parser, json_help="print the comparison as one JSON document on stdout (the table goes to "
                                     "stderr), like `keyramp run --json`")
    for flag, what in (("markdown", "GitHub-flavoured Markdown"), ("junit", "JUnit XML"),
                       ("html", "self-contained HTML report")):
        parser.add_argument(f"--{flag}", type=Path, metavar="FILE", help=f"write {what} to FILE ('-' for stdout)")
    defaults = CompareOptions()
    parser.add_argument("--min-effect", type=float, default=defaults.min_effect_latency, metavar="FRACTION",
                        help="smallest p50 change that counts (default %(default)s)")
    parser.add_argument("--min-effect-tail", type=float, default=defaults.min_effect_tail, metavar="FRACTION",
                        help="smallest p95/p99/p99.9 change that counts (default %(default)s)")
    parser.add_argument("--min-effect-throughput", type=float, default=defaults.min_effect_throughput,
                        metavar="FRACTION", help="smallest ops/s change that counts (default %(default)s)")
    parser.add_argument("--bootstrap", type=int, default=defaults.bootstrap, metavar="N",
                        help="bootstrap replicates (default %(default)s)")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="bootstrap RNG seed (default %(default)s)")
    parser.add_argument("--inconclusive", choices=INCONCLUSIVE_POLICIES, default="3",
                        help="what a gated metric the machine made inconclusive does to the exit code: 3 (the "
                             "default: its own code, so a CI job can retry), pass (exit 0) or fail (exit 1)")
    parser.add_argument("--quiet", action="store_true", help="no terminal table")
    parser.set_defaults(func=_cmd_compare)


def _options(args: argparse.Namespace) -> CompareOptions:
    if not 0 <= args.min_effect < 10 or not 0 <= args.min_effect_tail < 10 or not 0 <= args.min_effect_throughput < 1:
        raise UsageError("--min-effect and --min-effect-tail must be in [0, 10), --min-effect-throughput in [0, 1)")
    if not 100 <= args.bootstrap <= 100_000:
        raise UsageError("--bootstrap must be between 100 and 100000")
    return CompareOptions(min_effect_latency=args.min_effect, min_effect_tail=args.min_effect_tail,
                          min_effect_throughput=args.min_effect_throughput,
                          bootstrap=args.bootstrap, seed=args.seed)


def _run_specs(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(runs to compare, baseline set): the RUN arguments and the newest ``--last N`` other usable
    runs of the catalog (oldest first). Without ``--baseline`` those N are the baseline set, for the
    RUNs or, with no RUN, for the newest of them."""
    if args.profile is not None and args.last is None:
        raise UsageError("--profile selects runs for --last; give --last N too")
    specs = list(args.runs)
    found: list[str] = []
    if args.last is not None:
        if args.last < 1:
            raise UsageError("--last must be >= 1")
        found = [r for r in latest_runs(Path(args.results), args.last + len(specs), profile=args.profile)
                 if r not in specs][-args.last:]
        if not found:
            raise UsageError(
                f"no usable run in {args.results}" + (f" of profile {args.profile!r}" if args.profile else "")
            )
    if args.baseline is not None or not found:
        specs += found
        if not specs:
            raise UsageError("name runs to compare (RUN...) or select them with --last N")
        return specs, []
    if not specs:
        if len(found) < 2:
            raise UsageError("--last N without --baseline compares the newest run with the N-1 before it: "
                             "give N >= 2, or --baseline")
        return found[-1:], found[:-1]
    return specs, found


def _cmd_compare(args: argparse.Namespace) -> int:
    from keyramp.compare import (  # deferred: start-up cost (numpy, pyarrow: the statistics and the time series)
        render_html,
        render_json,
        render_junit,
        render_markdown,
        render_terminal,
        run_compare,
    )

    target_json = json_target(args, positionals=args.runs)
    specs, baseline_set = _run_specs(args)
    cmp = run_compare(specs, results=Path(args.results), baseline_spec=args.baseline, baseline_set=baseline_set,
                      thresholds=list(args.threshold), options=_options(args), on_inconclusive=args.inconclusive)
    if not args.quiet:
        from rich.console import Console  # deferred: start-up cost (rich: the terminal table only)

        console = Console(stderr=any(to_stdout(p) for p in (args.markdown, args.junit, target_json, args.html)))
        if not console.is_terminal:
            console = Console(width=220, stderr=console.stderr)
        render_terminal(cmp, console)
    for target, render in ((args.markdown, render_markdown), (args.junit, render_junit), (target_json, render_json),
                           (args.html, render_html)):
        if target is not None:
            write_text(target, render(cmp))
    return cmp.exit_code
