"""Key-space heatmap: ops over time x key-range buckets, as JSON (web UI) and PNG.

Drawn like Key Visualizer: time on x, key range on y with the first key at the top,
a log colour scale from 1 (``keyramp.core._heatscale``: one sampled op is visible, empty is
background), and real key text at bucket edges so the y axis is readable.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from keyramp.core import mpl_colormap
from keyramp.keyspace._load import KeyPositions
from keyramp.keyspace._metrics import bucket_matrix

__all__ = ["DEFAULT_TIME_BINS", "heatmap_data", "render_png"]

#: One bin per wall second up to this many bins; longer cells get wider bins.
DEFAULT_TIME_BINS = 300
_Y_TICKS = 9
_LABEL_CHARS = 28


def heatmap_data(
    kp: KeyPositions,
    t: np.ndarray,
    *,
    buckets: int = 1000,
    time_bins: int | None = None,
    duration_s: float | None = None,
) -> dict[str, Any]:
    """Counts matrix ``counts[time_bin][bucket]`` with time and labelled bucket edges."""
    nb = max(1, min(buckets, kp.distinct or 1))
    end = duration_s if duration_s is not None else (float(t.max()) if len(t) else 1.0)
    end = max(end, 1e-9)
    nt = time_bins or int(min(DEFAULT_TIME_BINS, max(1, math.ceil(end))))
    counts, edges = bucket_matrix(kp.pos, t, buckets=nb, time_bins=nt, t_range=(0.0, end))
    q = np.arange(nb + 1) / nb
    return {
        "time_edges_s": [round(float(e), 4) for e in edges],
        "bucket_edges": [float(x) for x in q],
        "bucket_labels": kp.labels_at(q),
        "buckets": nb,
        "distinct_keys": kp.distinct,
        "counts": counts.tolist(),
    }


def _printable(label: str) -> str:
    text = "".join(ch if ch.isprintable() else "·" for ch in label)
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def render_png(data: dict[str, Any], path: Path, *, title: str, time_scale: float = 1.0) -> Path:
    """Write the heatmap PNG (matplotlib Agg) and return its path."""
    import matplotlib  # deferred: start-up cost (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: start-up cost (matplotlib)
    from matplotlib.colors import LogNorm  # deferred: start-up cost (matplotlib)

    counts = np.asarray(data["counts"], dtype=np.float64).T  # [bucket, time]
    nb = counts.shape[0]
    edges = data["time_edges_s"]
    masked = np.ma.masked_less_equal(counts, 0)
    fig, ax = plt.subplots(figsize=(11, 6.2), dpi=110)
    vmax = max(1.0, float(counts.max()))
    image = ax.imshow(
        masked,
        aspect="auto",
        interpolation="nearest",
        cmap=mpl_colormap(),
        norm=LogNorm(vmin=1.0, vmax=max(vmax, 1.0 + 1e-9)),
        extent=(edges[0], edges[-1], nb, 0),  # first key at the top, like Key Visualizer
    )
    ticks = np.unique(np.linspace(0, nb, min(_Y_TICKS, nb + 1)).round().astype(int))
    ax.set_yticks(ticks)
    ax.set_yticklabels([_printable(data["bucket_labels"][i]) for i in ticks], fontsize=8, family="monospace")
    ax.set_ylabel(f"key range (byte order, {nb} buckets of equal key count)")
    ax.set_xlabel("wall time since the measured phase started (s)")
    if time_scale != 1.0:
        to_schedule = (lambda x: np.multiply(x, time_scale), lambda x: np.divide(x, time_scale))
        top = ax.secondary_xaxis("top", functions=to_schedule)
        top.set_xlabel(f"schedule time (s, x{time_scale:g})")
    bar = fig.colorbar(image, ax=ax, pad=0.02, extend="min")  # the grey triangle: no sampled op
    bar.set_label("sampled ops per bin (log scale from 1; grey = none)")
    bar.ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:,.0f}")  # "10", not "10^1"
    ax.set_title(title, fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
