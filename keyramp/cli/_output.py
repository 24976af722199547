"""Where a verb's machine-readable output goes: the same ``--json`` / ``--out FILE`` on every verb.

``--json`` prints the JSON document on stdout (the human output moves to stderr or is left
out); ``--out FILE`` writes it to FILE instead ('-' is stdout). ``keyramp compare`` set the
shape; ``lint``, ``forecast`` and ``list`` follow it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from keyramp.core import UsageError

__all__ = ["ERROR_PREFIX", "STDOUT", "add_json_flags", "error_line", "json_target", "json_text", "print_error",
           "to_stdout", "write_text"]

#: Every error line keyramp prints starts with this (argparse's own too: ``keyramp: error: …``), so a
#: log search for "keyramp: " finds them all, and nothing else starts so.
ERROR_PREFIX = "keyramp: "


def error_line(message: object) -> str:
    """The one form of an error line: ``keyramp: <message>`` (never ``keyramp: keyramp: …``)."""
    text = str(message).strip()
    return text if text.startswith(ERROR_PREFIX) else ERROR_PREFIX + text


def print_error(message: object) -> None:
    """An error for the user, on stderr, in the one form (``error_line``): the only place the CLI prints one."""
    print(error_line(message), file=sys.stderr)

#: The target meaning stdout.
STDOUT = Path("-")


def add_json_flags(parser: argparse.ArgumentParser, *, json_help: str) -> None:
    parser.add_argument("--json", action="store_true", help=json_help)
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the JSON document to FILE instead")


def json_target(args: argparse.Namespace, *, positionals: Sequence[str] = ()) -> Path | None:
    """Where the JSON document goes: ``--out FILE``, else stdout with ``--json``, else nowhere.

    ``positionals``: the verb's RUN/PROFILE arguments, where the old ``--json FILE`` form left FILE.
    """
    if args.json:
        old = [spec for spec in positionals if spec.endswith(".json") and not Path(spec).is_dir()]
        if old:
            raise UsageError(f"--json prints to stdout and takes no FILE: write it with --json --out {old[0]}")
    out: Path | None = args.out
    return out if out is not None else (STDOUT if args.json else None)


def to_stdout(target: Path | None) -> bool:
    return target is not None and str(target) == str(STDOUT)


def write_text(target: Path, text: str) -> None:
    """``text`` to ``target`` ('-' is stdout); an unwritable file is a usage error (exit 2)."""
    if str(target) == str(STDOUT):
        sys.stdout.write(text)
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None


def json_text(doc: Any, *, indent: int = 2, ensure_ascii: bool = True) -> str:
    return json.dumps(doc, indent=indent, ensure_ascii=ensure_ascii) + "\n"
