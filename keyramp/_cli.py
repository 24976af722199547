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
from typing import Any

from keyramp import __version__
from keyramp._errors import KeyrampError

__all__ = ["main", "build_parser"]

#: Modules that contribute verbs through ``register(subparsers)``.
_VERB_MODULES = (
    "keyramp._emulators",
    "keyramp._lint",
    "keyramp.keyspace",
    "keyramp._catalog",
    "keyramp.compare",
    "keyramp._baselines",
    "keyramp.web",
    "keyramp.scenarios._report",
)


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line instead of a usage dump on bad arguments."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(2, f"keyramp: error: {message}\n")


def _add_run(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run",
        help="run profiles (files or directories of *.toml) against the emulators",
        description="Run every cell of each profile and write results/<run-id>/ (see docs/run-format.md).",
    )
    p.add_argument("profiles", nargs="+", metavar="PROFILE|DIR")
    p.add_argument("--out", type=Path, default=Path("results"), help="results directory (default ./results)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    p.add_argument("--strict", action="store_true", help="lint warnings block the run")
    p.add_argument("--quiet", action="store_true", help="no live status, only the final table")
    p.add_argument("--duration", help="override every profile's duration per cell (e.g. 5s)")
    p.add_argument("--timeout", type=float, default=10.0, help="per-operation deadline in seconds (default 10)")
    p.set_defaults(func=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    import locust  # noqa: F401  (gevent monkey-patching first, before gRPC creates anything)

    from keyramp._durations import parse_duration
    from keyramp._errors import UsageError
    from keyramp._profile import collect_profiles, parse_profile
    from keyramp._report import Console, summary_table
    from keyramp._runner import RunOptions, run_profile

    if args.workers != 1:
        raise UsageError("--workers: distributed runs are not available yet; use --workers 1")
    profiles = collect_profiles(args.profiles)
    if args.duration:
        seconds = parse_duration(args.duration, field="--duration")
        profiles = [
            parse_profile({**_raw_of(p), "duration": seconds}, source=str(p.path), path=p.path) for p in profiles
        ]
    console = Console(stderr=True)
    out = Console() if sys.stdout.isatty() else Console(width=160)
    worst = 0
    for profile in profiles:
        outcome = run_profile(
            profile, RunOptions(out=args.out, strict=args.strict, quiet=args.quiet, timeout_s=args.timeout),
            console=console,
        )
        out.print(summary_table(outcome.summary))
        out.print(f"results: {outcome.path}", highlight=False)
        if outcome.exit_code == 130:
            return 130
        worst = max(worst, outcome.exit_code)
    return worst


def _raw_of(profile: Any) -> dict[str, Any]:
    """The profile file's own table again (to re-validate with an override)."""
    import tomllib

    return tomllib.loads(Path(profile.path).read_text(encoding="utf-8")) if profile.path else {}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="keyramp",
        description="Load tests for Datastore, Firestore and Bigtable: key strategies, ramps, honest latency.",
    )
    parser.add_argument("--version", action="version", version=f"keyramp {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    _add_run(sub)
    for name in _VERB_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        # Locust monkey-patches the standard library on import; that must precede every
        # other import (ssl, threading, grpc) that the verb modules pull in.
        import locust  # noqa: F401
    parser = build_parser()
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
