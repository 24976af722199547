"""The ``keyramp`` command: one console script, one verb per job.

Exit codes: 0 ok, 1 a run/threshold/regression failed, 2 bad input (one line on
stderr, no traceback), 130 interrupted (Ctrl-C / SIGTERM; what was recorded is kept).
Verb modules are imported lazily so ``keyramp --help`` and ``lint`` stay fast and only
``run`` loads Locust (which monkey-patches the standard library for gevent).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from keyramp import __version__
from keyramp._errors import KeyrampError

if TYPE_CHECKING:
    from keyramp.profile import Profile
    from keyramp.targets._cloud import PlanCosts

__all__ = ["build_parser", "main"]

#: Verb -> the module that adds it through ``register(subparsers)``. Only the invoked
#: verb's module is imported (``keyramp list`` need not load the store clients); help and
#: unknown verbs import them all.
_VERBS = {
    "emulators": "keyramp.targets._emulators",
    "lint": "keyramp.profile._lint",
    "keyspace": "keyramp.keyspace",
    "forecast": "keyramp.forecast._cli",
    "plan": "keyramp.cli._plan",
    "calibrate": "keyramp.forecast._calibrate",
    "list": "keyramp.results._index",
    "export": "keyramp.results._export",
    "migrate": "keyramp.results._export",
    "compare": "keyramp.compare",
    "baseline": "keyramp.results._baselines",
    "ui": "keyramp.web",
    "scenarios": "keyramp.scenarios._report",
}
_VERB_MODULES = tuple(dict.fromkeys(_VERBS.values()))


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line instead of a usage dump on bad arguments."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"keyramp: error: {message}\n")


def _add_run(subparsers: Any) -> None:
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


#: ``--master`` listens here and ``--worker`` connects here unless ``--master-port`` says otherwise.
_MASTER_PORT = 5557


def _check_run_args(args: argparse.Namespace) -> None:
    """Refuse contradictory distributed flags with one line (exit 2)."""
    from keyramp._errors import UsageError

    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: must be at least 1, got {args.workers}")
    if args.master_port is not None and not 1 <= args.master_port <= 65535:
        raise UsageError(f"--master-port: must be 1..65535, got {args.master_port}")
    if args.metrics is not None:
        from keyramp.metrics import parse_address

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


def _cmd_run(args: argparse.Namespace) -> int:
    import locust  # noqa: F401  (gevent monkey-patching first, before gRPC creates anything)

    from keyramp._durations import parse_duration
    from keyramp.profile._files import collect_profiles
    from keyramp.run._report import Console, summary_table, workload_exceptions
    from keyramp.run._runner import RunOptions, run_profile

    _check_run_args(args)
    if args.worker:
        from keyramp.run._worker import run_worker

        return run_worker(master_host=args.master_host, master_port=args.master_port or _MASTER_PORT,
                          exit_with_parent=args.exit_with_parent)
    overrides = {"duration": parse_duration(args.duration, field="--duration")} if args.duration else {}
    profiles = collect_profiles(args.profiles, overrides=overrides)
    from keyramp.targets import CloudCaps, TargetOptions
    from keyramp.targets._cloud import preflight, print_plans

    cloud_kw: CloudCaps = {
        "max_ops_per_s": args.max_ops_per_s,
        "max_duration_s": parse_duration(args.max_duration, field="--max-duration") if args.max_duration else None,
    }
    costs = _plan_costs(args, profiles)
    if args.plan:
        return print_plans(profiles, allow_cloud=args.allow_cloud, out=sys.stdout, costs=costs, **cloud_kw)
    for profile in profiles:  # refuse a confused or unsafe command line before anything starts
        preflight(profile, allow_cloud=args.allow_cloud, **cloud_kw)
    console = Console(stderr=True)
    # --json: stdout is one JSON document, so the human output moves to stderr
    out = console if args.json else Console() if sys.stdout.isatty() else Console(width=160)
    observers: list[Any] = []
    server = None
    if args.metrics is not None:
        from keyramp.metrics import MetricsObserver, MetricsServer, MetricsState, parse_address

        metrics = MetricsState()
        host, port = parse_address(args.metrics)
        server = MetricsServer(metrics, host=host, port=port)  # binds now: a taken port exits 2 before any load
        observers.append(MetricsObserver(metrics))
        console.print(f"[dim]metrics: {server.url}[/dim]", highlight=False)
    master = None
    if args.master or (args.workers or 1) > 1:
        from keyramp.run._master import Master, MasterOptions

        master = Master(MasterOptions(
            bind_host=args.master_bind_host or "127.0.0.1",
            port=args.master_port or (_MASTER_PORT if args.master else None),  # local workers: a free port
            local_workers=0 if args.master else int(args.workers), expect_workers=args.expect_workers or 1,
        ))
        if args.master and not args.quiet:
            console.print(f"[dim]keyramp master listening on {master.options.bind_host}:{master.port}[/dim]")
    worst = 0
    outcomes: list[Any] = []
    scenario_runs: list[Path] = []  # runs of profiles that cite rules: one scenario report at the end
    try:
        for profile in profiles:
            outcome = run_profile(
                profile, RunOptions(out=args.out, strict=args.strict, quiet=args.quiet, timeout_s=args.timeout,
                                    master=master, observers=observers,
                                    target=TargetOptions(allow_cloud=args.allow_cloud, cloud_caps=cloud_kw,
                                                         plan_costs=costs)),
                console=console,
            )
            outcomes.append(outcome)
            out.print(summary_table(outcome.summary, width=out.width))
            for line in workload_exceptions(outcome.summary):  # the workload's own exceptions, with tracebacks
                out.print(line, markup=False, highlight=False, soft_wrap=True)
            out.print(f"results: {outcome.path}", highlight=False)
            if profile.rules:
                scenario_runs.append(outcome.path)
            if outcome.exit_code == 130:
                worst = 130
                break
            worst = max(worst, outcome.exit_code)
    finally:
        if master is not None:
            master.close()
        if server is not None:  # after the last cell: let Prometheus scrape its final values
            server.close(say=lambda line: console.print(f"[dim]{line}[/dim]", highlight=False))
    report = None
    if scenario_runs:  # also after Ctrl-C: report what ran
        from keyramp.scenarios import default_report_dir, report_for_runs

        report = report_for_runs(scenario_runs, out=default_report_dir(Path(args.out)))
        out.print(f"scenario report: {report / 'report.html'} (also report.md, report.json)", highlight=False)
    _print_run_ids(outcomes, report, as_json=args.json)
    return worst


def _plan_costs(args: argparse.Namespace, profiles: Sequence[Profile]) -> PlanCosts | None:
    """What prices a cloud plan (None without a cloud profile); a bad ``--prices`` file exits 2 here."""
    from keyramp._errors import UsageError

    if not any(p.target == "cloud" for p in profiles):
        for flag, given in (("--prices", args.prices), ("--location", args.location)):
            if given is not None:
                raise UsageError(f"{flag}: applies to target = 'cloud' profiles, and none is given")
        return None
    from keyramp.forecast._prices import load_prices
    from keyramp.forecast._run_cost import plan_costs

    return plan_costs(load_prices(args.prices), location=args.location)


def _print_run_ids(outcomes: Sequence[Any], report: Path | None, *, as_json: bool) -> None:
    """What scripts read from ``keyramp run``'s stdout: the run ids, one per line, last (so
    ``tail -n 1`` is the last run's id), or with ``--json`` one document and nothing else."""
    if as_json:
        import json

        doc = {"runs": [{"run_id": o.run_id, "path": str(o.path), "status": o.status, "reason": o.reason,
                         "exit_code": o.exit_code, "summary": o.summary} for o in outcomes],
               "scenario_report": str(report / "report.html") if report is not None else None}
        sys.stdout.write(json.dumps(doc, indent=1, default=str) + "\n")
    else:
        sys.stdout.write("".join(f"{o.run_id}\n" for o in outcomes))
    sys.stdout.flush()


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (``verb`` given and known) just enough of it for that verb."""
    parser = _Parser(
        prog="keyramp",
        description="Load tests for Datastore, Firestore and Bigtable: key strategies, ramps, honest latency.",
    )
    parser.add_argument("--version", action="version", version=f"keyramp {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    if verb in _VERBS:
        importlib.import_module(_VERBS[verb]).register(sub)
        return parser
    _add_run(sub)
    for name in _VERB_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _names_python_workload(paths: Sequence[str]) -> bool:
    """Whether any profile among ``paths`` (files or directories) has ``[workload] user``:
    linting it imports the workload, and with it Locust."""
    import tomllib

    from keyramp.profile._files import profile_paths

    for file in profile_paths(list(paths)):
        try:
            workload = tomllib.loads(file.read_text(encoding="utf-8")).get("workload")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue  # lint reports it
        if isinstance(workload, dict) and workload.get("user"):
            return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"] or (argv[:1] == ["lint"] and _names_python_workload([a for a in argv[1:]
                                                                                 if not a.startswith("-")])):
        # Locust monkey-patches the standard library on import; that must precede every
        # other import (ssl, threading, grpc) that the verb modules pull in.
        import locust  # noqa: F401
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyrampError as exc:
        print(f"keyramp: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("keyramp: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
