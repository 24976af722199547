"""keyramp's exit codes, the one table of them, the exceptions that map to them, and the one place
a process entry point turns them into its exit code (``exit_code``).

README's "Exit codes" table lists exactly ``EXIT_CODES`` (tests/test_exit_codes.py): a CI job
relies on each code meaning one thing for every command.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Final

__all__ = [
    "EXIT_CODES",
    "EXIT_FAILED",
    "EXIT_INCONCLUSIVE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "EmulatorError",
    "KeyrampError",
    "RunFailed",
    "UnsupportedOperation",
    "UsageError",
    "exit_code",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
#: ``compare`` could not judge a gated metric (the machine, not the store, was measured): neither
#: a pass nor a failure — a CI job retries it on a quieter machine (docs/ci.md).
EXIT_INCONCLUSIVE: Final = 3
EXIT_INTERRUPTED: Final = 130

#: code -> what it means, in one line (the README's table says it at length).
EXIT_CODES: Final = {
    EXIT_OK: "done, every check passed",
    EXIT_FAILED: "the verdict is negative (a threshold, a regression, a failed cell, a lint error)",
    EXIT_USAGE: "bad input, refused before any load",
    EXIT_INCONCLUSIVE: "compare: a gated metric could not be judged on this machine",
    EXIT_INTERRUPTED: "interrupted; what was recorded is kept",
}


class KeyrampError(Exception):
    """Base class; ``exit_code`` is what the CLI returns, ``str(exc)`` is the one-line reason."""

    exit_code = EXIT_FAILED


class UsageError(KeyrampError):
    """Bad input: invalid profile, unknown name, unreadable file. Exit code 2."""

    exit_code = EXIT_USAGE


class RunFailed(KeyrampError):
    """A run, threshold or regression check failed. Exit code 1."""

    exit_code = EXIT_FAILED


class EmulatorError(KeyrampError):
    """An emulator could not be started, reached or reset."""

    exit_code = EXIT_FAILED


class UnsupportedOperation(UsageError):
    """An operation or key strategy that a store does not have (e.g. server-allocated Bigtable keys)."""


def _say(message: object) -> None:
    print(f"keyramp: {message}", file=sys.stderr)


def exit_code(run: Callable[[], int], *, report: Callable[[object], None] = _say) -> int:
    """``run()``'s exit code for a process entry point (``keyramp``, whose ``report`` is the CLI's
    ``print_error``; ``python -m keyramp.run.worker``; ``python -m keyramp.targets.netem``): a
    ``KeyrampError`` is reported in one line with its code, Ctrl-C is 130, a closed stdout 1."""
    try:
        return int(run() or 0)
    except KeyrampError as exc:
        report(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        report("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_FAILED
