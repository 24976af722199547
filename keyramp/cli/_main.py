"""The ``keyramp`` command: one console script, one verb per job.

Exit codes: 0 ok, 1 a run/threshold/regression failed, 2 bad input (one line on
stderr, no traceback), 130 interrupted (Ctrl-C / SIGTERM; what was recorded is kept).
Each verb is a module here (``_run.py``, ``_compare.py``, …) that parses, calls the library and
prints. Verb modules are imported lazily so ``keyramp --help`` and ``lint`` stay fast and only
``run`` loads Locust (which monkey-patches the standard library for gevent).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from keyramp.cli._output import ERROR_PREFIX, print_error
from keyramp.core import __version__, exit_code

__all__ = ["build_parser", "main"]

#: Verb -> the module that adds it through ``register(subparsers)``. Only the invoked
#: verb's module is imported (``keyramp list`` need not load the store clients); help and
#: unknown verbs import them all.
_VERBS = {
    "run": "keyramp.cli._run",
    "emulators": "keyramp.cli._emulators",
    "lint": "keyramp.cli._lint",
    "keyspace": "keyramp.cli._keyspace",
    "forecast": "keyramp.cli._forecast",
    "plan": "keyramp.cli._plan",
    "calibrate": "keyramp.cli._calibrate",
    "list": "keyramp.cli._list",
    "export": "keyramp.cli._export",
    "migrate": "keyramp.cli._export",
    "compare": "keyramp.cli._compare",
    "baseline": "keyramp.cli._baseline",
    "ui": "keyramp.cli._ui",
    "scenarios": "keyramp.cli._scenarios",
}
_VERB_MODULES = tuple(dict.fromkeys(_VERBS.values()))


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line instead of a usage dump on bad arguments."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{ERROR_PREFIX}error: {message}\n")


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
    for name in _VERB_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _names_python_workload(paths: Sequence[str]) -> bool:
    """Whether any profile among ``paths`` (files or directories) has ``[workload] user``:
    linting it imports the workload, and with it Locust."""
    import tomllib  # deferred: start-up cost (every verb imports this module; lint only needs it)

    from keyramp.profile import profile_paths  # deferred: start-up cost (numpy, via the profile schema)

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
        import locust  # noqa: F401  # deferred: start-up cost (locust: run, and lint of a Python workload)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    return exit_code(lambda: args.func(args), report=print_error)
