"""The one frame of the pages' small SVG charts (the launch plan's ramp, the forecast's
throttled share): a plot area, round tick values on both axes, and points mapped into it.

Ticks are what a person would write on graph paper: 0, 1,000, 2,000 … on a value axis; on a
time axis one unit for every tick (0, 30 min, 60 min, 90 min — not "0 s / 88 min / 2.9 h").
The browser's uPlot charts choose their own ticks the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Frame", "duration_ticks", "nice_ticks"]

#: Time axis units: (name, seconds, up to which span the unit is used, the steps a person counts in it).
_UNITS = (("s", 1.0, 180.0, (1, 2, 5, 10, 15, 20, 30)), ("min", 60.0, 2 * 3600.0, (1, 2, 5, 10, 15, 20, 30, 60)),
          ("h", 3600.0, math.inf, (0.5, 1, 2, 3, 4, 6, 12, 24)))


def nice_ticks(top: float, *, most: int = 6) -> list[float]:
    """0 and the finest round step (1, 2, 2.5 or 5 × 10^k) that fits at most ``most`` ticks up to
    ``top``: at least two ticks."""
    if not top > 0 or not math.isfinite(top):
        return [0.0, 1.0]
    base = 10 ** math.floor(math.log10(top / max(most - 1, 1)) - 1)
    step = next(m * base * 10**k for k in range(4) for m in (1, 2, 2.5, 5)
                if math.floor(top / (m * base * 10**k) + 1e-9) + 1 <= most)
    n = math.floor(top / step + 1e-9)
    return [round(i * step, 12) for i in range(n + 1)] if n >= 1 else [0.0, step]


def duration_ticks(end_s: float, *, most: int = 7) -> tuple[list[float], Callable[[float], str]]:
    """Tick positions (seconds) from 0 to ``end_s`` in one unit, and the label of a position."""
    name, size, _, steps = next(u for u in _UNITS if end_s <= u[2])
    span = end_s / size
    step = next((s for s in steps if span / s <= most - 1), None)
    if step is None:  # beyond a day of hours: whole multiples of a day
        step = steps[-1] * math.ceil(span / (steps[-1] * (most - 1)))
    n = math.floor(span / step + 1e-9)

    def label(seconds: float) -> str:
        value = seconds / size
        return f"{value:g} {name}" if value else "0"

    return [i * step * size for i in range(n + 1)], label


@dataclass(frozen=True)
class Frame:
    """A plot area inside an SVG of ``width`` × ``height``: x from 0 to ``x_end``, y from 0 to ``y_top``."""

    x_end: float
    y_top: float
    width: float = 520.0
    height: float = 170.0
    left: float = 56.0
    right: float = 508.0
    top: float = 8.0
    bottom: float = 132.0

    def x(self, value: float) -> float:
        return round(self.left + min(max(value, 0.0), self.x_end) / self.x_end * (self.right - self.left), 1)

    def y(self, value: float) -> float:
        return round(self.bottom - min(max(value, 0.0), self.y_top) / self.y_top * (self.bottom - self.top), 1)

    def polyline(self, points: Iterable[tuple[float, float]]) -> str:
        return " ".join(f"{self.x(t):.1f},{self.y(v):.1f}" for t, v in points)

    def doc(self, *, y_text: Callable[[float], str], x_title: str, y_title: str) -> dict[str, Any]:
        """The frame as the SVG partial draws it (``partials/svg_axes.html``): ticks on a time x
        axis and a value y axis, labelled, with the axis titles."""
        xs, x_text = duration_ticks(self.x_end)
        return {"width": self.width, "height": self.height, "left": self.left, "right": self.right,
                "top": self.top, "bottom": self.bottom, "x_title": x_title, "y_title": y_title,
                "x_ticks": [{"x": self.x(v), "text": x_text(v)} for v in xs],
                "y_ticks": [{"y": self.y(v), "text": y_text(v)} for v in nice_ticks(self.y_top)]}
