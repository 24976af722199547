"""``keyramp run PROFILE|DIR...``: parse the flags, call ``keyramp.run_profiles``, print the tables and run ids.

Locust is imported only when the verb runs (it monkey-patches the standard library for gevent),
so ``keyramp --help`` and the other verbs stay light.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from keyramp.core import UsageError, parse_duration
from keyramp.targets import CloudCaps, TargetOptions

if TYPE_CHECKING:
    from keyramp.metrics import MetricsExporter
    from keyramp.run import MasterOptions, RunOutcome, RunsOutcome

__all__ = ["register"]

#: ``--master`` listens here and ``--worker`` connects here unless ``--master-port`` says otherwise.
_MASTER_PORT = 5557


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run",
        help="run profiles (files or directories of *.toml) against the emulators",
        description="Run every cell of each profile and write results/<run-id>/ (see docs/run-format.md). "
        "With --workers N (or --master and workers on other hosts) the load runs in Locust worker "
        "processes (see docs/distributed.md).",
    )
    p.add_argument("profiles", nargs="*", metavar="PROFILE|DIR")
    p.add_argument("--out", type=Path, default=Path("results"), help="results directory (default ./results)")
    p.add_argument("--workers", type=int, default=None,
                   help="local worker processes (default 1 = this process drives the load itself)")
    p.add_argument("--strict", action="store_true", help="lint warnings block the run")
    p.add_argument("--quiet", action="store_true", help="no live status, only the final table")
    p.add_argument("--json", action="store_true",
                   help="stdout: one JSON document (each run's id, path, status, exit code and summary, and the "
                        "scenario report); the table goes to stderr")
    p.add_argument("--duration", help="override every profile's duration per cell (e.g. 5s)")
    p.add_argument("--timeout", type=float, default=10.0, help="per-operation deadline in seconds (default 10)")
    p.add_argument("--metrics", metavar="HOST:PORT", default=None,
                   help="serve live Prometheus metrics at http://HOST:PORT/metrics while the run lasts "
                        "(HOST defaults to 127.0.0.1; see docs/metrics.md)")
    dist = p.add_argument_group("distributed (Locust master/workers)")
    dist.add_argument("--master", action="store_true", help="be a Locust master: workers on other hosts do the load")
    dist.add_argument("--expect-workers", type=int, default=None, help="with --master: workers to wait for (default 1)")
    dist.add_argument(
        "--master-bind-host", default=None, help="with --master: interface to listen on (default 127.0.0.1)"
    )
    dist.add_argument(
        "--master-port", type=int, default=None, help=f"master port (default {_MASTER_PORT}; a free one for --workers)"
    )
    dist.add_argument(
        "--worker", action="store_true", help="be a worker: the master sends profile and cells (no PROFILE)"
    )
    dist.add_argument("--master-host", default=None, help="with --worker: the master's address")
    dist.add_argument("--exit-with-parent", action="store_true", help=argparse.SUPPRESS)
    cloud = p.add_argument_group("cloud target (docs/cloud.md)")
    cloud.add_argument("--allow-cloud", metavar="PROJECT", default=None,
                       help="run target = 'cloud' profiles against this real project (must equal the profile's)")
    cloud.add_argument("--plan", action="store_true",
                       help="print each profile's plan (peak ops/s, operations, duration, what is written and "
                            "deleted, estimated cost), apply the checks and exit; no network call")
    cloud.add_argument("--max-ops-per-s", type=float, default=None, help="override [cloud] max_ops_per_s")
    cloud.add_argument("--max-duration", default=None, help="override [cloud] max_duration (e.g. 5m)")
    cloud.add_argument("--prices", metavar="FILE", type=Path, default=None,
                       help="prices overriding keyramp's list-price table for the plan's cost estimate "
                            "(docs/plan.md#cost)")
    cloud.add_argument("--location", default=None,
                       help="price the plan at this location (e.g. nam5; default: each store's in the price table)")
    p.set_defaults(func=_cmd_run)


def _check_run_args(args: argparse.Namespace) -> None:
    """Refuse contradictory distributed flags with one line (exit 2)."""
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: must be at least 1, got {args.workers}")
    if args.master_port is not None and not 1 <= args.master_port <= 65535:
        raise UsageError(f"--master-port: must be 1..65535, got {args.master_port}")
    if args.metrics is not None:
        from keyramp.metrics import parse_address  # deferred: start-up cost (gevent: --metrics only)

        parse_address(args.metrics)  # a malformed address fails before anything starts
        if args.worker:
            raise UsageError("--metrics belongs on the master (it serves the merged view), not on a worker")
        if args.plan:
            raise UsageError("--metrics has nothing to serve with --plan (no load runs)")
    if args.worker:
        for flag, given in (("--workers", args.workers is not None), ("--master", args.master),
                            ("--expect-workers", args.expect_workers is not None),
                            ("--master-bind-host", args.master_bind_host is not None)):
            if given:
                raise UsageError(f"--worker: {flag} belongs on the master, not on a worker")
        if args.profiles:
            raise UsageError("--worker takes no PROFILE: the master sends the profile and the cells")
        if not args.master_host:
            raise UsageError("--worker needs --master-host HOST (the master's address)")
        return
    if args.master_host is not None:
        raise UsageError("--master-host is for --worker (a master listens: use --master-bind-host)")
    if not args.profiles:
        raise UsageError("run: give at least one PROFILE or DIR (or --worker --master-host HOST)")
    if args.master and args.workers is not None:
        raise UsageError("--master and --workers are exclusive: --workers N starts local workers itself")
    if not args.master:
        for flag, given in (("--expect-workers", args.expect_workers is not None),
                            ("--master-bind-host", args.master_bind_host is not None)):
            if given:
                raise UsageError(f"{flag} needs --master")
        if args.master_port is not None and (args.workers or 1) == 1:
            raise UsageError("--master-port needs --master or --workers N (N > 1)")
    if args.expect_workers is not None and args.expect_workers < 1:
        raise UsageError(f"--expect-workers: must be at least 1, got {args.expect_workers}")


def _master(args: argparse.Namespace) -> MasterOptions | None:
    """A Locust master for ``--master`` (workers elsewhere) or ``--workers N`` (N > 1, started here)."""
    from keyramp.run import MasterOptions  # deferred: start-up cost (locust)

    if not args.master and (args.workers or 1) == 1:
        return None
    return MasterOptions(
        bind_host=args.master_bind_host or "127.0.0.1",
        port=args.master_port or (_MASTER_PORT if args.master else None),  # local workers: a free port
        local_workers=0 if args.master else int(args.workers), expect_workers=args.expect_workers or 1,
    )


def _cmd_run(args: argparse.Namespace) -> int:
    # Locust first: it monkey-patches the standard library for gevent before gRPC creates anything.
    import locust  # noqa: F401  # deferred: start-up cost (locust)

    from keyramp.profile import collect_profiles  # deferred: start-up cost (numpy, via the profile schema)
    from keyramp.run import (  # deferred: start-up cost (locust, grpc)  # deferred: start-up cost (rich)
        Console,
        budget_costs,
        budget_profiles,
        plan_lines,
        run_profiles,
        summary_table,
        workload_exceptions,
    )

    _check_run_args(args)
    if args.worker:
        from keyramp.run import run_worker  # deferred: start-up cost (locust)

        return run_worker(master_host=args.master_host, master_port=args.master_port or _MASTER_PORT,
                          exit_with_parent=args.exit_with_parent)
    overrides = {"duration": parse_duration(args.duration, field="--duration")} if args.duration else {}
    profiles = collect_profiles(args.profiles, overrides=overrides)
    caps: CloudCaps = {
        "max_ops_per_s": args.max_ops_per_s,
        "max_duration_s": parse_duration(args.max_duration, field="--max-duration") if args.max_duration else None,
    }
    target = TargetOptions(allow_cloud=args.allow_cloud, cloud_caps=caps,
                           budget_costs=budget_costs(profiles, prices=args.prices, location=args.location))
    if args.plan:
        return budget_profiles(profiles, target=target, out=sys.stdout)
    console = Console(stderr=True)
    # --json: stdout is one JSON document, so the human output moves to stderr
    out = console if args.json else Console() if sys.stdout.isatty() else Console(width=160)

    def show(outcome: RunOutcome) -> None:
        out.print(summary_table(outcome.summary, width=out.width))
        # the plan lines, then the workload's own exceptions with their tracebacks
        for line in [*plan_lines(outcome.summary), *workload_exceptions(outcome.summary)]:
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        out.print(f"results: {outcome.path}", highlight=False)

    result = run_profiles(
        profiles, out=args.out, strict=args.strict, quiet=args.quiet, timeout_s=args.timeout, target=target,
        master=_master(args), metrics=_metrics(args.metrics), scenario_report=_scenario_report(Path(args.out)),
        console=console, on_run=show,
    )
    if result.scenario_report is not None:
        out.print(f"scenario report: {result.scenario_report / 'report.html'} (also report.md, report.json)",
                  highlight=False)
    _print_run_ids(result, as_json=args.json)
    return result.exit_code


def _metrics(address: str | None) -> MetricsExporter | None:
    from keyramp.metrics import MetricsExporter  # deferred: start-up cost (gevent: --metrics only)

    return MetricsExporter(address) if address is not None else None


def _scenario_report(results: Path) -> Callable[[Sequence[Path]], Path]:
    """The scenario report of ``keyramp run``: into ``results/reports/scenarios-<stamp>``."""

    def report(runs: Sequence[Path]) -> Path:
        # deferred: start-up cost (the scenario report: scenario runs only)
        from keyramp.scenarios import default_report_dir, report_for_runs  # deferred: start-up cost

        return report_for_runs(runs, out=default_report_dir(results))

    return report


def _print_run_ids(result: RunsOutcome, *, as_json: bool) -> None:
    """What scripts read from ``keyramp run``'s stdout: the run ids, one per line, last (so
    ``tail -n 1`` is the last run's id), or with ``--json`` one document and nothing else."""
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), indent=1, default=str) + "\n")
    else:
        sys.stdout.write("".join(f"{o.run_id}\n" for o in result.runs))
    sys.stdout.flush()
