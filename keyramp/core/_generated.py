"""A file generated from the code and checked in (``docs/profiles.md``'s field reference, the
results' JSON Schema): one ``main`` that rewrites it, or with ``--check`` fails when it is stale."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["regenerate"]


def regenerate(doc: Path, current: str, updated: str, *, command: str, what: str = "",
               argv: Sequence[str] | None = None) -> int:
    """Write ``updated`` over ``doc`` when it differs from ``current``; with ``--check`` in ``argv``
    (default: the command line) only report it (exit 1). ``what``: the part of the file that is generated."""
    args = list(sys.argv[1:] if argv is None else argv)
    stale = updated != current
    if "--check" in args:
        if stale:
            print(f"{doc}: {what + ' is ' if what else ''}out of date; run `{command}`", file=sys.stderr)
        return int(stale)
    if stale:
        doc.write_text(updated, encoding="utf-8")
        print(f"{doc}: {what + ' ' if what else ''}updated")
    return 0
