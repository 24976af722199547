"""Keys inside a Python workload's op: ``self.keys`` and what an op returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from keyramp.core import Key

__all__ = ["KeyHandle", "as_key"]


class KeyHandle:
    """Keys of the cell's strategy for one user, in the form its store's official client takes
    (``StoreSpec.workload_key``: a Firestore document id ``str``, a Datastore id or name — an
    ancestor path for entity groups —, a Bigtable row key ``bytes``), the same document, entity
    or row the preload wrote for that index, in the strategy's order. ``new()`` the next
    insert's, ``existing()`` one already written, picked by ``read_distribution``. ``index``
    is the last new key's insert index."""

    __slots__ = ("_convert", "_namespace", "_ops", "_wl", "index")

    def __init__(self, ops: Any, *, convert: Callable[[Key, str], Any], namespace: str) -> None:
        self._ops, self._wl = ops, ops.wl
        self._convert, self._namespace = convert, namespace
        self.index: int | None = None

    def new(self) -> Any:
        wl = self._wl
        self.index = index = wl.next_insert_index()
        return self._convert(wl.key_of(index), self._namespace)

    def existing(self) -> Any:
        return self._convert(self._ops.existing_key(), self._namespace)

    def existing_index(self) -> int:
        """The insert index of an existing record (``read_distribution``): ``self.document(i)``
        rebuilds what was written for it, ``self.keys.key(i)`` its key."""
        n = self._wl.existing()
        if n <= 0:
            raise LookupError("no records yet: add inserts or set record_count > 0")
        return self._ops.dist.next_index(n)

    def key(self, index: int) -> Any:
        """The key of the ``index``-th insert."""
        return self._convert(self._wl.key_of(index), self._namespace)


def as_key(value: Any) -> Key | None:
    """What an op returned, as a keyramp key for key sampling: str/int/pair as is, an ancestor
    path as its (parent, child) pair, a row key's bytes decoded, a Firestore
    ``DocumentReference`` or Datastore ``Key`` by its id."""
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, tuple):  # a Datastore ancestor path (parent_kind, parent, kind, child)
        return (value[1], value[3]) if len(value) == 4 else value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "id_or_name"):  # google.cloud.datastore.Key
        parent = getattr(value, "parent", None)
        return (parent.id_or_name, value.id_or_name) if parent is not None else value.id_or_name
    ident = getattr(value, "id", None)  # firestore DocumentReference / DocumentSnapshot
    return ident if isinstance(ident, str) else str(value)
