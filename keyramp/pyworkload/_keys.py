"""Keys inside a Python workload's op: ``self.keys`` and what an op returns."""

from __future__ import annotations

from typing import Any

from keyramp._types import Key

__all__ = ["KeyHandle", "as_key"]


class KeyHandle:
    """Keys of the cell's strategy for one user: ``new()`` the next insert's, ``existing()`` one
    already written, picked by ``read_distribution``. ``index`` is the last new key's insert index."""

    __slots__ = ("_ops", "_wl", "index")

    def __init__(self, ops: Any) -> None:
        self._ops, self._wl = ops, ops.wl
        self.index: int | None = None

    def new(self) -> Key:
        wl = self._wl
        self.index = index = wl.next_insert_index()
        return wl.key_of(index)

    def existing(self) -> Key:
        return self._ops.existing_key()

    def existing_index(self) -> int:
        """The insert index of an existing record (``read_distribution``): ``self.document(i)``
        rebuilds what was written for it, ``self.keys.key(i)`` its key."""
        n = self._wl.existing()
        if n <= 0:
            raise LookupError("no records yet: add inserts or set record_count > 0")
        return self._ops.dist.next_index(n)

    def key(self, index: int) -> Key:
        """The key of the ``index``-th insert."""
        return self._wl.key_of(index)


def as_key(value: Any) -> Key | None:
    """What an op returned, as a keyramp key for key sampling: str/int/tuple as is, a row key's
    bytes decoded, a Firestore ``DocumentReference`` or Datastore ``Key`` by its id."""
    if value is None or isinstance(value, (str, int, tuple)):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "id_or_name"):  # google.cloud.datastore.Key
        parent = getattr(value, "parent", None)
        return (parent.id_or_name, value.id_or_name) if parent is not None else value.id_or_name
    ident = getattr(value, "id", None)  # firestore DocumentReference / DocumentSnapshot
    return ident if isinstance(ident, str) else str(value)
