"""A store's operations as the per-operation model sees them (``keyramp.storemodel``): key spaces and units.

What a keyramp operation makes the store do, per store, written out from the store's own
features (never its name): the document or row key; on stores with secondary indexes, one
index entry per indexed value a write adds or removes (entry = encoded value + document key,
in the index named after the property; one per array element; a map's subfields by their
dotted name); the unit whose per-key write limit it spends (the entity group's root where the
store has entity groups, else the document, entity or row).

Left out, and said so in docs/keyspace-model.md: descending and composite index entries (a
descending index mirrors the ascending one: the same load on a mirrored range), a Datastore
increment's read before its put (one more read on the same tablet).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from keyramp.backends import StoreSpec
from keyramp.core import Key, key_sort_text
from keyramp.storemodel import Access, StoreOp

__all__ = ["StoreOps", "index_entries", "value_bytes"]

_DOUBLE = struct.Struct(">d")
_SIGN = 1 << 63
_ALL = (1 << 64) - 1


def _number(x: float) -> bytes:
    """A float as 8 bytes whose unsigned order is numeric order."""
    bits = int.from_bytes(_DOUBLE.pack(x), "big")
    return (bits ^ _ALL if bits & _SIGN else bits | _SIGN).to_bytes(8, "big")


def value_bytes(value: Any) -> bytes:
    """An indexed value as bytes in the store's order: by type first (null, bool, number, string, bytes,
    timestamp), then by value."""
    if value is None:
        return b"\x00"
    if isinstance(value, bool):
        return b"\x01\x01" if value else b"\x01\x00"
    if isinstance(value, int | float):
        return b"\x02" + _number(float(value))
    if isinstance(value, str):
        return b"\x03" + value.encode()
    if isinstance(value, bytes):
        return b"\x04" + value
    if isinstance(value, datetime):
        return b"\x05" + _number(value.timestamp())
    return b"\x06" + repr(value).encode()


def index_entries(record: Mapping[str, Any], unindexed: frozenset[str], prefix: str = "",
                  ) -> Iterator[tuple[str, Any]]:
    """(property, value) of every single-field index entry ``record`` has."""
    for name, value in record.items():
        full = prefix + name
        if full in unindexed:
            continue
        if isinstance(value, Mapping):
            yield from index_entries(value, unindexed, full + ".")
        elif isinstance(value, list | tuple):
            for item in value:
                yield full, item
        else:
            yield full, value


class StoreOps:
    """StoreOps for one store: what an insert, a read, an update … of a key makes the store do."""

    def __init__(self, spec: StoreSpec, *, unindexed: frozenset[str] = frozenset()) -> None:
        box = spec.tablets.box() if spec.tablets is not None else None
        self.nodes = box is not None and box.kind == "nodes"
        self.space = "rows" if self.nodes else "documents"
        self.groups = spec.has("entity_groups")
        self.indexes = spec.has("secondary_indexes")
        self.unindexed = unindexed

    @staticmethod
    def doc(key: Key) -> bytes:
        return key_sort_text(key).encode()

    def unit(self, doc: bytes) -> bytes:
        """The per-key-limit unit of a document key: its entity group's root where the store has groups."""
        return doc.split(b"\x00", 1)[0] if self.groups else doc

    def _entries(self, doc: bytes, record: Mapping[str, Any] | None) -> list[Access]:
        if not self.indexes or record is None:
            return []
        return [Access(f"index:{name}", value_bytes(value) + b"\x00" + doc, True)
                for name, value in index_entries(record, self.unindexed)]

    def _units(self, docs: Iterable[bytes]) -> tuple[bytes, ...]:
        return tuple(dict.fromkeys(self.unit(d) for d in docs))  # each unit once, in order

    def writes(self, items: Iterable[tuple[bytes, Mapping[str, Any] | None]], *, kind: str = "write",
               old: Iterable[Mapping[str, Any] | None] = ()) -> StoreOp:
        """A commit of ``items`` (document key, its new record): the documents, their index entries
        (and the entries of ``old`` records they replace), each unit once."""
        items = list(items)
        accesses = [Access(self.space, doc, True) for doc, _ in items]
        for doc, record in items:
            accesses += self._entries(doc, record)
        for (doc, _), record in zip(items, old, strict=False):
            accesses += self._entries(doc, record)
        return StoreOp(tuple(accesses), self._units(doc for doc, _ in items), kind)

    def reads(self, docs: Iterable[bytes], *, rows: int = 1) -> StoreOp:
        return StoreOp(tuple(Access(self.space, doc, False, rows) for doc in docs), (), "read")

    def read_write(self, doc: bytes) -> StoreOp:
        """A transaction's read and write of one document; Bigtable's ReadModifyWriteRow is one write."""
        if self.nodes:
            return StoreOp((Access(self.space, doc, True),), (self.unit(doc),), "transform")
        return StoreOp((Access(self.space, doc, False), Access(self.space, doc, True)), (self.unit(doc),), "write")

    def transform(self, doc: bytes) -> StoreOp:
        """An increment: one write (Firestore's field transform, Bigtable's ReadModifyWriteRow)."""
        return StoreOp((Access(self.space, doc, True),), (self.unit(doc),), "transform")
