"""Hotspot metrics over sampled key accesses (measured, not modelled).

All metrics work on rank positions (``_load.key_positions``) cut into ``buckets``
contiguous key ranges (1,000 like Key Visualizer, fewer if fewer distinct keys were
seen). A sequential stream touches every key once, so over a whole run it looks
uniform; its hotspot is only visible *in time*. Hence the share metrics are computed
per time bin and averaged weighted by ops, and the moving-hotspot metrics look at
the order in which new keys arrive. See docs/keyspace-model.md for definitions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from keyramp.keyspace._load import INSERT_OPS, KeyPositions, key_positions
from keyramp.keyspace._tablets import BACKEND_PARAMS, TabletTimeline, params_for, simulate

__all__ = ["hotspot_metrics", "bucket_matrix", "default_time_bins", "analyze_cell", "summarize_cell"]

# Per time bin the metric needs enough samples to tell a 1 % hotspot from noise, and
# enough bins that one bin of a sequential stream covers < 1 % of the key range.
_SAMPLES_PER_BIN = 50
_MAX_TIME_BINS = 100


def default_time_bins(n: int) -> int:
    return int(min(_MAX_TIME_BINS, max(1, n // _SAMPLES_PER_BIN)))


def bucket_matrix(
    pos: np.ndarray, t: np.ndarray, *, buckets: int, time_bins: int, t_range: tuple[float, float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Counts ``[time_bin, bucket]`` and the time-bin edges (same unit as ``t``)."""
    t0, t1 = t_range if t_range is not None else ((float(t.min()), float(t.max())) if len(t) else (0.0, 0.0))
    span = t1 - t0
    if span <= 0:
        span = 1.0
    edges = t0 + span * np.arange(time_bins + 1) / time_bins
    b = np.minimum((pos * buckets).astype(np.int64), buckets - 1)
    tb = np.clip(((t - t0) / span * time_bins).astype(np.int64), 0, time_bins - 1)
    counts = np.bincount(tb * buckets + b, minlength=time_bins * buckets).reshape(time_bins, buckets)
    return counts, edges


def _gini(counts: np.ndarray) -> float:
    total = counts.sum()
    k = len(counts)
    if total == 0 or k < 2:
        return 0.0
    cum = np.cumsum(np.sort(counts)) / total
    return float((k + 1 - 2 * cum.sum()) / k)


def _entropy_norm(counts: np.ndarray) -> float:
    total = counts.sum()
    if total == 0 or len(counts) < 2:
        return 1.0
    p = counts[counts > 0] / total
    return float(-(p * np.log(p)).sum() / math.log(len(counts)))


def hotspot_metrics(
    pos: np.ndarray,
    t: np.ndarray,
    *,
    inserts: np.ndarray | None = None,
    buckets: int = 1000,
    distinct: int | None = None,
    time_bins: int | None = None,
) -> dict[str, float | int | bool]:
    """Hotspot metrics for one cell. ``pos`` in ``[0, 1)``, ``t`` sorted ascending.

    ``inserts`` (bool mask) marks accesses that create keys; the moving-hotspot metrics
    use them when there are at least two, else every access.
    """
    n = len(pos)
    if n == 0:
        return {"samples": 0}
    nb = max(1, min(buckets, distinct if distinct else buckets))
    nt = time_bins or default_time_bins(n)
    counts, _ = bucket_matrix(pos, t, buckets=nb, time_bins=nt)
    width = max(1, math.ceil(nb / 100))  # 1 % of the key range, in buckets
    cs = np.concatenate([np.zeros((nt, 1), dtype=np.int64), np.cumsum(counts, axis=1)], axis=1)
    sliding = cs[:, width:] - cs[:, :-width]
    overall = counts.sum(axis=0)

    seq = pos[inserts] if inserts is not None and int(inserts.sum()) >= 2 else pos
    if len(seq) >= 2:
        new_max = seq[1:] > np.maximum.accumulate(seq)[:-1]
        new_min = seq[1:] < np.minimum.accumulate(seq)[:-1]
        append, prepend = float(new_max.mean()), float(new_min.mean())
        corr = float(np.corrcoef(np.arange(len(seq), dtype=np.float64), seq)[0, 1]) if seq.std() > 0 else 0.0
    else:
        append = prepend = corr = 0.0
    return {
        "samples": int(n),
        "distinct_keys": int(distinct) if distinct is not None else None,
        "buckets": int(nb),
        "time_bins": int(nt),
        "hottest_bucket_share": float(counts.max(axis=1).sum() / n),
        "hottest_1pct_share": float(sliding.max(axis=1).sum() / n),
        "hottest_bucket_share_overall": float(overall.max() / n),
        "gini": _gini(overall),
        "entropy_norm": _entropy_norm(overall),
        "append_fraction": append,
        "prepend_fraction": prepend,
        "position_time_corr": corr,
        "moving_hotspot": bool(max(append, prepend) >= 0.5 or abs(corr) >= 0.9),
    }


def analyze_cell(
    keys: Sequence[Any] | np.ndarray,
    times: Sequence[float] | np.ndarray,
    ops: Sequence[str] | np.ndarray | None = None,
    *,
    backend: str,
    time_scale: float = 1.0,
    rate_fn: Callable[[float], float] | None = None,
    sample_rate: float = 1.0,
    buckets: int = 1000,
) -> tuple[KeyPositions, np.ndarray, dict[str, Any], TabletTimeline | None]:
    """Positions, sorted times, measured metrics and the tablet model for one cell."""
    t = np.asarray(times, dtype=np.float64)
    key_arr = keys if isinstance(keys, np.ndarray) else np.asarray(keys, dtype=object)
    op_arr = None if ops is None else np.asarray(ops)
    if len(t) > 1 and np.any(np.diff(t) < 0):  # keys.csv is time-ordered already; sort only if not
        order = np.argsort(t, kind="stable")
        t, key_arr = t[order], key_arr[order]
        op_arr = None if op_arr is None else op_arr[order]
    kp = key_positions(key_arr if key_arr.dtype.kind == "U" else list(key_arr))
    inserts = None
    if op_arr is not None and len(t):
        inserts = np.zeros(len(t), dtype=bool)
        for name in INSERT_OPS:
            inserts |= op_arr == name
    metrics = hotspot_metrics(kp.pos, t, inserts=inserts, buckets=buckets, distinct=kp.distinct)
    timeline = None
    if backend in BACKEND_PARAMS and len(t):
        timeline = simulate(
            kp.pos,
            t,
            rate_fn=rate_fn,
            time_scale=time_scale,
            params=params_for(backend),
            sample_rate=sample_rate,
            duration_s=float(t[-1]) * time_scale,
        )
    return kp, t, metrics, timeline


def summarize_cell(
    keys: Sequence[Any] | np.ndarray,
    times: Sequence[float] | np.ndarray,
    ops: Sequence[str] | np.ndarray | None = None,
    *,
    backend: str,
    time_scale: float = 1.0,
    rate_fn: Callable[[float], float] | None = None,
    sample_rate: float = 1.0,
) -> dict[str, Any]:
    """The ``keyspace`` dict for summary.json: measured metrics + a modelled tablet summary.

    ``keys`` are sort texts (or raw keys), ``times`` wall seconds since the measured phase
    started, ``ops`` op names; ``rate_fn`` maps schedule seconds to the scheduled ops/s
    (None: use the sampled rate / ``sample_rate``, the fraction of accesses sampled).
    """
    _, _, metrics, timeline = analyze_cell(
        keys, times, ops, backend=backend, time_scale=time_scale, rate_fn=rate_fn, sample_rate=sample_rate
    )
    out: dict[str, Any] = dict(metrics)
    out["model"] = timeline.summary() if timeline is not None else None
    return out
