"""Self-contained charts for the scenario report: inline SVG (no CDN, no scripts).

Every text that comes from a run (profile names, cell ids) is XML-escaped here, so a
chart can be pasted into HTML as is.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from keyramp._format import number

__all__ = ["ROLE_COLOURS", "Bar", "Line", "bar_chart_svg", "line_chart_svg", "png_data_uri"]

#: Bar colour by the profile's role in its pair: the anti-pattern stands out.
ROLE_COLOURS = {"anti-pattern": "#c0392b", "best practice": "#1e8449", "reference": "#7f8c8d", "": "#2e5c8a"}

_W = 640
_LABEL_W = 300
_BAR_H = 18
_GAP = 6


@dataclass(frozen=True, kw_only=True)
class Bar:
    label: str
    value: float | None
    role: str = ""
    #: The number printed after the bar (defaults to ``value`` with ``unit``).
    text: str | None = None


def bar_chart_svg(title: str, bars: Sequence[Bar], *, unit: str = "") -> str:
    """A horizontal bar chart, one bar per ``Bar`` (``None`` values draw as "n/a")."""
    top = 26
    height = top + len(bars) * (_BAR_H + _GAP) + 8
    values = [b.value for b in bars if b.value is not None and math.isfinite(b.value)]
    peak = max([v for v in values if v > 0], default=1.0)
    plot_w = _W - _LABEL_W - 70
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' width='{_W}' height='{height}' "
             f"viewBox='0 0 {_W} {height}' role='img' aria-label='{escape(title)}'>",
             f"<text x='0' y='16' font-size='13' font-weight='bold'>{escape(title)}</text>"]
    for i, bar in enumerate(bars):
        y = top + i * (_BAR_H + _GAP)
        label = bar.label if len(bar.label) <= 48 else bar.label[:47] + "…"
        parts.append(f"<text x='{_LABEL_W - 6}' y='{y + 13}' font-size='11' text-anchor='end'>"
                     f"<title>{escape(bar.label)}</title>{escape(label)}</text>")
        if bar.value is None or not math.isfinite(bar.value):
            parts.append(f"<text x='{_LABEL_W + 4}' y='{y + 13}' font-size='11' fill='#888'>n/a</text>")
            continue
        width = max(0.0, bar.value) / peak * plot_w
        colour = ROLE_COLOURS.get(bar.role, ROLE_COLOURS[""])
        parts.append(f"<rect x='{_LABEL_W}' y='{y}' width='{width:.1f}' height='{_BAR_H}' fill='{colour}'/>")
        text = bar.text if bar.text is not None else f"{number(bar.value)}{unit}"
        parts.append(f"<text x='{_LABEL_W + width + 4:.1f}' y='{y + 13}' font-size='11'>{escape(text)}</text>")
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True, kw_only=True)
class Line:
    name: str
    points: Sequence[tuple[float, float]]
    colour: int = 0  # index into the palette: a target and its achieved line share one
    dashed: bool = False


_PALETTE = ("#2e5c8a", "#c0392b", "#1e8449", "#8e44ad", "#d35400", "#7f8c8d")


def line_chart_svg(title: str, lines: Sequence[Line], *, x_label: str = "", y_label: str = "") -> str:
    """Lines over a shared x axis, legend below the plot."""
    w, left, right, top, plot_h = _W, 56, 12, 26, 180
    bottom = top + plot_h
    h = bottom + 34 + 14 * len(lines)
    points = [p for line in lines for p in line.points if math.isfinite(p[0]) and math.isfinite(p[1])]
    x_max = max((p[0] for p in points), default=1.0) or 1.0
    y_max = max((p[1] for p in points), default=1.0) or 1.0
    sx = (w - left - right) / x_max
    sy = plot_h / y_max
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' width='{w}' height='{h}' "
             f"viewBox='0 0 {w} {h}' role='img' aria-label='{escape(title)}'>",
             f"<text x='0' y='16' font-size='13' font-weight='bold'>{escape(title)}</text>",
             f"<line x1='{left}' y1='{bottom}' x2='{w - right}' y2='{bottom}' stroke='#999'/>",
             f"<line x1='{left}' y1='{top}' x2='{left}' y2='{bottom}' stroke='#999'/>",
             f"<text x='{left - 4}' y='{top + 10}' font-size='10' text-anchor='end'>{number(y_max)}</text>",
             f"<text x='{left - 4}' y='{bottom}' font-size='10' text-anchor='end'>0</text>",
             f"<text x='{w - right}' y='{bottom + 14}' font-size='10' text-anchor='end'>{number(x_max)}</text>",
             f"<text x='{(left + w) / 2:.0f}' y='{bottom + 14}' font-size='11' text-anchor='middle'>"
             f"{escape(x_label)}</text>",
             f"<text x='12' y='{(top + bottom) / 2:.0f}' font-size='11' text-anchor='middle' "
             f"transform='rotate(-90 12 {(top + bottom) / 2:.0f})'>{escape(y_label)}</text>"]
    for i, line in enumerate(lines):
        colour = _PALETTE[line.colour % len(_PALETTE)]
        dash = " stroke-dasharray='5 3'" if line.dashed else ""
        coords = " ".join(f"{left + x * sx:.1f},{bottom - y * sy:.1f}" for x, y in line.points
                          if math.isfinite(x) and math.isfinite(y))
        if coords:
            parts.append(f"<polyline fill='none' stroke='{colour}' stroke-width='1.6'{dash} points='{coords}'/>")
        y = bottom + 30 + 14 * i
        parts.append(f"<line x1='{left}' y1='{y - 4}' x2='{left + 24}' y2='{y - 4}' stroke='{colour}' "
                     f"stroke-width='1.6'{dash}/><text x='{left + 30}' y='{y}' font-size='11'>{escape(line.name)}"
                     "</text>")
    parts.append("</svg>")
    return "".join(parts)


def png_data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")
