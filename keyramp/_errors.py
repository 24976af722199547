"""Exceptions that map to keyramp's exit codes (0 ok, 1 failed, 2 bad input)."""

from __future__ import annotations

__all__ = ["EmulatorError", "KeyrampError", "RunFailed", "UnsupportedOperation", "UsageError"]


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
