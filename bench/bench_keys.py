"""Cost of keyramp's own per-operation work: one key, one ``next_index``, one record (µs).

Compare with one emulator operation, which costs the client 300–700 µs of CPU: keyramp's
share should be a small fraction. Run: ``.venv/bin/python bench/bench_keys.py [--n 200000]``.
``--smoke``: 1,000 calls each.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parse_args

from keyramp.keys import DISTRIBUTIONS, STRATEGIES, RecordFactory, make_distribution, make_strategy, parse_shape

#: docs/best-practices.md's key formats as templates (compiled once, like the named strategies).
TEMPLATES = ("timestamp", "shard(8)#timestamp", "device#reverse_ts", "hash4(user)#user", "tenant#yyyymmddhh#seq")
#: A chat message (examples/chat): 5 properties, an array and a map.
CHAT_SHAPE = {
    "room": {"type": "string", "values": 1000}, "sent_at": "timestamp",
    "text": {"type": "string", "size": 200, "indexed": False},
    "tags": {"type": "array", "of": "string", "items": 3, "values": 50},
    "sender": {"type": "map", "fields": {"id": "int", "name": {"type": "string", "size": 20, "indexed": False}}},
}


def per_call_us(fn: Callable[[int], object], n: int, *, start: int = 0) -> float:
    """Best of three runs of ``n`` calls, in µs per call (best-of filters scheduler noise)."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for i in range(start, start + n):
            fn(i)
        best = min(best, time.perf_counter() - t0)
    return best / n * 1e6


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200_000, help="calls per measurement")
    args = parse_args(parser, argv, smoke={"n": 1000})
    n = args.n
    rows: list[tuple[str, str, float]] = []

    for name in STRATEGIES:
        strategy = make_strategy(name, seed=42)
        rows.append(("key", name, per_call_us(strategy.key, n, start=1_000_000)))
    for template in TEMPLATES:
        strategy = make_strategy(template, seed=42)
        rows.append(("key", f"template {template}", per_call_us(strategy.key, n, start=1_000_000)))

    for name in DISTRIBUTIONS:
        fixed = make_distribution(name, seed=42)
        rows.append(("next_index", f"{name} (n=10^6)", per_call_us(lambda i, d=fixed: d.next_index(1_000_000), n)))
        growing = make_distribution(name, seed=42)
        growing.next_index(1_000_000)  # preload, then n grows by one per call as inserts land
        rows.append(
            ("next_index", f"{name} (n growing)", per_call_us(lambda i, d=growing: d.next_index(1_000_000 + i), n))
        )
    unscrambled = make_distribution("zipfian", seed=42, params={"scrambled": False})
    unscrambled.next_index(1_000_000)
    rows.append(("next_index", "zipfian unscrambled (n growing)",
                 per_call_us(lambda i: unscrambled.next_index(1_000_000 + i), n)))

    for size, mode, fields in ((256, "none", 0), (256, "prefixed", 10), (65_536, "monotonic", 0), (1 << 20, "none", 0)):
        factory = RecordFactory(value_size=size, indexed_value=mode, indexed_fields=fields, seed=42)
        rows.append(("record", f"{size} B, {mode}, {fields} fields", per_call_us(factory.record, max(1000, n // 10))))
    chat = RecordFactory(value_size=0, seed=42, shape=parse_shape(CHAT_SHAPE))
    rows.append(("record", "document shape: chat message", per_call_us(chat.record, max(1000, n // 10))))

    width = max(len(r[1]) for r in rows)
    print(f"{'what':<11} {'name':<{width}} {'µs/call':>8}  {'% of 500 µs op':>14}")
    for kind, name, us in rows:
        print(f"{kind:<11} {name:<{width}} {us:8.2f}  {us / 500 * 100:13.2f}%")


if __name__ == "__main__":
    main()
