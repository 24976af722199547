"""``keyramp lint PROFILE...``: check profiles against best-practices.md (``keyramp.profile._lint_files``)."""

from __future__ import annotations

import argparse
from typing import Any

from keyramp.cli._output import add_json_flags, json_target, json_text, print_error, to_stdout, write_text
from keyramp.profile import group_findings, lint_files

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``keyramp lint PROFILE... [--strict] [--json] [--out FILE]``."""
    parser = subparsers.add_parser(
        "lint",
        help="check profiles against the best-practice rules (BP-*)",
        description="Check profiles against best-practices.md. Exit 0 clean, 1 an error "
        "(with --strict also a warning), 2 an unreadable or invalid profile.",
    )
    parser.add_argument("profiles", nargs="+", metavar="PROFILE", help="profile file or directory of *.toml")
    parser.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    add_json_flags(parser, json_help="print findings as JSON")
    parser.set_defaults(func=_cmd_lint)


def _cmd_lint(args: argparse.Namespace) -> int:
    target = json_target(args, positionals=args.profiles)
    report = lint_files(args.profiles, strict=args.strict)
    for file in report.files:
        if file.error is not None:
            print_error(file.error)
        elif not to_stdout(target):
            for g in group_findings(file.findings):
                print(f"{file.path}: {g.severity.upper()} {g.line()}")
            if not file.findings:
                print(f"{file.path}: ok")
    if target is not None:
        write_text(target, json_text(report.to_json(), ensure_ascii=False))
    return report.exit_code
