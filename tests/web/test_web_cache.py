"""The web UI's file cache: stamps, LRU, and one build per key under concurrency."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from keyramp.web._cache import FileCache, stamp


def test_entry_is_rebuilt_only_when_its_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    path.write_text("a")
    cache = FileCache(max_entries=2)
    builds: list[int] = []

    def build() -> int:
        builds.append(1)
        return len(builds)

    assert cache.get("k", (path,), build) == 1 and cache.get("k", (path,), build) == 1
    path.write_text("ab")
    os.utime(path, ns=(1, 2_000_000_000_000_000_000))
    assert cache.get("k", (path,), build) == 2
    assert stamp(tmp_path / "missing") == ((0, -1),)
    cache.get("x", (path,), build)
    cache.get("y", (path,), build)
    assert len(cache) == 2 and cache.get("k", (path,), build) == 5  # "k" was evicted (LRU)


def test_concurrent_requests_share_one_build(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    path.write_text("a")
    cache = FileCache()
    calls: list[str] = []

    def slow() -> str:
        calls.append(threading.current_thread().name)
        time.sleep(0.2)
        return "parsed"

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("series", (path,), slow)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert results == ["parsed"] * 4 and len(calls) == 1


def test_failed_build_does_not_wedge_the_key(tmp_path: Path) -> None:
    cache = FileCache()

    def boom() -> str:
        raise RuntimeError("bad file")

    for _ in range(2):
        try:
            cache.get("k", (tmp_path,), boom)
        except RuntimeError:
            pass
    assert cache.get("k", (tmp_path,), lambda: "ok") == "ok"
