"""The SVG charts' frame (web/_axes.py): round ticks a person would write, by their properties."""

from __future__ import annotations

import itertools
import math
import re

from hypothesis import given
from hypothesis import strategies as st

from keyramp.web._axes import Frame, duration_ticks, nice_ticks

_ROUND = (1.0, 2.0, 2.5, 5.0)


def _mantissa(step: float) -> float:
    return round(step / 10 ** math.floor(math.log10(step) + 1e-12), 9)


@given(st.floats(min_value=1e-6, max_value=1e12, allow_nan=False, allow_infinity=False), st.integers(3, 10))
def test_value_ticks_start_at_zero_in_one_round_step_and_are_the_finest_that_fit(top: float, most: int) -> None:
    ticks = nice_ticks(top, most=most)
    step = ticks[1] - ticks[0]
    assert ticks[0] == 0 and 2 <= len(ticks) <= most
    assert all(math.isclose(b - a, step, rel_tol=1e-9) for a, b in itertools.pairwise(ticks))
    assert _mantissa(step) in _ROUND, step
    assert ticks[-1] <= top * (1 + 1e-9) or len(ticks) == 2  # inside the axis (a tiny top gets 0 and one step)
    # the finest: the next round step down would need more than ``most`` ticks
    finer = max((m * 10 ** k for k in range(-14, 14) for m in _ROUND if m * 10 ** k < step * (1 - 1e-9)), default=None)
    assert finer is None or math.floor(top / finer + 1e-9) + 1 > most


@given(st.floats(min_value=5, max_value=30 * 24 * 3600, allow_nan=False))
def test_time_ticks_use_one_unit_and_round_steps(end_s: float) -> None:
    ticks, label = duration_ticks(end_s)
    texts = [label(t) for t in ticks]
    parsed = [re.fullmatch(r"([\d.]+) (s|min|h)", t) for t in texts[1:]]
    assert texts[0] == "0" and all(parsed)
    units = {m[2] for m in parsed if m}
    assert len(units) == 1, texts  # one unit on the whole axis
    assert 2 <= len(ticks) <= 7 and ticks[-1] <= end_s * (1 + 1e-9)
    step = ticks[1] - ticks[0]
    assert all(math.isclose(b - a, step) for a, b in itertools.pairwise(ticks))
    unit = {"s": 1, "min": 60, "h": 3600}[units.pop()]
    assert (step / unit) in (0.5, 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 24, 30, 60) or (step / unit) % 24 == 0


def test_the_plan_chart_reads_like_graph_paper() -> None:
    """The issue's chart: a 2.9-hour ramp to 5,000 ops/s was ticked "0 s / 88 min / 2.9 h" and 0, 5,000."""
    frame = Frame(x_end=2.93 * 3600, y_top=5000 * 1.15)
    doc = frame.doc(y_text=lambda v: f"{v:,.0f}", x_title="t", y_title="ops/s")
    assert [t["text"] for t in doc["x_ticks"]] == ["0", "0.5 h", "1 h", "1.5 h", "2 h", "2.5 h"]
    assert [t["text"] for t in doc["y_ticks"]] == ["0", "1,000", "2,000", "3,000", "4,000", "5,000"]
    xs = [t["x"] for t in doc["x_ticks"]]
    assert xs[0] == frame.left and all(frame.left <= x <= frame.right for x in xs)
    assert frame.y(5000) == doc["y_ticks"][-1]["y"] and frame.polyline([(0, 0), (10**9, 10**9)]).endswith(
        f"{frame.right:.1f},{frame.top:.1f}")  # points beyond the axes stay on the frame
