"""A launch as a stream of store operations, for the per-operation reference model (``keyramp.storemodel``).

Built independently of the fast forecast's projection (``_project``, ``_recorded``, ``_pattern``):
no append point, region or sample is inferred. Every operation of the launch (its rate ÷ ``k``)
is generated in time order, as the workload would make it:

* **launch_stream**: arrivals are a Poisson process at ``rate(t) / k``; each picks an operation
  by the mix and stands for k of the launch's at the same moment (a thinning of the launch, not a
  slowed copy): an insert takes the index the launch inserts then, ``existing + inserted(t)``
  (k = 1: the next one), and its key from the cell's own ``CellWorkload.key_of`` (an entity group
  is written whole, one group in k), with time-based keys and ``created`` values on the launch's
  clock (records before the launch 1 ms apart, as the fast forecast assumes); a read, update,
  delete … picks an existing record through the cell's read distribution over the records the
  launch has made by then. So a pattern of the insert index (``shard(1000)``, devices taking
  turns, a prefixed ``created``) cycles at the launch's pace at any k. The record's indexed values
  become index entries (``_reference_ops``). A Python workload's ops that create keys
  (``insert_ops``) are inserts, its others reads (what its methods do is their own code: the
  recorded stream says more).
* **recorded_stream**: the cell's recorded accesses (``keys/<cell>.parquet``: time, op, key)
  mapped onto the launch: the launch's j-th operation replays the recording at the same share of
  its operations. A recorded insert becomes a new key just after the recorded one (same place,
  same order: an append point stays one); a write to an existing key the recording saw at least
  twice is replayed on that key (a counter stays a counter), one it saw once on a new neighbour
  (a key seen once stands for the many keys around it, not for a hot one); reads as recorded. The
  index entries a recorded write made (a Python workload's captured ``index``) are made again,
  each just after the recorded one.

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

from keyramp.backends import spec_for
from keyramp.core import INDEX_FIELD_SEP, Key
from keyramp.forecast._reference_ops import StoreOps
from keyramp.keys import RecordFactory, make_distribution, parse_shape
from keyramp.profile import Settings
from keyramp.storemodel import Access, StoreOp
from keyramp.workload import CellWorkload

__all__ = ["READ_OPS", "WRITE_OPS", "arrivals", "launch_stream", "recorded_stream"]

Rate = Callable[[float], float]
#: Built-in ops that only read, and those that write a record that exists.
READ_OPS: Final = frozenset({"read", "batch_read", "scan"})
WRITE_OPS: Final = frozenset({"update", "delete", "transaction", "increment"})
_INSERTS: Final = frozenset({"insert", "batch_write"})
_BATCH_INSERTS: Final = frozenset({"batch_write"})
_START_MS: Final = 1_700_000_000_000


class _Cumulative:
    """The launch's operations before each moment (real ones, not ÷ ``k``): trapezoids of ``rate`` on a grid
    of ≤ 20,000 cells, and their inverse."""

    def __init__(self, rate: Rate, duration_s: float) -> None:
        n = int(min(20_000, max(200, duration_s)))
        self.dt = duration_s / n
        rates = [max(0.0, rate(min(j * self.dt, duration_s * (1 - 1e-12)))) for j in range(n + 1)]
        self.areas = [(a + b) / 2 * self.dt for a, b in itertools.pairwise(rates)]
        self.cum = list(itertools.accumulate(self.areas, initial=0.0))
        self.total = self.cum[-1]

    def time_of(self, ops: float) -> float:
        """The launch second by which ``ops`` operations were made."""
        j = min(max(bisect.bisect_right(self.cum, ops) - 1, 0), len(self.areas) - 1)
        area = self.areas[j]
        return (j + (min(max((ops - self.cum[j]) / area, 0.0), 1.0) if area > 0 else 0.0)) * self.dt


def arrivals(rate: Rate, duration_s: float, k: float, rng: random.Random) -> Iterator[tuple[float, float]]:
    """(time, share of the launch's operations before it) of a Poisson process at ``rate(t) / k``:
    unit-rate arrivals mapped through the cumulative rate."""
    c = _Cumulative(rate, duration_s)
    total = c.total / k
    cum, target = 0.0, rng.expovariate(1.0)
    for j, real in enumerate(c.areas):
        area = real / k
        while area > 0 and cum + area >= target:
            frac = (target - cum) / area
            yield (j + frac) * c.dt, target / total
            target += rng.expovariate(1.0)
        cum += area


class _Clock:
    """Insert index -> ms on the launch's clock: the records before it 1 ms apart, its inserts at their time
    (one the stream did not make, at 1/k: when the launch made it)."""

    def __init__(self, existing: int, start_ms: int, when: Callable[[int], float]) -> None:
        self.existing, self.start_ms, self.when = existing, start_ms, when
        self.made: list[int] = []  # the launch's inserts the stream made, in index order
        self.times: list[float] = []  # ... and their launch seconds

    def __call__(self, index: int) -> int:
        n = index - self.existing
        if n < 0:
            return self.start_ms + n
        i = bisect.bisect_left(self.made, index)
        t = self.times[i] if i < len(self.made) and self.made[i] == index else self.when(n)
        return self.start_ms + int(1000.0 * t)


class _Cell:
    """The cell's keys, records and read distribution on the launch's clock.

    At 1/``k`` every operation stands for k of the launch's at the same moment (a thinning of the launch):
    an insert takes the index the launch inserts then, and reads pick among the records that exist then.
    So a pattern of the insert index (``shard(1000)``, a prefixed ``created``, devices taking turns) cycles at
    the launch's pace, not k times slower (a slow sweep would be a moving hotspot the launch never has). Where
    the store limits an entity group, an insert that starts a group takes the whole group (its consecutive
    indexes), so a group fills as in the launch, ÷ k (one group in k is written)."""

    def __init__(self, settings: Settings, backend: str, strategy: str, existing: int, seed: int,
                 launch: _Cumulative, k: float, inserts_per_op: float) -> None:
        self.wl = wl = CellWorkload(backend=backend, strategy=strategy, settings=settings)
        ws = settings.workload
        self.launch, self.k, self.per_op = launch, k, inserts_per_op
        self.clock = _Clock(existing, int(getattr(wl.strategy, "start_ms", _START_MS)),
                            lambda n: launch.time_of(n / max(inserts_per_op, 1e-12)))
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
        self.block = max(1, int(wl.group_size or 0)) if self.ops.groups else 1
        self.next_index = existing  # the next index of the group being written
        self.inserted = 0  # the launch's inserts before now (k = 1: the stream's own)

    def key(self, index: int) -> Key:
        if self.wl.strategy.server_allocated:  # scattered ids the store allocates: a hash of the index
            digest = hashlib.blake2b(f"{self.seed}:{index}".encode(), digest_size=8).digest()
            return int.from_bytes(digest, "big") % (1 << 53) + 1
        key = self.wl.key_of(index)
        assert key is not None
        return key

    def at(self, share: float) -> None:
        """Now: the launch has made ``share`` of its operations."""
        if self.k != 1.0:
            self.inserted = int(self.per_op * share * self.launch.total)

    def insert(self, t: float) -> tuple[bytes, Mapping[str, Any]]:
        index = self.next_index
        if self.k != 1.0 and index % self.block == 0:  # a new group (parent index // size): where the launch is
            now = self.existing + self.inserted
            index = max(index, now - now % self.block)
        else:
            self.inserted += self.k == 1.0
        self.next_index = index + 1
        self.clock.made.append(index)
        self.clock.times.append(t)
        return self.ops.doc(self.key(index)), self.records.record(index)

    def pick(self) -> int:
        return self.dist.next_index(max(1, self.existing + max(self.inserted, self.next_index - self.existing)))


def _inserts_per_call(name: str, batch_size: int) -> int:
    """Records one call of ``name`` creates: a batch writes ``batch_size``, any other insert one."""
    return batch_size if name in _BATCH_INSERTS else 1


def _builtin(cell: _Cell, name: str, t: float, rng: random.Random) -> StoreOp | None:
    """The StoreOp of one built-in operation at launch time ``t`` (None: not modelled)."""
    ops, wl = cell.ops, cell.wl
    if name in _INSERTS:
        return ops.writes([cell.insert(t) for _ in range(_inserts_per_call(name, wl.batch_size))])
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
    weights = {op: float(w) for op, w in dict(mix or wl_doc.ops).items() if w > 0}
    inserts = set(wl_doc.insert_ops) if wl_doc.user else None
    creates = _INSERTS if inserts is None else inserts
    per_op = sum(w * _inserts_per_call(op, wl_doc.batch_size) for op, w in weights.items() if op in creates)
    cell = _Cell(settings, backend, strategy, int(wl_doc.record_count if existing is None else existing), seed,
                 _Cumulative(rate, duration_s), k, per_op / (sum(weights.values()) or 1.0))
    names, cum = list(weights), list(itertools.accumulate(weights.values()))
    acc = cum[-1] if cum else 0.0
    rng = random.Random(seed)
    for t, share in arrivals(rate, duration_s, k, rng):
        cell.at(share)
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
                    index: Mapping[int, Sequence[str]] | None = None) -> Iterator[tuple[float, StoreOp]]:
    """The recorded accesses (time, op name, key sort text as bytes) replayed over the launch, ÷ ``k``.
    ``index``: by recorded row, the index entries its write made (``field␟value\\0key``, a Python
    workload's captured writes): each replayed write makes one new entry just after each recorded one."""
    order = sorted(range(len(t)), key=lambda i: t[i])
    names = [_text(op[i]) for i in order]
    keys = [bytes(key[i]) for i in order]
    if not keys:
        return
    entries = [tuple((index or {}).get(i, ())) for i in order]
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
            made = ops.writes([(doc, None)])
        elif name in writes:
            made = (ops.transform(doc) if name == "increment" else
                    ops.writes([(doc, None)], kind="delete") if name == "delete" else
                    ops.read_write(doc) if name == "transaction" else ops.writes([(doc, None)]))
        else:
            yield when, ops.reads([doc])
            continue
        if entries[i] and ops.indexes:
            fresh += 1
            made = StoreOp(made.accesses + _recorded_entries(entries[i], fresh), made.units, made.kind)
        yield when, made


def _recorded_entries(entries: Sequence[str], fresh: int) -> tuple[Access, ...]:
    """New index entries just after the recorded ones (same place, same order: an index append point stays one)."""
    out = []
    for entry in entries:
        name, _, rest = entry.partition(INDEX_FIELD_SEP)
        out.append(Access(f"index:{name}", rest.encode() + b"\x01" + b"%012d" % fresh, True))
    return tuple(out)
