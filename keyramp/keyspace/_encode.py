"""Keys as fixed-width UTF-8 bytes and 64-bit lead words, for vectorised byte-order work.

numpy's ``S`` dtype compares bytes unsigned, which is UTF-8 byte order, i.e. the store's
order. Comparing ``S`` strings is slow for millions of keys, so each key also gets a
*lead word*: its first 8 bytes among the columns that vary across the keys (a column
every key shares cannot change any comparison), packed big-endian into a ``uint64``.
Word order is key order; equal words need the bytes only when more than 8 columns vary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from keyramp.core import key_sort_text

__all__ = ["key_bytes", "lead_words", "varying_columns", "widen"]

_CHUNK = 1 << 20  # rows per pass: bounds temporaries for 10 M keys


def key_bytes(keys: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Keys (sort texts ``str``/``bytes``, or raw keys) as a contiguous UTF-8 ``S`` array.

    Trailing NUL bytes are dropped (numpy strings); sort texts use NUL only inside paths.
    """
    if isinstance(keys, np.ndarray) and keys.dtype.kind == "S":
        return np.ascontiguousarray(keys)
    if isinstance(keys, np.ndarray) and keys.dtype.kind == "U":
        n = len(keys)
        width = keys.itemsize // 4
        if n == 0 or width == 0:
            return np.zeros(n, dtype="S1")
        cp = np.ascontiguousarray(keys).view(np.uint32).reshape(n, width)
        if int(cp.max()) < 128:  # ASCII: one byte a code point, no Python per key
            return np.ascontiguousarray(cp.astype(np.uint8)).view(f"S{width}").reshape(n)
        return np.array([k.encode("utf-8") for k in keys.tolist()], dtype=bytes)
    if len(keys) and isinstance(keys[0], str):  # sort texts: numpy builds the array, ASCII is one pass
        arr = np.array(keys)
        if arr.dtype.kind == "U":
            return key_bytes(arr)
    out = [k.encode("utf-8") if isinstance(k, str) else k if isinstance(k, bytes) else key_sort_text(k).encode("utf-8")
           for k in keys]
    return np.array(out, dtype=bytes) if out else np.zeros(0, dtype="S1")


def widen(kb: np.ndarray, width: int) -> np.ndarray:
    """``kb`` as ``S{width}`` (NUL padded): byte columns line up across arrays."""
    return kb if kb.itemsize == width else kb.astype(f"S{width}")


def _column_range(kb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, width = len(kb), kb.itemsize
    mat = kb.view(np.uint8).reshape(n, width)
    lo = np.full(width, 255, dtype=np.uint8)
    hi = np.zeros(width, dtype=np.uint8)
    for a in range(0, n, _CHUNK):
        part = mat[a : a + _CHUNK]
        np.minimum(lo, part.min(axis=0), out=lo)
        np.maximum(hi, part.max(axis=0), out=hi)
    return lo, hi


def varying_columns(*arrays: np.ndarray) -> np.ndarray:
    """Byte columns (of the common width) whose value differs somewhere across ``arrays``."""
    live = [a for a in arrays if len(a)]
    if not live:
        return np.zeros(0, dtype=np.int64)
    width = live[0].itemsize
    lo = np.full(width, 255, dtype=np.uint8)
    hi = np.zeros(width, dtype=np.uint8)
    for a in live:
        if a.itemsize != width:
            raise ValueError("arrays must share one width (use widen)")
        alo, ahi = _column_range(a)
        np.minimum(lo, alo, out=lo)
        np.maximum(hi, ahi, out=hi)
    return np.flatnonzero(lo != hi)


def lead_words(kb: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Big-endian ``uint64`` of each key's bytes at ``columns[:8]`` (zero-filled past them)."""
    n = len(kb)
    cols = columns[:8]
    out = np.zeros(n, dtype=np.uint64)
    if n == 0 or len(cols) == 0:
        return out
    mat = kb.view(np.uint8).reshape(n, kb.itemsize)
    contiguous = bool(cols[-1] - cols[0] == len(cols) - 1)
    buf = np.zeros((min(n, _CHUNK), 8), dtype=np.uint8)
    for a in range(0, n, _CHUNK):
        part = mat[a : a + _CHUNK]
        m = len(part)
        buf[:m, : len(cols)] = part[:, cols[0] : cols[-1] + 1] if contiguous else part[:, cols]
        out[a : a + m] = buf[:m].view(">u8").reshape(m)
    return out
