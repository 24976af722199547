"""One colour scale for every key-space heatmap: the PNG, the scenario report and the web canvas.

A bin with no sampled op is the background; a bin with one sampled op already takes the first,
clearly visible colour, and more ops darken along a log scale from 1 to the matrix's maximum.
(A scale whose 1 equals its background hides sparse streams: a random-key run's single hits,
a sequential run's staircase.) The web UI reads :func:`scale_doc`, so the browser draws with
these very stops instead of a second copy of them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from matplotlib.colors import Colormap

__all__ = ["EMPTY", "STOPS", "colour", "fraction", "mpl_colormap", "scale_doc"]

RGB = tuple[int, int, int]

#: An empty bin: a light grey, the plot area's background.
EMPTY: Final[RGB] = (244, 244, 245)
#: Sequential stops from 1 op (first) to the maximum (last), evenly spaced on the log scale:
#: ColorBrewer YlOrRd from its mid amber on, so even the first stop stands out from EMPTY.
STOPS: Final[tuple[RGB, ...]] = (
    (254, 178, 76),
    (253, 141, 60),
    (252, 78, 42),
    (227, 26, 28),
    (189, 0, 38),
    (128, 0, 38),
)


def fraction(count: float, max_count: float) -> float | None:
    """Position of ``count`` on the scale in [0, 1]; None for an empty bin (no colour)."""
    if not count > 0:
        return None
    if max_count <= 1 or count <= 1:
        return 0.0
    return min(1.0, math.log(count) / math.log(max_count))


def colour(count: float, max_count: float) -> RGB:
    """The RGB a bin of ``count`` sampled ops is drawn in (linear between stops, like the canvas)."""
    f = fraction(count, max_count)
    if f is None:
        return EMPTY
    x = f * (len(STOPS) - 1)
    i = min(len(STOPS) - 2, int(x))
    t = x - i
    lo, hi = STOPS[i], STOPS[i + 1]
    return (round(lo[0] + (hi[0] - lo[0]) * t), round(lo[1] + (hi[1] - lo[1]) * t),
            round(lo[2] + (hi[2] - lo[2]) * t))


def scale_doc() -> dict[str, object]:
    """The scale as the web page's JS reads it (``data-heat-scale`` on ``<body>``)."""
    return {"empty": list(EMPTY), "stops": [list(s) for s in STOPS], "scale": "log from 1"}


def mpl_colormap() -> Colormap:
    """The scale as a matplotlib colormap: zero (masked or under 1) draws as EMPTY."""
    from matplotlib.colors import LinearSegmentedColormap  # deferred: start-up cost (matplotlib: the PNG path only)

    def unit(rgb: RGB) -> tuple[float, float, float]:
        return rgb[0] / 255, rgb[1] / 255, rgb[2] / 255

    cmap = LinearSegmentedColormap.from_list("keyramp_heat", [unit(s) for s in STOPS])
    empty = unit(EMPTY)
    return cmap.with_extremes(bad=empty, under=empty)
