"""The heatmap colour scale: one sampled op must read clearly apart from an empty bin, in the
scale itself and on a rendered PNG (the picture users compare with Key Visualizer)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from keyramp.core._heatscale import EMPTY, colour, fraction, mpl_colormap

#: Euclidean RGB distance that reads as "clearly different" at a glance (black vs inferno's
#: 1-count colour, the bug this scale fixes, was ~4).
CLEAR = 100.0


def _dist(a: tuple[float, ...] | np.ndarray, b: tuple[float, ...] | np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(a[:3], dtype=float) - np.asarray(b[:3], dtype=float)))


@given(st.floats(1.0, 1e9))
def test_one_hit_is_clearly_not_empty_whatever_the_maximum(max_count: float) -> None:
    assert _dist(colour(1, max_count), colour(0, max_count)) >= CLEAR
    assert colour(0, max_count) == EMPTY


@given(st.floats(1.0, 1e6), st.floats(1.0, 1e6), st.floats(1.0, 1e6))
def test_more_ops_never_move_back_down_the_scale(a: float, b: float, max_count: float) -> None:
    lo, hi = sorted((a, b))
    flo, fhi = fraction(lo, max_count), fraction(hi, max_count)
    assert flo is not None and fhi is not None and 0.0 <= flo <= fhi <= 1.0


def test_scale_is_log_from_one() -> None:
    # a decade in the middle of a 1..10^4 matrix sits a quarter of the way per decade
    assert fraction(10, 10_000) == pytest.approx(0.25)
    assert fraction(10_000, 10_000) == 1.0 and fraction(1, 10_000) == 0.0 and fraction(0, 5) is None


def test_matplotlib_colormap_draws_the_same_colours() -> None:
    cmap = mpl_colormap()
    for count in (1, 3, 40, 999, 1000):
        f = fraction(count, 1000)
        assert f is not None
        rgb = tuple(round(c * 255) for c in cmap(f)[:3])
        assert _dist(rgb, colour(count, 1000)) < 4, count  # 256-entry LUT: within a step
    assert _dist(tuple(round(c * 255) for c in cmap.get_bad()[:3]), EMPTY) < 1


def test_rendered_png_shows_single_hits(tmp_path: Path) -> None:
    """Left half of the time axis: every bin has exactly one sampled op; right half: empty;
    one hot bin sets the maximum to 500. On the PNG the two halves must differ clearly."""
    import matplotlib.image

    from keyramp.keyspace._heatmap import render_png

    nt, nb = 40, 20
    counts = [[1 if t < nt // 2 else 0 for _ in range(nb)] for t in range(nt)]
    counts[0][0] = 500
    data = {"counts": counts, "time_edges_s": list(np.linspace(0, nt, nt + 1)),
            "bucket_labels": [f"k{i:03d}" for i in range(nb + 1)]}
    png = render_png(data, tmp_path / "h.png", title="one hit per bin, then nothing")
    img = matplotlib.image.imread(png)[:, :, :3] * 255
    row = img[img.shape[0] // 2]
    # the plot area: the longest run of non-white pixels across the middle row
    inked = np.flatnonzero(np.any(row < 250, axis=1))
    runs = np.split(inked, np.flatnonzero(np.diff(inked) > 1) + 1)
    area = max(runs, key=len)
    assert len(area) > 300
    quarter = len(area) // 4
    one_hit = np.median(row[area[quarter - 20:quarter + 20]], axis=0)
    empty = np.median(row[area[3 * quarter - 20:3 * quarter + 20]], axis=0)
    assert _dist(one_hit, empty) >= CLEAR, (one_hit, empty)
    assert _dist(empty, EMPTY) < 3 and _dist(one_hit, colour(1, 500)) < 4
