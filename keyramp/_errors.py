"""Exceptions that map to keyramp's exit codes (0 ok, 1 failed, 2 bad input, 130 interrupted),
and the one place a process entry point turns them into its exit code."""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["EmulatorError", "KeyrampError", "RunFailed", "UnsupportedOperation", "UsageError", "exit_code"]


class KeyrampError(Exception):
    """Base class; ``exit_code`` is what the CLI returns, ``str(exc)`` is the one-line reason."""

    exit_code = 1


class UsageError(KeyrampError):
    """Bad input: invalid profile, unknown name, unreadable file. Exit code 2."""

    exit_code = 2


class RunFailed(KeyrampError):
    """A run, threshold or regression check failed. Exit code 1."""

    exit_code = 1


class EmulatorError(KeyrampError):
    """An emulator could not be started, reached or reset."""

    exit_code = 1


class UnsupportedOperation(UsageError):
    """An operation or key strategy that a store does not have (e.g. server-allocated Bigtable keys)."""


def exit_code(run: Callable[[], int]) -> int:
    """``run()``'s exit code for a process entry point (``keyramp``, ``python -m keyramp.run.worker``,
    ``python -m keyramp.targets.netem``): a ``KeyrampError`` is its one line on stderr and its
    code, Ctrl-C 130, a closed stdout (``| head``) 1."""
    try:
        return int(run() or 0)
    except KeyrampError as exc:
        print(f"keyramp: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("keyramp: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
