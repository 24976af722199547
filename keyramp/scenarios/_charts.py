"""Self-contained charts for the scenario report: inline SVG (no CDN, no scripts).

Every text that comes from a run (profile names, cell ids) is XML-escaped here, so a
chart can be pasted into HTML as is.
"""

from __future__ import annotations

import base64
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from keyramp.core import fmt

__all__ = ["CATCH_UP", "ROLE_COLOURS", "STALL", "Bar", "Line", "Mark", "bar_chart_svg", "line_chart_svg", "pace_marks",
           "png_data_uri"]

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


#: Legend words of the bar colours (the profile's role in its pair).
_ROLE_NAMES = {"anti-pattern": "anti-pattern", "best practice": "best practice", "reference": "reference",
               "": "no pair (one probe measures both)"}


def _legend(parts: list[str], y: float, items: Sequence[tuple[str, str, str]], left: float) -> None:
    """One row per legend item: a swatch (``box``, ``line`` or ``dashed``) in its colour, and its words."""
    for i, (colour, name, line) in enumerate(items):
        row = y + 14 * i
        if line == "box":
            parts.append(f"<rect x='{left}' y='{row - 9}' width='10' height='10' fill='{colour}'/>")
        else:
            dash = " stroke-dasharray='5 3'" if line == "dashed" else ""
            parts.append(f"<line x1='{left}' y1='{row - 4}' x2='{left + 24}' y2='{row - 4}' stroke='{colour}' "
                         f"stroke-width='1.6'{dash}/>")
        parts.append(f"<text x='{left + 30}' y='{row}' font-size='11'>{escape(name)}</text>")


def bar_chart_svg(title: str, bars: Sequence[Bar], *, unit: str = "") -> str:
    """A horizontal bar chart, one bar per ``Bar`` (``None`` values draw as "n/a"): a value axis from 0
    to the largest bar with its unit, and a legend of the bar colours."""
    top = 26
    roles = list(dict.fromkeys(b.role for b in bars))
    axis_y = top + len(bars) * (_BAR_H + _GAP)
    height = axis_y + 22 + 14 * len(roles)
    values = [b.value for b in bars if b.value is not None and math.isfinite(b.value)]
    peak = max([v for v in values if v > 0], default=1.0)
    plot_w = _W - _LABEL_W - 70
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' width='{_W}' height='{height}' "
             f"viewBox='0 0 {_W} {height}' role='img' aria-label='{escape(title)}'>",
             f"<text x='0' y='16' font-size='13' font-weight='bold'>{escape(title)}</text>",
             f"<line x1='{_LABEL_W}' y1='{top - 2}' x2='{_LABEL_W}' y2='{axis_y}' stroke='#999'/>",
             f"<line x1='{_LABEL_W}' y1='{axis_y}' x2='{_LABEL_W + plot_w}' y2='{axis_y}' stroke='#999'/>",
             f"<text x='{_LABEL_W}' y='{axis_y + 12}' font-size='10' text-anchor='middle'>0</text>",
             f"<text x='{_LABEL_W + plot_w}' y='{axis_y + 12}' font-size='10' text-anchor='middle'>"
             f"{escape(fmt.number(peak) + unit)}</text>"]
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
        text = bar.text if bar.text is not None else f"{fmt.number(bar.value)}{unit}"
        parts.append(f"<text x='{_LABEL_W + width + 4:.1f}' y='{y + 13}' font-size='11'>{escape(text)}</text>")
    _legend(parts, axis_y + 30, [(ROLE_COLOURS.get(r, ROLE_COLOURS[""]), _ROLE_NAMES.get(r, r), "box") for r in roles],
            _LABEL_W)
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True, kw_only=True)
class Line:
    name: str
    points: Sequence[tuple[float, float]]
    colour: int = 0  # index into the palette: a target and its achieved line share one
    dashed: bool = False


_PALETTE = ("#2e5c8a", "#c0392b", "#1e8449", "#8e44ad", "#d35400", "#7f8c8d")


#: Achieved above the schedule by more than this factor: a catch-up burst (operations due earlier
#: sent late); below ``STALL`` of it: a stall.
CATCH_UP = 1.1
STALL = 0.5


@dataclass(frozen=True, kw_only=True)
class Mark:
    """A point a line chart calls out (a catch-up burst, a stall), numbered, its note under the legend."""

    x: float
    y: float
    note: str


def pace_marks(name: str, timeline: Sequence[tuple[float, float | None, float]]) -> list[Mark]:
    """The biggest catch-up burst and the deepest stall of one cell's scheduled-vs-achieved ops/s
    (``(t, target, achieved)`` per wall second), each with a note that says what it is."""
    paced = [(t, tg, a) for t, tg, a in timeline if tg and tg > 0 and math.isfinite(a)]
    if not paced:
        return []
    marks = []
    t, tg, a = max(paced, key=lambda p: p[2] / p[1])
    if a > CATCH_UP * tg:
        marks.append(Mark(x=t, y=a,
                          note=f"{name}: achieved {fmt.ops_per_s(a)} against {fmt.ops_per_s(tg)} scheduled at "
                                         f"{fmt.number(t)} s, a catch-up: the generator sent late the operations "
                                         "a stall or slowdown had held up"))
    t, tg, a = min(paced, key=lambda p: p[2] / p[1])
    if a < STALL * tg:
        marks.append(Mark(x=t, y=a, note=f"{name}: a stall at {fmt.number(t)} s, {fmt.ops_per_s(a)} achieved of "
                                         f"{fmt.ops_per_s(tg)} scheduled"))
    return sorted(marks, key=lambda m: m.x)


def line_chart_svg(title: str, lines: Sequence[Line], *, x_label: str = "", y_label: str = "",
                   marks: Sequence[Mark] = ()) -> str:
    """Lines over a shared x axis with ticks at 0, half and the end of both axes, the legend
    below the plot, and each mark circled and numbered with its note under the legend."""
    w, left, right, top, plot_h = _W, 56, 12, 26, 180
    bottom = top + plot_h
    notes = [wrapped for i, m in enumerate(marks)
             for wrapped in textwrap.wrap(f"{i + 1}: {m.note}", 100, subsequent_indent="   ")]
    h = bottom + 40 + 14 * (len(lines) + len(notes))
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
             f"<text x='{(left + w) / 2:.0f}' y='{bottom + 26}' font-size='11' text-anchor='middle'>"
             f"{escape(x_label)}</text>",
             f"<text x='12' y='{(top + bottom) / 2:.0f}' font-size='11' text-anchor='middle' "
             f"transform='rotate(-90 12 {(top + bottom) / 2:.0f})'>{escape(y_label)}</text>"]
    for f in (0.0, 0.5, 1.0):
        y = bottom - f * plot_h
        anchor = "start" if f == 0 else "end" if f == 1 else "middle"
        parts.append(f"<text x='{left - 4}' y='{y + 3:.0f}' font-size='10' "
                     f"text-anchor='end'>{fmt.number(f * y_max)}</text>"
                     f"<text x='{left + f * (w - left - right):.0f}' y='{bottom + 12}' font-size='10' "
                     f"text-anchor='{anchor}'>{fmt.number(f * x_max)}</text>")
    for line in lines:
        colour = _PALETTE[line.colour % len(_PALETTE)]
        dash = " stroke-dasharray='5 3'" if line.dashed else ""
        coords = " ".join(f"{left + x * sx:.1f},{bottom - y * sy:.1f}" for x, y in line.points
                          if math.isfinite(x) and math.isfinite(y))
        if coords:
            parts.append(f"<polyline fill='none' stroke='{colour}' stroke-width='1.6'{dash} points='{coords}'/>")
    for i, m in enumerate(marks):
        cx, cy = left + m.x * sx, bottom - min(m.y, y_max) * sy
        parts.append(f"<circle class='mark' cx='{cx:.1f}' cy='{cy:.1f}' r='6' fill='none' stroke='#111'/>"
                     f"<text x='{cx + 8:.1f}' y='{cy - 6:.1f}' font-size='11' font-weight='bold'>{i + 1}</text>")
    _legend(parts, bottom + 44, [(_PALETTE[line.colour % len(_PALETTE)], line.name,
                                  "dashed" if line.dashed else "line") for line in lines], left)
    for i, note in enumerate(notes):
        parts.append(f"<text class='note' x='{left}' y='{bottom + 44 + 14 * (len(lines) + i)}' "
                     f"font-size='11'>{escape(note)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def png_data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")
