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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from keyramp.keyspace._encode import key_bytes
from keyramp.keyspace._load import KeyPositions, Reference, insert_mask, key_positions
from keyramp.keyspace._tablets import (
    TabletTimeline,
    has_model,
    params_for,
    simulate,
)
from keyramp.results import KeyspaceFigures

__all__ = [
    "AppendRuns",
    "analyze_cell",
    "append_points",
    "append_runs",
    "bucket_matrix",
    "default_time_bins",
    "hotspot_metrics",
    "summarize_cell",
    "summary_entry",
]

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


def _order_corr(y: np.ndarray) -> float:
    """Pearson correlation of ``y`` with its index (closed-form moments of 0..n-1: no n x 2 copy)."""
    m = len(y)
    sy = float(y.std())
    if m < 2 or sy == 0:
        return 0.0
    mean_i, sd_i = (m - 1) / 2.0, math.sqrt((m * m - 1) / 12.0)
    return float(
        np.clip(
            (float(np.dot(np.arange(m, dtype=np.float64), y)) / m - mean_i * float(y.mean())) / (sd_i * sy), -1.0, 1.0
        )
    )


def _cross_validated(counts: np.ndarray, width: int) -> float:
    """Op count in each time bin's hottest window of ``width`` buckets, summed over bins.

    ``counts[time_bin, half, bucket]``: the window is chosen on one half of the samples
    and counted on the other (both ways), so sampling noise cannot pick its own maximum:
    a uniform stream scores ≈ its true ``width/buckets`` share, not the noise peak.
    """
    cs = np.concatenate([np.zeros((*counts.shape[:2], 1), dtype=np.int64), np.cumsum(counts, axis=2)], axis=2)
    sliding = cs[:, :, width:] - cs[:, :, :-width]  # [time_bin, half, window]
    pick = sliding.argmax(axis=2)  # chosen on each half
    rows = np.arange(len(sliding))
    return float(sliding[rows, 1, pick[:, 0]].sum() + sliding[rows, 0, pick[:, 1]].sum())


def hotspot_metrics(
    pos: np.ndarray,
    t: np.ndarray,
    *,
    inserts: np.ndarray | None = None,
    buckets: int = 1000,
    distinct: int | None = None,
    time_bins: int | None = None,
    positions: KeyPositions | None = None,
) -> dict[str, Any]:
    """Hotspot metrics for one cell. ``pos`` in ``[0, 1)``, ``t`` sorted ascending.

    ``inserts`` (bool mask) marks accesses that create keys; the moving-hotspot metrics
    use them when there are at least two, else every access. With ``positions`` (from
    ``key_positions``), the share and concentration metrics place each access against the
    range that existed when its time bin began, and the append order compares keys.
    """
    n = len(pos)
    if n == 0:
        return {"samples": 0}
    nb = max(1, min(buckets, distinct if distinct else buckets))
    nt = time_bins or default_time_bins(n)
    t0, t1 = float(t.min()), float(t.max())
    span = t1 - t0 if t1 > t0 else 1.0
    tb = np.minimum(((t - t0) * (nt / span)).astype(np.int64), nt - 1)  # t >= t0: no lower clip
    here = pos if positions is None else positions.at_bin_start(tb, t0 + span * np.arange(nt) / nt)
    b = np.minimum((here * nb).astype(np.int64), nb - 1)
    # A seeded random split, not even/odd: strictly alternating ops (a read of one hot key
    # after every insert) would put every hot access into one half and hide it.
    half = np.random.default_rng(0).integers(0, 2, n, dtype=np.int64)
    counts = np.bincount((tb * 2 + half) * nb + b, minlength=nt * 2 * nb).reshape(nt, 2, nb)
    width = max(1, math.ceil(nb / 100))  # 1 % of the key range, in buckets
    # Concentration over the whole cell, in buckets holding ~20 samples each if uniform
    # (fewer samples than buckets would make even a uniform stream look lumpy).
    nc = max(1, min(nb, n // 20))
    overall = np.bincount(np.minimum((here * nc).astype(np.int64), nc - 1), minlength=nc)
    overall_fine = counts.sum(axis=(0, 1))

    seq_mask = inserts if inserts is not None and int(inserts.sum()) >= 2 else None
    if seq_mask is not None and bool(seq_mask.all()):
        seq_mask = None  # every access inserts: no copies
    order_key = positions.lead if positions is not None and len(positions.lead) == n else pos
    seq = order_key[seq_mask] if seq_mask is not None else order_key
    seq_pos = pos[seq_mask] if seq_mask is not None else pos
    if len(seq) >= 2:
        new_max = seq[1:] > np.maximum.accumulate(seq)[:-1]
        new_min = seq[1:] < np.minimum.accumulate(seq)[:-1]
        append, prepend = float(new_max.mean()), float(new_min.mean())
        corr = _order_corr(seq_pos)
    else:
        append = prepend = corr = 0.0
    seq_t = t[seq_mask] if seq_mask is not None else t
    points = append_points(seq, seq_pos, seq_t)
    return {
        "samples": int(n),
        "distinct_keys": int(distinct) if distinct is not None else None,
        "buckets": int(nb),
        "time_bins": int(nt),
        "hottest_bucket_share": _cross_validated(counts, 1) / n,
        "hottest_1pct_share": _cross_validated(counts, width) / n,
        "hottest_bucket_share_overall": float(overall_fine.max() / n),
        "gini": _gini(overall),
        "entropy_norm": _entropy_norm(overall),
        "append_fraction": append,
        "prepend_fraction": prepend,
        "position_time_corr": corr,
        "moving_hotspot": bool(max(append, prepend) >= 0.5 or abs(corr) >= 0.9),
        "append_points": points,
    }


#: A run of inserts in key order must hold this many on average to count as an append point.
_MIN_RUN = 8
#: Time may step back this much (share of the span) inside a run: interleaved workers.
_RUN_SLACK = 0.05


def append_points(order_key: np.ndarray, pos: np.ndarray, t: np.ndarray) -> int | None:
    """How many places new keys are appended at (1 for sequential ids, n for n shards).

    Sorted by key, the inserts of one append point come in time order: the number of
    ascending-time runs (or descending: prepends) counts the points. A time step back of
    less than ``_RUN_SLACK`` of the span stays inside a run (interleaved worker processes).
    None when runs are short (mean < ``_MIN_RUN``): keys land spread, not at a few points.
    """
    runs = append_runs(order_key, pos, t)
    return None if runs is None else int(runs.run.max()) + 1


@dataclass(frozen=True, kw_only=True)
class AppendRuns:
    """The append points of sampled inserts: which one each insert belongs to (0, 1, … in key order)."""

    run: np.ndarray  # per insert, in the order given
    forward: bool  # appends (new keys above the earlier ones) rather than prepends


def append_runs(order_key: np.ndarray, pos: np.ndarray, t: np.ndarray) -> AppendRuns | None:
    """``append_points`` with the point of every insert, or None when the keys land spread."""
    n = len(t)
    if n < 2 * _MIN_RUN:
        return None
    order = np.lexsort((t, pos, order_key))
    dt = np.diff(t[order])
    slack = _RUN_SLACK * float(t.max() - t.min())
    # Appends make time run forward along the keys (prepends backward) more than it jumps back.
    forward = float(dt[dt > 0].sum()) >= float(-dt[dt < 0].sum())
    breaks = dt < -slack if forward else dt > slack
    runs = 1 + int(np.count_nonzero(breaks))
    if n / runs < _MIN_RUN:
        return None
    run = np.empty(n, dtype=np.int64)
    run[order] = np.concatenate([[0], np.cumsum(breaks)])
    return AppendRuns(run=run, forward=forward)


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
    reference: Reference | None = None,
) -> tuple[KeyPositions, np.ndarray, dict[str, Any], TabletTimeline | None]:
    """Positions, sorted times, measured metrics and the tablet model for one cell.

    ``reference``: the cell's key range (``_reference.cell_reference``); None ranks the
    keys among the sampled keys alone.
    """
    t = np.asarray(times, dtype=np.float64)
    key_arr = key_bytes(keys)
    op_arr = None if ops is None else np.asarray(ops)
    if len(t) > 1 and np.any(np.diff(t) < 0):  # key samples are time-ordered already; sort only if not
        order = np.argsort(t, kind="stable")
        t, key_arr = t[order], key_arr[order]
        op_arr = None if op_arr is None else op_arr[order]
    inserts = insert_mask(op_arr) if len(t) else None
    kp = key_positions(key_arr, reference=reference, inserts=inserts, times=t)
    metrics = hotspot_metrics(kp.pos, t, inserts=inserts, buckets=buckets, distinct=kp.distinct, positions=kp)
    timeline = None
    if len(t) and has_model(backend):
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
    reference: Reference | None = None,
) -> KeyspaceFigures:
    """summary.json's ``keyspace``: measured metrics + a modelled tablet summary.

    ``keys`` are sort texts (or raw keys), ``times`` wall seconds since the measured phase
    started, ``ops`` op names; ``rate_fn`` maps schedule seconds to the scheduled ops/s
    (None: use the sampled rate / ``sample_rate``, the fraction of accesses sampled).
    """
    kp, _, metrics, timeline = analyze_cell(
        keys, times, ops, backend=backend, time_scale=time_scale, rate_fn=rate_fn, sample_rate=sample_rate,
        reference=reference,
    )
    return summary_entry(kp, metrics, timeline)


def summary_entry(kp: KeyPositions, metrics: Mapping[str, Any], timeline: TabletTimeline | None) -> KeyspaceFigures:
    """``analyze_cell``'s results as summary.json's ``keyspace``.

    Read from the figures as computed, in their order: which of them a cell has (none but
    ``samples`` without sampled operations, ``hot_window_vs_capacity`` only with a band) is the
    analysis's to say, and the document keeps exactly those."""
    return KeyspaceFigures.from_json({**metrics, "reference_keys": int(kp.distinct),
                                      "range_keys": round(float(kp.reference.weight.sum()), 1),
                                      "model": timeline.summary() if timeline is not None else None})
