"""Reading a run's sampled keys and placing keys in the key range.

A key's position is the share of the key range below it, in ``[0, 1)``. The range is a
*reference*: keys that exist during the cell, each standing for some number of real keys
(a sample of the preloaded records and the sampled inserts when the profile is known, see
``_reference``; else the sampled keys themselves). Positions keep the store's byte order
but spread keys evenly, like Key Visualizer's key buckets (each holds a similar number of
keys). Plain byte arithmetic would not: zero-padded integer ids share most leading bytes
and decimal digits use 10 of 256 byte values, so they would bunch into a few thin bands.

Everything is vectorised: keys are UTF-8 ``S`` arrays, compared through 64-bit lead
words (``_encode``) and placed with ``np.searchsorted`` against the sorted reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from keyramp.core import KIND_OF_OP, WRITE_KINDS
from keyramp.keyspace._encode import key_bytes, lead_words, varying_columns, widen

__all__ = [
    "CellKeys",
    "KeyPositions",
    "Reference",
    "arrow_bytes",
    "cell_keys",
    "key_positions",
    "load_keys",
    "make_reference",
    "target_rate_fn",
]

# Ops that create new keys: the moving-hotspot test looks at these first.
INSERT_OPS = frozenset({"insert", "batch_write"})
#: Most reference keys taken from the samples themselves: 1/16,384 of the range is far
#: finer than 1,000 buckets, and the search stays in cache.
MAX_REFERENCE = 1 << 14
_BELOW_ONE = float(np.nextafter(1.0, 0.0))


def insert_mask(ops: np.ndarray | None) -> np.ndarray | None:
    """Which accesses created keys (``ops`` as ``str`` or ``bytes`` names)."""
    if ops is None:
        return None
    ops = np.asarray(ops)
    names = [n.encode() for n in INSERT_OPS] if ops.dtype.kind == "S" else list(INSERT_OPS)
    mask = np.zeros(len(ops), dtype=bool)
    for name in names:
        mask |= ops == name
    return mask


_KIND_OF_OP = {op.encode(): kind.encode() for op, kind in KIND_OF_OP.items()}
_WRITES = np.array(sorted(k.encode() for k in WRITE_KINDS), dtype="S9")


def kinds_of(ops: np.ndarray) -> np.ndarray:
    """Each access's kind from its op's name (runs before the ``kind`` column; an unknown op: a read)."""
    ops = np.asarray(ops)
    names = np.unique(ops)
    table = {n: _KIND_OF_OP.get(n if isinstance(n, bytes) else str(n).encode(), b"read") for n in names.tolist()}
    out = np.empty(len(ops), dtype="S9")
    for name, kind in table.items():
        out[ops == name] = kind
    return out


def resolve_upserts(kind: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``upsert`` (a set that creates its key or overwrites it) as ``insert`` where the key shows up first in the
    recording, else ``write``."""
    up = kind == b"upsert"
    if not up.any():
        return kind
    _, first = np.unique(key, return_index=True)
    new = np.zeros(len(key), dtype=bool)
    new[first] = True
    return np.where(up, np.where(new, b"insert", b"write"), kind).astype("S9")


@dataclass(frozen=True, kw_only=True)
class CellKeys:
    """One cell's sampled accesses, sorted by time.

    ``kind``: how each access touched its key (``keyramp.core._types.ACCESS_KINDS``; from the op's name in runs
    that did not record it); ``index``: the index entries an access wrote (a Python workload's captured
    writes), by row; ``access``: its number within its operation (0: the operation's first).
    """

    cell: str
    t: np.ndarray  # float64 wall seconds since the measured phase started
    op: np.ndarray  # op names (bytes)
    key: np.ndarray  # sort texts as UTF-8 bytes (``S``)
    kind: np.ndarray | None = None
    index: dict[int, tuple[str, ...]] | None = None
    access: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind is None:
            object.__setattr__(self, "kind", kinds_of(self.op))

    def __len__(self) -> int:
        return len(self.t)

    @property
    def kinds(self) -> np.ndarray:
        assert self.kind is not None
        return self.kind

    @property
    def inserts(self) -> np.ndarray:
        """Which accesses created their key."""
        return self.kinds == b"insert"

    @property
    def writes(self) -> np.ndarray:
        """Which accesses wrote their key (what a per-key write limit counts)."""
        return np.isin(self.kinds, _WRITES)

    @property
    def reads(self) -> np.ndarray:
        return self.kinds == b"read"

    @property
    def operations(self) -> int:
        """Sampled operations (an operation may have sampled several accesses)."""
        return len(self) if self.access is None else int((self.access == 0).sum())

    @property
    def analysis_ops(self) -> np.ndarray:
        """Op names as the key-space analysis reads them: every access that created its key as ``insert``."""
        return np.where(self.inserts, b"insert", self.op)

    def take(self, rows: np.ndarray) -> CellKeys:
        """The accesses at ``rows`` (ascending), the rest of their columns kept."""
        index = None if self.index is None else {
            j: self.index[int(i)] for j, i in enumerate(rows.tolist()) if int(i) in self.index}
        return CellKeys(cell=self.cell, t=self.t[rows], op=self.op[rows], key=self.key[rows], kind=self.kinds[rows],
                        index=index, access=None if self.access is None else self.access[rows])


@dataclass(frozen=True, kw_only=True)
class Reference:
    """The keys that make up a cell's key range: sorted, distinct, weighted."""

    keys: np.ndarray  # S, sorted by bytes, distinct
    weight: np.ndarray  # float64: real keys each reference key stands for
    since: np.ndarray  # float64: wall s the key exists from (-inf: before the cell)

    def __len__(self) -> int:
        return len(self.keys)


def make_reference(
    keys: Sequence[Any] | np.ndarray, *, weight: np.ndarray | float = 1.0, since: np.ndarray | float = -math.inf
) -> Reference:
    """Sort and de-duplicate ``keys``; a repeated key sums its weights and exists from its earliest time."""
    kb = key_bytes(keys)
    w = np.broadcast_to(np.asarray(weight, dtype=np.float64), kb.shape)
    s = np.broadcast_to(np.asarray(since, dtype=np.float64), kb.shape)
    uniq, inverse = np.unique(kb, return_inverse=True)
    first = np.full(len(uniq), math.inf)
    np.minimum.at(first, inverse, s)
    return Reference(keys=uniq, weight=np.bincount(inverse, weights=w, minlength=len(uniq)), since=first)


def _sample_reference(kb: np.ndarray, inserts: np.ndarray | None, times: np.ndarray | None) -> Reference:
    """Without a profile the range is what was sampled: up to ``MAX_REFERENCE`` distinct keys, one each.

    Drawn at random (seeded), not strided, so a key repeated at a fixed stride cannot
    alias into the whole reference. A key inserted in the cell exists from its insert;
    other keys from before the cell.
    """
    n = len(kb)
    idx: slice | np.ndarray = slice(None)
    if n > 4 * MAX_REFERENCE:
        idx = np.sort(np.random.default_rng(0).choice(n, 4 * MAX_REFERENCE, replace=False))
    since: np.ndarray | float = -math.inf
    if inserts is not None and times is not None:
        since = np.where(inserts[idx], times[idx], -math.inf)
    ref = make_reference(kb[idx], since=since)
    if len(ref) > MAX_REFERENCE:  # thin evenly in key order
        keep = np.unique(np.linspace(0, len(ref) - 1, MAX_REFERENCE).round().astype(np.int64))
        ref = Reference(keys=ref.keys[keep], weight=ref.weight[keep], since=ref.since[keep])
    return Reference(keys=ref.keys, weight=np.ones(len(ref)), since=ref.since)


@dataclass(frozen=True, kw_only=True)
class KeyPositions:
    """Where each access landed in the cell's key range, and what is needed to label it."""

    pos: np.ndarray  # float64 in [0, 1): share of the (end-of-cell) range below the key
    distinct: int  # reference keys (resolution of ``pos``)
    reference: Reference
    slot: np.ndarray  # int64: reference keys below each access
    lead: np.ndarray  # uint64 lead words: order of the accesses' keys (ties: equal or unknown)

    @property
    def labels(self) -> np.ndarray:
        """Reference keys as text, in key order."""
        return np.array([k.decode("utf-8", "replace") for k in self.reference.keys.tolist()], dtype=str)

    def labels_at(self, qs: Sequence[float] | np.ndarray) -> list[str]:
        """The reference keys whose share of the range contains each position in ``qs`` (``[0, 1]``)."""
        qs = np.clip(np.asarray(qs, dtype=np.float64), 0.0, 1.0)
        if self.distinct == 0:
            return [""] * len(qs)
        cum = np.cumsum(self.reference.weight)  # once for all positions: a heatmap asks ~1,000
        i = np.minimum(np.searchsorted(cum, qs * cum[-1], side="right"), self.distinct - 1)
        return [k.decode("utf-8", "replace") for k in self.reference.keys[i].tolist()]

    def label_at(self, q: float) -> str:
        """``labels_at`` for one position."""
        return self.labels_at([q])[0]

    def at_bin_start(self, tb: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Positions against the range that existed when each access's time bin began.

        ``tb``: time bin of each access; ``starts``: each bin's start time. An insert past
        the end of the range then sits at ≈ 1 however much the cell appended before it; a
        bin with nothing existing at its start keeps the end-of-cell positions.
        """
        ref = self.reference
        new = np.isfinite(ref.since)
        if not new.any():
            return self.pos
        zero = np.zeros(1)
        cum_old = np.concatenate([zero, np.cumsum(np.where(new, 0.0, ref.weight))])
        new_idx = np.flatnonzero(new)
        # First bin at whose start each new key exists; the cumulative weight of existing new
        # keys below index k at bin b is then a 2-D prefix sum over (bin, new-key order).
        first_bin = np.searchsorted(starts, ref.since[new_idx], side="right")
        nt = len(starts)
        grid = np.zeros((nt + 1, len(new_idx) + 1))
        grid[first_bin, np.arange(1, len(new_idx) + 1)] = ref.weight[new_idx]  # one column per key
        grid = np.cumsum(np.cumsum(grid, axis=0), axis=1)
        k = np.concatenate([[0], np.cumsum(new)])[self.slot]  # new keys below each slot (a lookup)
        k += tb * grid.shape[1]  # flat index into the grid, in place
        below = np.take(grid.reshape(-1), k)
        below += np.take(cum_old, self.slot)
        total = cum_old[-1] + grid[:nt, -1]
        tot = np.take(total, tb)
        if (total > 0).all():
            below /= tot
            return np.minimum(below, _BELOW_ONE, out=below)
        return np.where(tot > 0, np.minimum(below / np.where(tot > 0, tot, 1.0), _BELOW_ONE), self.pos)


def key_positions(
    keys: Sequence[Any] | np.ndarray,
    *,
    reference: Reference | None = None,
    inserts: np.ndarray | None = None,
    times: np.ndarray | None = None,
) -> KeyPositions:
    """Place keys (sort texts, bytes, or raw keys) in the range ``reference`` spans, vectorised.

    Without ``reference`` the range is an even subsample of ``keys`` (all of them up to
    ``MAX_REFERENCE``: positions are then exact ranks among the distinct keys).
    ``inserts``/``times`` date the inserted keys for ``KeyPositions.at_bin_start``.
    """
    kb = key_bytes(keys)
    n = len(kb)
    if reference is None:
        reference = _sample_reference(kb, inserts, times)
    refk = reference.keys
    if len(refk) == 0:
        return KeyPositions(pos=np.zeros(n), distinct=0, reference=reference, slot=np.zeros(n, dtype=np.int64),
                            lead=np.zeros(n, dtype=np.uint64))
    width = max(kb.itemsize, refk.itemsize)
    kb, refk = widen(kb, width), widen(refk, width)
    cols = varying_columns(kb, refk)
    lead = lead_words(kb, cols)
    ref_lead = lead_words(refk, cols)
    slot = np.searchsorted(ref_lead, lead, side="left")
    if len(cols) > 8:  # equal lead words may still differ later: compare the bytes there
        at = np.minimum(slot, len(refk) - 1)
        tie = np.flatnonzero((slot < len(refk)) & (ref_lead[at] == lead))
        if len(tie):
            slot[tie] = np.searchsorted(refk, kb[tie], side="left")
    cum = np.concatenate([np.zeros(1), np.cumsum(reference.weight)])
    pos = np.minimum(cum[slot] / cum[-1], _BELOW_ONE)
    return KeyPositions(pos=pos, distinct=len(refk), reference=reference, slot=slot.astype(np.int64), lead=lead)


_ROWS = 1 << 20  # rows per gather chunk


def _gather(padded: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Byte ranges ``padded[starts[i]:ends[i]]`` as one ``S`` array.

    One row gather from a sliding-window view (no index matrix), then the bytes past each
    field's end are zeroed. ``padded`` must extend at least the widest field past the data.
    """
    lens = ends - starts
    width = max(1, int(lens.max()) if len(lens) else 1)
    windows = np.lib.stride_tricks.sliding_window_view(padded, width)
    out = np.empty((len(starts), width), dtype=np.uint8)
    for a in range(0, len(starts), _ROWS):
        part = windows[starts[a : a + _ROWS]]
        part[np.arange(width) >= lens[a : a + _ROWS, None]] = 0
        out[a : a + _ROWS] = part
    return out.view(f"S{width}").reshape(len(starts))


def arrow_bytes(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow string/binary column as a contiguous ``S`` array, without a Python object per value.

    Written chunk by chunk into one array of the widest value's width: a chunk whose values
    all have that width (UUIDs, zero-padded ids: the common case) is one copy of its data
    buffer; mixed widths are gathered from it NUL-padded.
    """
    chunks = [c for c in (column.chunks if isinstance(column, pa.ChunkedArray) else [column]) if len(c)]
    n = sum(len(c) for c in chunks)
    parts = []
    for chunk in chunks:
        wide = pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type)
        _, off_buf, data_buf = chunk.buffers()
        offsets = np.frombuffer(off_buf, dtype=np.int64 if wide else np.int32)[
            chunk.offset : chunk.offset + len(chunk) + 1
        ]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        lens = np.diff(offsets)
        parts.append((offsets.astype(np.int64), data, int(lens.min()), int(lens.max())))
    width = max((p[3] for p in parts), default=0)
    if width == 0:
        return np.zeros(n, dtype="S1")
    out = np.empty(n, dtype=f"S{width}")
    flat = out.view(np.uint8).reshape(n, width)
    at = 0
    for offsets, data, shortest, longest in parts:
        m = len(offsets) - 1
        rows = flat[at : at + m]
        if shortest == longest == width:
            rows[:] = data[offsets[0] : offsets[-1]].reshape(m, width)
        else:
            padded = np.concatenate([data[: offsets[-1]], np.zeros(longest + 1, dtype=np.uint8)])
            got = _gather(padded, offsets[:-1], offsets[1:])
            cols = got.itemsize
            rows[:, :cols] = got.view(np.uint8).reshape(m, cols)
            rows[:, cols:] = 0
        at += m
    return out


def _names(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Dictionary codes (int32) and names of a low-cardinality string column (dictionary-read or not)."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    column = column.unify_dictionaries()
    chunks = [c for c in column.chunks if len(c)]
    if not chunks:
        return np.zeros(0, dtype=np.int32), []
    codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False).astype(np.int32, copy=False) for c in chunks])
    return codes, chunks[0].dictionary.to_pylist()


def cell_keys(table: pa.Table) -> dict[str, CellKeys]:
    """A ``read_keys`` table (cell, t_us, op, key) as per-cell arrays sorted by time."""
    if table.num_rows == 0:
        return {}
    cell_codes, cells = _names(table.column("cell"))
    op_codes, ops = _names(table.column("op"))
    op_names = np.array([o.encode("utf-8") for o in ops], dtype=bytes)
    t_all = table.column("t_us").to_numpy() / 1e6
    key_all = arrow_bytes(table.column("key"))
    kind_all, index_all, access_all = _recorded_columns(table)
    out: dict[str, CellKeys] = {}
    for code, name in sorted(enumerate(cells), key=lambda c: c[1]):
        sel: np.ndarray = np.arange(len(t_all)) if len(cells) == 1 else np.flatnonzero(cell_codes == code)
        t = t_all[sel]
        order = sel[np.argsort(t, kind="stable")] if np.any(np.diff(t) < 0) else sel
        key = key_all[order]
        kind = None if kind_all is None else resolve_upserts(kind_all[order], key)
        index = None if index_all is None else {j: index_all[int(i)] for j, i in enumerate(order.tolist())
                                                if int(i) in index_all}
        out[name] = CellKeys(cell=name, t=t_all[order], op=op_names[op_codes[order]], key=key, kind=kind,
                             index=index or None, access=None if access_all is None else access_all[order])
    return out


def _recorded_columns(table: pa.Table) -> tuple[np.ndarray | None, dict[int, tuple[str, ...]] | None,
                                                np.ndarray | None]:
    """The ``kind``, ``index`` and ``access`` columns (None: a run that did not record them)."""
    names = table.column_names
    kind = access = None
    index: dict[int, tuple[str, ...]] | None = None
    if "kind" in names and table.column("kind").null_count < table.num_rows:
        col = pc.fill_null(table.column("kind").cast(pa.string()), "")
        kind = arrow_bytes(col).astype("S9")
        if (kind == b"").any():  # rows of an op that did not say: from its name
            kind = np.where(kind == b"", kinds_of(arrow_bytes(table.column("op").cast(pa.string()))), kind)
    if "index" in names and table.column("index").null_count < table.num_rows:
        col = table.column("index")
        rows = np.flatnonzero(pc.is_valid(col).to_numpy(zero_copy_only=False))
        index = {int(r): tuple(v) for r, v in zip(rows.tolist(), col.take(pa.array(rows)).to_pylist(), strict=True)
                 if v}
    if "access" in names and table.column("access").null_count < table.num_rows:
        access = pc.fill_null(table.column("access"), 0).to_numpy(zero_copy_only=False).astype(np.int16)
    return kind, index, access


def load_keys(run: Path | Any, *, cell: str | None = None) -> dict[str, CellKeys]:
    """A run's sampled keys (Parquet, or ``keys.csv`` of a run written before it) per cell, sorted by time.

    ``run``: a run directory or a catalog ``Run``. A missing or malformed legacy file is a
    ``UsageError`` naming it.
    """
    from keyramp.results import read_keys  # deferred: start-up cost (pyarrow)

    # cell and op straight from Parquet's dictionary pages: no string per row is built
    return cell_keys(read_keys(run, cell=cell, dictionary=("cell", "op", "kind")))


def target_rate_fn(timeline: Any, *, time_scale: float) -> Callable[[float], float] | None:
    """A schedule-time rate function from a summary.json cell's ``target_ops_per_s`` timeline, or None.

    The timeline holds ``{"t": wall second, "target": ops/s, ...}`` entries; malformed ones
    (a hand-edited summary) are skipped, and none at all (a closed-model cell) gives None.
    """
    targets: dict[int, float] = {}
    for point in timeline if isinstance(timeline, list) else ():
        try:
            targets[int(point["t"])] = float(point["target"])
        except (KeyError, TypeError, ValueError):
            continue
    if not targets:
        return None
    seconds = np.array(sorted(targets), dtype=np.float64)
    rates = np.array([targets[int(s)] for s in seconds], dtype=np.float64)

    def rate(t_sched: float) -> float:
        i = int(np.searchsorted(seconds, t_sched / time_scale, side="right")) - 1
        return float(rates[max(i, 0)])

    return rate
