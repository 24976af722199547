"""One number format: each figure kind reads one way, with units, separators and no long floats."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keyramp.core import _format as fmt

#: a figure with a fractional part (a whole count like 123,456 is exact, not a long float)
_DECIMAL = re.compile(r"\d[\d,]*\.\d+")


def _significant(text: str) -> int:
    """The most significant digits of any fractional figure in ``text`` (0: none)."""
    return max((len(f.replace(",", "").replace(".", "").lstrip("0")) for f in _DECIMAL.findall(text)), default=0)


@pytest.mark.parametrize(("value", "text"), [
    (0.008, "0.8 %"), (0.0099, "1.0 %"), (0.28, "28 %"), (0.63, "63 %"), (1.0, "100 %"), (0.0, "0 %"),
    (0.00012, "0.012 %"), (0.9901112484548825, "99 %"), (None, "–"), (float("nan"), "–"),
])
def test_percent(value: object, text: str) -> None:
    assert fmt.percent(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (30.0, "30 s"), (2.5, "2.5 s"), (0.25, "0.25 s"), (120, "2 min"), (150, "2.5 min"), (7200, "2 h"),
    (None, "never"), (math.inf, "never"), ("soon", "–"),
])
def test_duration(value: object, text: str) -> None:
    assert fmt.duration(value) == text


@pytest.mark.parametrize(("n", "text"), [(1, "1 run"), (2, "2 runs"), (0, "0 runs"), (2000, "2,000 runs")])
def test_plural(n: int, text: str) -> None:
    assert fmt.plural(n, "run") == text


def test_rates_latencies_ratios_counts_money() -> None:
    assert fmt.ops_per_s(2455.4) == "2,455 ops/s" and fmt.ops_per_s(12.46) == "12.5 ops/s"
    assert fmt.ms(0.4213) == "0.421 ms" and fmt.ms(919.2) == "919 ms" and fmt.ms(1204.0) == "1,204 ms"
    assert fmt.ratio(1.6123) == "×1.61" and fmt.ratio(1.0) == "×1.00" and fmt.ratio(0.0042) == "×0.0042"
    assert fmt.count(2471.0) == "2,471" and fmt.count(True) == "–"
    assert fmt.number(30.0) == "30" and fmt.number(2000) == "2,000" and fmt.number(0.9901112484548825) == "0.99"
    assert fmt.usd(1234.5) == "$1,234" and fmt.usd(12.5) == "$12.50" and fmt.usd(0.0421) == "$0.042"
    assert fmt.percent_band(0.28, 0.63) == "28 %–63 %" and fmt.percent_band(0.008, 0.0081) == "0.8 %"
    assert fmt.number(1.4e-14) == "0" and fmt.percent(3e-16) == "0 %"  # a model's float noise is not a figure


_FIGURES = st.floats(-1e9, 1e9, allow_nan=False) | st.floats(-1e-3, 1e-3, allow_nan=False)


@given(_FIGURES)
def test_no_figure_prints_a_long_float(v: float) -> None:
    for text in (fmt.number(v), fmt.ms(v), fmt.ops_per_s(v), fmt.ratio(v), fmt.duration(abs(v)), fmt.usd(v),
                 fmt.percent(v)):
        assert "e" not in text.replace("never", "").replace("ops", "").replace("ms", "").replace("min", "")
        assert len(text) <= 24, (v, text)  # 1,000,000,000 ops/s at most: no run of noise digits
        assert _significant(text) <= 4, (v, text)


@given(st.floats(0, 1e7, allow_nan=False), st.floats(0, 1e7, allow_nan=False))
def test_formatting_keeps_order(a: float, b: float) -> None:
    """A larger figure never reads smaller: what a person compares by eye stays honest."""
    lo, hi = sorted((a, b))

    def back(text: str) -> float:
        return float(text.split()[0].replace(",", "").lstrip("×$"))

    for f in (fmt.number, fmt.ratio, fmt.usd):
        assert back(f(lo)) <= back(f(hi)), (f.__name__, lo, hi)


def test_latencies_never_print_more_digits_than_they_mean() -> None:
    """Issue 39: "added latency (peak) 0.00194 ms" — a latency below a hundredth of a ms reads < 0.01."""
    from keyramp.core import _format as fmt

    assert fmt.ms(0.00194) == "< 0.01 ms" and fmt.ms_figure(0.00194) == "< 0.01"
    assert [fmt.ms(v) for v in (0.0, 0.42, 5.123, 41.79, 919.4, 1204.0)] == [
        "0 ms", "0.42 ms", "5.12 ms", "41.8 ms", "919 ms", "1,204 ms"]
    assert fmt.ms(None) == "–" and fmt.ms_figure(float("nan")) == "–"


def test_words_as_a_person_writes_them() -> None:
    """No "(s)" plurals in what keyramp writes: every count goes through fmt.plural (issue 39)."""
    import ast
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "keyramp"
    stray = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and n.body and isinstance(n.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                    and re.search(r"\w\(s\)", node.value)):
                stray.append(f"{path.relative_to(root)}:{node.lineno}: {node.value.strip()[:60]!r}")
    for path in sorted(root.rglob("*.html")):
        stray += [f"{path.relative_to(root)}: {m.group(0)}" for m in re.finditer(r"\w+\(s\)", path.read_text())]
    assert stray == []
