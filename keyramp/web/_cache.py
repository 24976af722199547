"""A small per-app cache of parsed files, keyed by path and (mtime, size)."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TypeVar

__all__ = ["FileCache", "stamp"]

T = TypeVar("T")


def stamp(*paths: Path) -> tuple[tuple[int, int], ...]:
    """(mtime_ns, size) per path, (0, -1) when missing: changes whenever a file is rewritten."""
    out = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append((0, -1))
        else:
            out.append((st.st_mtime_ns, st.st_size))
    return tuple(out)


class FileCache:
    """LRU of values derived from files; an entry is reused only while its stamp is unchanged.

    One instance per Flask app (kept in ``app.extensions``), so tests and apps never share state.
    """

    def __init__(self, *, max_entries: int = 2048) -> None:
        self._max = max_entries
        self._data: OrderedDict[Hashable, tuple[Hashable, object]] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[Hashable, threading.Lock] = {}

    def _hit(self, key: Hashable, current: Hashable) -> tuple[bool, object]:
        with self._lock:
            hit = self._data.get(key)
            if hit is not None and hit[0] == current:
                self._data.move_to_end(key)
                return True, hit[1]
            return False, None

    def get(self, key: Hashable, files: tuple[Path, ...], build: Callable[[], T]) -> T:
        return self.get_stamped(key, stamp(*files), build)

    def get_stamped(self, key: Hashable, current: Hashable, build: Callable[[], T]) -> T:
        """``get`` with the caller's own stamp (e.g. the names and sizes of a cell's Parquet parts)."""
        found, value = self._hit(key, current)
        if found:
            return value  # type: ignore[return-value]
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        # one build per key at a time: the run page fetches every cell's series at once, and
        # each would otherwise read the same time series in parallel on a 2-core box
        with building:
            found, value = self._hit(key, current)
            if found:
                return value  # type: ignore[return-value]
            try:
                value = build()  # outside the cache lock: other keys are served meanwhile
                with self._lock:
                    self._data[key] = (current, value)
                    self._data.move_to_end(key)
                    while len(self._data) > self._max:
                        self._data.popitem(last=False)
            finally:
                # released only once the value is stored: a caller arriving in between would
                # otherwise find neither the value nor the build lock and build again
                with self._lock:
                    self._building.pop(key, None)
        return value

    def __len__(self) -> int:
        return len(self._data)
