"""The ``keyramp`` command: one console script; each verb in ``keyramp/cli/_<verb>.py`` parses its flags,
calls the library and prints (argparse lives only in this package)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from keyramp.cli._main import build_parser, main

if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
