"""The ``keyramp`` command: one console script; each verb in ``keyramp/cli/_<verb>.py`` parses its flags,
calls the library and prints (argparse lives only in this package)."""

from __future__ import annotations

from keyramp.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
