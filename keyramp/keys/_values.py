"""Record values: a payload of ``value_size`` bytes plus the properties index rules are about.

``indexed_value`` adds a ``created`` property:

* ``none``: no ``created`` property.
* ``monotonic``: ``created`` grows with the insert index (BP-RATE-2 anti-pattern).
* ``prefixed``: ``created`` = ``user0042#<ms>``: a high-cardinality id first (BP-KEY-4).
* ``unindexed``: monotonic ``created``, listed in ``unindexed_fields()`` (BP-RATE-2 fix;
  backends exclude it via ``Target.unindexed``).

``indexed_fields = N`` adds small properties ``f0 … fN-1`` (index fan-out, BP-IDX-1).

A ``DocumentShape`` (``[workload.document]``) replaces all of that with the application's
own properties (``keys/_shape.py``), compiled once.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Final

from keyramp.core import Key, UsageError
from keyramp.keys._shape import DocumentShape
from keyramp.keys._strategies import virtual_clock

__all__ = ["INDEXED_VALUES", "RecordFactory", "entity_group_key"]

INDEXED_VALUES: Final = ("none", "monotonic", "prefixed", "unindexed")
#: Payloads are slices at varying offsets of one buffer, so records differ without urandom per op.
_SLACK: Final = 4096


class RecordFactory:
    """Builds the record for an insert index; cheap (one bytes slice + a small dict)."""

    def __init__(
        self,
        *,
        value_size: int,
        indexed_value: str = "none",
        indexed_fields: int = 0,
        seed: int = 0,
        users: int = 1000,
        clock: Callable[[int], int] | None = None,
        shape: DocumentShape | None = None,
    ) -> None:
        if isinstance(value_size, bool) or not isinstance(value_size, int) or value_size < 0:
            raise UsageError(f"workload.value_size: must be an integer ≥ 0, got {value_size!r}")
        if indexed_value not in INDEXED_VALUES:
            raise UsageError(f"workload.indexed_value: one of {', '.join(INDEXED_VALUES)}, got {indexed_value!r}")
        if isinstance(indexed_fields, bool) or not isinstance(indexed_fields, int) or indexed_fields < 0:
            raise UsageError(f"workload.indexed_fields: must be an integer ≥ 0, got {indexed_fields!r}")
        if isinstance(users, bool) or not isinstance(users, int) or users < 1:
            raise UsageError(f"users: must be an integer ≥ 1, got {users!r}")
        self.value_size = value_size
        self.indexed_value = indexed_value
        self.indexed_fields = indexed_fields
        self.users = users
        #: Virtual-clock ms of the ``index``-th insert (never decreases with index): the key
        #: strategy's clock when it has one, so ``created`` and time-based keys agree.
        self.created: Callable[[int], int] = clock or virtual_clock()
        self._buffer = random.Random(seed).randbytes(value_size + _SLACK)
        self._field_names = tuple(f"f{i}" for i in range(indexed_fields))
        self._user_fmt = f"user{{:0{max(4, len(str(users - 1)))}d}}#{{:013d}}".format
        self.shape = shape or None
        if self.shape is not None:
            if indexed_value != "none" or indexed_fields:
                raise UsageError("workload.document: replaces indexed_value and indexed_fields (give the "
                                 "document the properties instead)")
            # The compiled function takes ``index`` positionally only (no caller passes it by name).
            self.record = self.shape.compile(seed=seed, created=self.created)  # type: ignore[assignment]

    def record(self, index: int) -> dict[str, Any]:
        offset = (index * 2654435761) % _SLACK  # Knuth's multiplicative hash: varied offsets
        rec: dict[str, Any] = {"payload": self._buffer[offset : offset + self.value_size]}
        if self.indexed_value == "prefixed":
            rec["created"] = self._user_fmt(index % self.users, self.created(index))
        elif self.indexed_value != "none":
            rec["created"] = self.created(index)
        for i, name in enumerate(self._field_names):
            rec[name] = (index + i) % 1000
        return rec

    def unindexed_fields(self) -> frozenset[str]:
        """Fields to exclude from indexes: the payload always (never queried, and Datastore
        rejects indexed blobs over 1500 bytes), ``created`` when ``indexed_value = unindexed``;
        with a document shape, the properties it excludes (``map.field`` for a map's subfield)."""
        if self.shape is not None:
            return self.shape.unindexed()
        if self.indexed_value == "unindexed":
            return frozenset({"payload", "created"})
        return frozenset({"payload"})


def entity_group_key(key: Key, index: int, *, group_size: int) -> tuple[int, int | str]:
    """Place the ``index``-th record under parent ``index // group_size + 1`` (Datastore
    ancestor path, BP-RATE-1): consecutive inserts share one entity group."""
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise UsageError(f"workload.entity_group_size: must be an integer ≥ 1, got {group_size!r}")
    if isinstance(key, tuple):
        raise UsageError("entity_group_key: key already has a parent")
    return (index // group_size + 1, key)
