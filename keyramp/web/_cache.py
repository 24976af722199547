"""A small per-app cache of parsed files, keyed by path and (mtime, size)."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Hashable, TypeVar

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

    def get(self, key: Hashable, files: tuple[Path, ...], build: Callable[[], T]) -> T:
        current = stamp(*files)
        with self._lock:
            hit = self._data.get(key)
            if hit is not None and hit[0] == current:
                self._data.move_to_end(key)
                return hit[1]  # type: ignore[return-value]
        value = build()  # outside the lock: parsing a big file must not block other requests
        with self._lock:
            self._data[key] = (current, value)
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._data)
