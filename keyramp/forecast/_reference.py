"""A launch as a stream of store operations, for the per-operation reference model (``keyramp.storemodel``).

Built independently of the fast forecast's projection (``_project``, ``_recorded``, ``_pattern``):
no append point, region or sample is inferred. Every operation of the launch (its rate ÷ ``k``)
is generated in time order, as the workload would make it:

* **launch_stream**: arrivals are a Poisson process at ``rate(t) / k``; each picks an operation
  by the mix; an insert takes the next insert index ``existing + inserted`` and its key from the
  cell's own ``CellWorkload.key_of`` (entity groups included), with time-based keys and
  ``created`` values on the launch's clock (records before the launch 1 ms apart, as the fast
  forecast assumes); a read, update, delete … picks an existing record through the cell's read
  distribution over the records that exist. The record's indexed values become index entries
  (``_reference_ops``). A Python workload's ops that create keys (``insert_ops``) are inserts,
  its others reads (what its methods do is their own code: the recorded stream says more).
* **recorded_stream**: the cell's recorded accesses (``keys/<cell>.parquet``: time, op, key)
  mapped onto the launch: the launch's j-th operation replays the recording at the same share of
  its operations. A recorded insert becomes a new key just after the recorded one (same place,
  same order: an append point stays one); a write to an existing key the recording saw at least
  twice is replayed on that key (a counter stays a counter), one it saw once on a new neighbour
  (a key seen once stands for the many keys around it, not for a hot one); reads as recorded.

Deterministic for a seed. ``query`` is not modelled (left out; ``ReferenceStream.skipped``).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import random
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from keyramp._types import Key
from keyramp.backends import spec_for
from keyramp.forecast._reference_ops import StoreOps
from keyramp.keys import RecordFactory, make_distribution, parse_shape
from keyramp.profile import Settings
from keyramp.storemodel import StoreOp
from keyramp.workload import CellWorkload

__all__ = ["READ_OPS", "WRITE_OPS", "arrivals", "launch_stream", "recorded_stream"]

Rate = Callable[[float], float]
#: Built-in ops that only read, and those that write a record that exists.
READ_OPS: Final = frozenset({"read", "batch_read", "scan"})
WRITE_OPS: Final = frozenset({"update", "delete", "transaction", "increment"})
_INSERTS: Final = frozenset({"insert", "batch_write"})
_START_MS: Final = 1_700_000_000_000


def arrivals(rate: Rate, duration_s: float, k: float, rng: random.Random) -> Iterator[tuple[float, float]]:
    """(time, share of the launch's operations before it) of a Poisson process at ``rate(t) / k``:
    unit-rate arrivals mapped through the cumulative rate (trapezoids on a grid of ≤ 20,000 cells)."""
    n = int(min(20_000, max(200, duration_s)))
    dt = duration_s / n
    rates = [max(0.0, rate(min(j * dt, duration_s * (1 - 1e-12)))) / k for j in range(n + 1)]
    areas = [(a + b) / 2 * dt for a, b in itertools.pairwise(rates)]
    total = sum(areas)
    cum, target = 0.0, rng.expovariate(1.0)
    for j, area in enumerate(areas):
        while area > 0 and cum + area >= target:
            frac = (target - cum) / area
            yield (j + frac) * dt, target / total
            target += rng.expovariate(1.0)
        cum += area


class _Clock:
    """Insert index -> ms on the launch's clock: the records before it 1 ms apart, its inserts at their time."""

    def __init__(self, existing: int, start_ms: int) -> None:
        self.existing, self.start_ms = existing, start_ms
        self.times: list[float] = []  # launch seconds of the launch's inserts, in index order

    def __call__(self, index: int) -> int:
        n = index - self.existing
        if n < 0 or not self.times:
            return self.start_ms + n
        return self.start_ms + int(1000.0 * self.times[min(n, len(self.times) - 1)])


class _Cell:
    """The cell's keys, records and read distribution on the launch's clock."""

    def __init__(self, settings: Settings, backend: str, strategy: str, existing: int, seed: int) -> None:
        self.wl = wl = CellWorkload(backend=backend, strategy=strategy, settings=settings)
        ws = settings.workload
        self.clock = _Clock(existing, int(getattr(wl.strategy, "start_ms", _START_MS)))
        wl.strategy.clock = self.clock
        shape = parse_shape(ws.document)
        self.records = RecordFactory(value_size=0, indexed_value=ws.indexed_value, indexed_fields=ws.indexed_fields,
                                     seed=settings.seed, clock=self.clock, shape=shape)
        # keyramp's own update writes the record of a random index on the workload's virtual clock
        self.updates = RecordFactory(value_size=0, indexed_value=ws.indexed_value,
                                     indexed_fields=ws.indexed_fields, seed=settings.seed, shape=shape)
        self.ops = StoreOps(spec_for(backend), unindexed=self.records.unindexed_fields())
        self.dist = make_distribution(wl.distribution, seed=seed + 1, params=wl.distribution_params)
        self.existing, self.seed = existing, seed
        self.inserted = 0

    def key(self, index: int) -> Key:
        if self.wl.strategy.server_allocated:  # scattered ids the store allocates: a hash of the index
            digest = hashlib.blake2b(f"{self.seed}:{index}".encode(), digest_size=8).digest()
            return int.from_bytes(digest, "big") % (1 << 53) + 1
        key = self.wl.key_of(index)
        assert key is not None
        return key

    def insert(self, t: float) -> tuple[bytes, Mapping[str, Any]]:
        index = self.existing + self.inserted
        self.inserted += 1
        self.clock.times.append(t)
        return self.ops.doc(self.key(index)), self.records.record(index)

    def pick(self) -> int:
        return self.dist.next_index(max(1, self.existing + self.inserted))


def _builtin(cell: _Cell, name: str, t: float, rng: random.Random) -> StoreOp | None:
    """The StoreOp of one built-in operation at launch time ``t`` (None: not modelled)."""
    ops, wl = cell.ops, cell.wl
    if name in _INSERTS:
        return ops.writes([cell.insert(t) for _ in range(wl.batch_size if name == "batch_write" else 1)])
    if name not in READ_OPS | WRITE_OPS:
        return None
    if name == "batch_read":
        return ops.reads([ops.doc(cell.key(cell.pick())) for _ in range(wl.batch_size)])
    index = cell.pick()
    doc = ops.doc(cell.key(index))
    if name in ("read", "scan"):
        return ops.reads([doc], rows=wl.scan_length if name == "scan" else 1)
    if name == "update":
        return ops.writes([(doc, cell.updates.record(rng.randrange(1 << 30)))], old=[cell.records.record(index)])
    if name == "delete":
        return ops.writes([(doc, None)], kind="delete", old=[cell.records.record(index)])
    return ops.read_write(doc) if name == "transaction" else ops.transform(doc)


def launch_stream(*, settings: Settings, backend: str, strategy: str, rate: Rate, duration_s: float,
                  k: float = 1.0, existing: int | None = None, mix: Mapping[str, float] | None = None,
                  seed: int = 0, skipped: Counter[str] | None = None) -> Iterator[tuple[float, StoreOp]]:
    """The launch's operations in time order, ÷ ``k``, from the cell's design (``settings``: the run's
    profile, typed). ``existing``: records before the launch (default ``record_count``); ``mix``: op ->
    weight (default the profile's ``ops``); ``skipped``: counts the operations not modelled."""
    wl_doc = settings.workload
    cell = _Cell(settings, backend, strategy, int(wl_doc.record_count if existing is None else existing), seed)
    weights = {op: float(w) for op, w in dict(mix or wl_doc.ops).items() if w > 0}
    names, cum = list(weights), []
    acc = 0.0
    for name in names:
        acc += weights[name]
        cum.append(acc)
    inserts = set(wl_doc.insert_ops) if wl_doc.user else None
    rng = random.Random(seed)
    for t, _ in arrivals(rate, duration_s, k, rng):
        name = names[min(bisect.bisect_right(cum, rng.random() * acc), len(names) - 1)]
        if inserts is not None:  # a Python workload: its key-creating ops insert, the others read
            name = "insert" if name in inserts else "read"
        op = _builtin(cell, name, t, rng)
        if op is None:
            if skipped is not None:
                skipped[name] += 1
            continue
        yield t, op


def _text(name: str | bytes) -> str:
    return name.decode() if isinstance(name, bytes) else str(name)


def recorded_stream(*, t: Sequence[float], op: Sequence[str | bytes], key: Sequence[bytes], backend: str,
                    rate: Rate, duration_s: float, k: float = 1.0, seed: int = 0,
                    insert_ops: Sequence[str] = (), write_ops: Sequence[str] = tuple(WRITE_OPS),
                    ) -> Iterator[tuple[float, StoreOp]]:
    """The recorded accesses (time, op name, key sort text as bytes) replayed over the launch, ÷ ``k``."""
    order = sorted(range(len(t)), key=lambda i: t[i])
    names = [_text(op[i]) for i in order]
    keys = [bytes(key[i]) for i in order]
    if not keys:
        return
    creates, writes = _INSERTS | set(insert_ops), set(write_ops)
    hot = Counter(kb for kb, name in zip(keys, names, strict=True) if name in writes)
    ops = StoreOps(spec_for(backend))
    rng = random.Random(seed)
    fresh = 0
    for when, share in arrivals(rate, duration_s, k, rng):
        i = min(len(keys) - 1, int(share * len(keys)))
        name, doc = names[i], keys[i]
        if name in creates or (name in writes and hot[doc] < 2):
            fresh += 1
            doc = doc + b"\x01" + b"%012d" % fresh  # a new key just after the recorded one
        if name in creates:
            yield when, ops.writes([(doc, None)])
        elif name in writes:
            yield when, (ops.transform(doc) if name == "increment" else
                         ops.writes([(doc, None)], kind="delete") if name == "delete" else
                         ops.read_write(doc) if name == "transaction" else ops.writes([(doc, None)]))
        else:
            yield when, ops.reads([doc])
