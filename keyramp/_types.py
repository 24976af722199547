"""Small shared types: key values, operation names."""

from __future__ import annotations

from typing import Final, TypeAlias

__all__ = ["ALL_OPS", "OP_NAMES", "Key", "key_sort_text", "key_text"]

#: The op name of rows/histograms that merge all operations of a cell (recorder, run files, readers).
ALL_OPS: Final = "*"

#: A key as a strategy produces it: ``int`` for numeric ids (Datastore ids), ``str`` otherwise,
#: or a ``(parent, child)`` pair for a Datastore entity-group child (ancestor path).
#: Backends map it to their own form (Datastore id/name, Firestore document id, Bigtable row key).
Key: TypeAlias = "int | str | tuple[int | str, int | str]"

OP_NAMES: Final = (
    "insert",
    "read",
    "update",
    "delete",
    "scan",
    "query",
    "batch_write",
    "batch_read",
    "transaction",
    "increment",
)

# Datastore orders integer ids numerically and before names; 20 digits hold any int64.
_INT_WIDTH: Final = 20


def key_sort_text(key: int | str | tuple[int | str, int | str]) -> str:
    """The text whose byte order is the store's key order (ints zero-padded so order is numeric).

    An ancestor path sorts by parent first, then child, joined by a NUL byte.
    """
    if isinstance(key, tuple):
        return "\x00".join(key_sort_text(part) for part in key)
    if isinstance(key, int):
        return str(key).zfill(_INT_WIDTH)
    return key


def key_text(key: int | str | tuple[int | str, int | str]) -> str:
    """A key as a text id (Firestore document id, Bigtable row key): ints zero-padded like
    ``key_sort_text``, so a sequential id stays sequential in the store's byte order and
    reads the same on every store; an ancestor pair becomes ``parent#child``."""
    if isinstance(key, tuple):
        return "#".join(key_sort_text(part) for part in key)
    return key_sort_text(key)
