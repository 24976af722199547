"""The ``keyramp`` command: one console script; each stage registers its own verbs."""

from __future__ import annotations

from keyramp.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
