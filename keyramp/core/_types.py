"""Small shared types: key values, operation names."""

from __future__ import annotations

from typing import Final, TypeAlias

__all__ = ["ACCESS_KINDS", "ALL_OPS", "INDEX_FIELD_SEP", "KIND_OF_OP", "OP_NAMES", "WRITE_KINDS", "Key", "KeySample",
           "key_sort_text", "key_text"]

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

#: How a sampled access touched its key (``keys/<cell>.parquet``'s ``kind``): ``insert`` creates it,
#: ``write`` sets one that exists, ``upsert`` sets it whether or not it exists (read back as an insert where
#: the recording shows its key first, else a write), ``transform`` changes a field in place (an increment,
#: a server timestamp), ``delete``, ``read``, ``query`` (many keys: not projected).
ACCESS_KINDS: Final = ("insert", "write", "upsert", "transform", "delete", "read", "query")
#: Separates an index entry's field from its value and document key (a sample's ``index`` entries).
INDEX_FIELD_SEP: Final = "\x1f"
#: The kinds that write their key (what a per-key write limit counts).
WRITE_KINDS: Final = frozenset({"insert", "write", "upsert", "transform", "delete"})
#: What each built-in operation does to the key it samples (a transaction reads and writes it).
KIND_OF_OP: Final = {"insert": "insert", "batch_write": "insert", "read": "read", "batch_read": "read",
                     "scan": "read", "query": "query", "update": "write", "transaction": "write",
                     "increment": "transform", "delete": "delete"}

#: One sampled access (``Recorder``): seconds since the measured phase began, the operation, the key's
#: sort text, its kind (``ACCESS_KINDS``), the index entries it wrote, and its number in its operation
#: (0: the first; a Python workload's batch writes several keys in one operation).
KeySample: TypeAlias = "tuple[float, str, str, str, tuple[str, ...], int]"

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
