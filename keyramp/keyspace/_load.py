"""Reading a run's sampled keys and mapping keys to positions in the key space.

Positions are *ranks*: a key's place among the distinct keys observed in the cell,
scaled to ``[0, 1)``. Rank keeps the store's byte order but spreads the observed keys
evenly, like Key Visualizer's key buckets (each holds a similar number of keys).
Plain byte arithmetic would not: zero-padded integer ids share most leading bytes and
decimal digits use 10 of 256 byte values, so they would bunch into a few thin bands.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from keyramp._errors import UsageError
from keyramp._types import key_sort_text

__all__ = [
    "CellKeys",
    "KeyPositions",
    "RunData",
    "key_positions",
    "load_keys",
    "load_run",
    "target_rate_fn",
]

# Ops that create new keys: the moving-hotspot test looks at these first.
INSERT_OPS = frozenset({"insert", "batch_write"})


@dataclass(frozen=True, kw_only=True)
class CellKeys:
    """One cell's sampled accesses, sorted by time."""

    cell: str
    t: np.ndarray  # float64 wall seconds since the measured phase started
    op: np.ndarray  # str op names
    key: np.ndarray  # str sort texts

    def __len__(self) -> int:
        return len(self.t)


@dataclass(frozen=True, kw_only=True)
class KeyPositions:
    """Rank positions of keys, plus what is needed to label a position with a key."""

    pos: np.ndarray  # float64 in [0, 1), one per access
    distinct: int  # distinct keys observed
    labels: np.ndarray  # str: a representative key per distinct rank, in key order

    def label_at(self, q: float) -> str:
        """The observed key nearest above position ``q`` in ``[0, 1]``."""
        if self.distinct == 0:
            return ""
        return str(self.labels[min(self.distinct - 1, int(q * self.distinct))])


def _as_text_array(keys: Sequence[Any] | np.ndarray) -> np.ndarray:
    if isinstance(keys, np.ndarray) and keys.dtype.kind == "U":
        return np.ascontiguousarray(keys)
    if all(isinstance(k, str) for k in keys):
        return np.asarray(keys, dtype=str)
    return np.asarray([k if isinstance(k, str) else key_sort_text(k) for k in keys], dtype=str)


def _pack(cp: np.ndarray, offset: int, chars: int, bits: int) -> np.ndarray:
    window = cp[:, offset : offset + chars]
    if bits == 8:  # one byte a character: a big-endian byte view, no shifting
        buf = np.zeros((len(cp), 8), dtype=np.uint8)
        buf[:, : window.shape[1]] = window
        return buf.view(">u8").reshape(-1).astype(np.uint64)
    code = np.zeros(len(cp), dtype=np.uint64)
    for j in range(window.shape[1]):
        code |= window[:, j].astype(np.uint64) << np.uint64(bits * (chars - 1 - j))
    return code


def _rank(word: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense ranks of ``word`` and the first index holding each rank."""
    order = np.argsort(word, kind="stable")
    w_s = word[order]
    change = np.empty(len(word), dtype=bool)
    change[0] = True
    change[1:] = w_s[1:] != w_s[:-1]
    ranks = np.empty(len(word), dtype=np.int64)
    ranks[order] = np.cumsum(change) - 1
    return ranks, order[change]


def _rest_equal(cp: np.ndarray, first: np.ndarray, group: np.ndarray, idx: np.ndarray, offset: int) -> bool:
    """Whether keys ``idx`` equal their group's representative from ``offset`` on (chunked)."""
    chunk = 1 << 20
    for a in range(0, len(idx), chunk):
        part = idx[a : a + chunk]
        if not np.array_equal(cp[part, offset:], cp[first[group[part]], offset:]):
            return False
    return True


def _refine(
    group: np.ndarray, first: np.ndarray, idx: np.ndarray, word: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Split the tied groups (members ``idx``, next words ``word``) into dense ranks."""
    gi = group[idx]
    order = np.lexsort((word, gi))
    g_s, w_s, members = gi[order], word[order], idx[order]
    start = np.ones(len(g_s), dtype=bool)
    start[1:] = g_s[1:] != g_s[:-1]
    new = start.copy()
    new[1:] |= w_s[1:] != w_s[:-1]
    run = np.cumsum(new) - 1
    starts = np.flatnonzero(start)
    group_first_run = run[starts]
    sub = run - np.repeat(group_first_run, np.diff(np.append(starts, len(g_s))))
    per_group = np.ones(len(first), dtype=np.int64)
    per_group[g_s[starts]] = np.diff(np.append(group_first_run, run[-1] + 1))
    offsets = np.cumsum(per_group) - per_group
    ranks = offsets[group]
    ranks[members] += sub
    new_first = np.empty(int(per_group.sum()), dtype=np.int64)
    new_first[offsets] = first
    new_first[ranks[members[new]]] = members[new]
    return ranks, new_first


def key_positions(keys: Sequence[Any] | np.ndarray) -> KeyPositions:
    """Map keys (sort texts, or raw keys) to rank positions in ``[0, 1)``, vectorised.

    Keys are packed into 64-bit words, 8 characters of 8 bits (code points < 256) or 3
    of 21 bits, starting after the prefix all keys share; code-point order equals UTF-8 byte order,
    so word order is the store's order. Further words are compared only while some
    keys still tie, so common key sets cost one integer sort.
    """
    text = _as_text_array(keys)
    n = len(text)
    if n == 0:
        return KeyPositions(pos=np.zeros(0), distinct=0, labels=np.zeros(0, dtype=str))
    width = text.itemsize // 4
    if width == 0:  # every key is empty
        return KeyPositions(pos=np.zeros(n), distinct=1, labels=text[:1])
    cp = text.view(np.uint32).reshape(n, width)
    offset = 0  # skip the prefix every key shares (column by column: cheap)
    while offset < width and not (cp[:, offset] != cp[0, offset]).any():
        offset += 1
    chars, bits = (8, 8) if offset >= width or int(cp[:, offset:].max()) < 256 else (3, 21)
    group, first = _rank(_pack(cp, offset, chars, bits))
    offset += chars
    while offset < width:
        # Only keys sharing a word with another key need the next word.
        idx = np.flatnonzero(np.bincount(group)[group] > 1)
        if len(idx) == 0 or _rest_equal(cp, first, group, idx, offset):
            break
        group, first = _refine(group, first, idx, _pack(cp[idx], offset, chars, bits))
        offset += chars
    distinct = len(first)
    return KeyPositions(pos=group.astype(np.float64) / distinct, distinct=distinct, labels=text[first])


def load_keys(path: Path, *, cell: str | None = None, start: int = 0) -> dict[str, CellKeys]:
    """Read ``keys.csv`` (header ``cell,t,op,key``) into per-cell arrays sorted by time.

    ``start``: a file offset (``RunDirectory.keys_offset()``) to read rows from, so the
    runner reads only the cell it just finished instead of every earlier cell again.
    """
    if not path.is_file():
        raise UsageError(f"no sampled keys: {path} does not exist")
    cells: dict[str, tuple[list[float], list[str], list[str]]] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header != ["cell", "t", "op", "key"]:
            raise UsageError(f"{path}: expected header cell,t,op,key, got {header}")
        if start:
            fh.seek(start)
        try:
            for row in reader:
                if cell is not None and row[0] != cell:
                    continue
                entry = cells.get(row[0])
                if entry is None:
                    entry = cells[row[0]] = ([], [], [])
                entry[0].append(float(row[1]))
                entry[1].append(row[2])
                entry[2].append(row[3])
        except (ValueError, IndexError) as exc:
            raise UsageError(f"{path}:{reader.line_num}: malformed row ({exc})") from None
    out: dict[str, CellKeys] = {}
    for name, (t, op, key) in cells.items():
        t_arr = np.asarray(t, dtype=np.float64)
        order = np.argsort(t_arr, kind="stable")
        out[name] = CellKeys(
            cell=name,
            t=t_arr[order],
            op=np.asarray(op, dtype=str)[order],
            key=np.asarray(key, dtype=str)[order],
        )
    return out


@dataclass(frozen=True, kw_only=True)
class RunData:
    run_dir: Path
    manifest: dict[str, Any]
    cells_meta: dict[str, dict[str, Any]]  # cell id -> manifest cell entry
    keys: dict[str, CellKeys]
    targets: dict[str, dict[int, float]]  # cell id -> wall second -> target ops/s


def _read_targets(path: Path) -> dict[str, dict[int, float]]:
    targets: dict[str, dict[int, float]] = {}
    if not path.is_file():
        return targets
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row.get("op") != "*" or not row.get("target_ops_per_s"):
                continue
            try:
                targets.setdefault(row["cell"], {})[int(row["second"])] = float(row["target_ops_per_s"])
            except (KeyError, ValueError):
                continue
    return targets


def load_run(run_dir: Path, *, cell: str | None = None) -> RunData:
    """Read what the key-space analysis needs from a run directory."""
    if not run_dir.is_dir():
        raise UsageError(f"not a run directory: {run_dir}")
    manifest_path = run_dir / "manifest.json"
    manifest: dict[str, Any] = {}
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{manifest_path}: invalid JSON ({exc.msg})") from None
    cells_meta = {c["id"]: c for c in manifest.get("cells", []) if isinstance(c, dict) and "id" in c}
    if cell is not None and cells_meta and cell not in cells_meta:
        raise UsageError(f"unknown cell {cell!r}; cells: {', '.join(sorted(cells_meta))}")
    keys = load_keys(run_dir / "keys.csv", cell=cell)
    if cell is not None and cell not in keys:
        raise UsageError(f"no sampled keys for cell {cell!r}")
    return RunData(
        run_dir=run_dir,
        manifest=manifest,
        cells_meta=cells_meta,
        keys=keys,
        targets=_read_targets(run_dir / "timeseries.csv"),
    )


def target_rate_fn(targets: dict[int, float] | None, *, time_scale: float):
    """A schedule-time rate function from timeseries.csv's per-wall-second targets, or None."""
    if not targets:
        return None
    seconds = np.array(sorted(targets), dtype=np.float64)
    rates = np.array([targets[int(s)] for s in seconds], dtype=np.float64)

    def rate(t_sched: float) -> float:
        i = int(np.searchsorted(seconds, t_sched / time_scale, side="right")) - 1
        return float(rates[max(i, 0)])

    return rate
