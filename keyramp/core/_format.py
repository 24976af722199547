"""One number format for every view (terminal, ``compare``, reports, web UI).

One figure must read the same wherever it shows: a share is always a percentage
(``0.8 %``, never ``0.008`` in one table and ``0.8 %`` in another), a duration always
carries its unit (``30 s``, ``2 min``; ``never`` for an event that does not happen), large
counts carry thousands separators, and no figure prints more digits than it has meaning
(at most 3 significant). Missing and non-finite values read ``–``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

__all__ = [
    "MISSING",
    "count",
    "duration",
    "merge_figures",
    "ms",
    "ms_figure",
    "number",
    "ops_per_s",
    "percent",
    "percent_band",
    "plural",
    "ratio",
    "usd",
]

#: What a missing, non-numeric or non-finite value reads as.
MISSING = "–"
#: Below this a figure is float noise (a model's 1e-14), not a quantity: it reads as 0.
_NOISE = 1e-9


def _real(value: object) -> float | None:
    """``value`` as a finite float, or None (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _sig(v: float, digits: int = 3) -> str:
    """``v`` with at most ``digits`` significant digits, thousands-separated, no exponent."""
    if abs(v) < _NOISE:
        return "0"
    exp = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - exp)
    text = f"{round(v, decimals):,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def number(value: object, digits: int = 3) -> str:
    """A plain figure: ``2,455``, ``12.3``, ``0.0421`` (``digits`` significant below 1,000)."""
    v = _real(value)
    if v is None:
        return MISSING
    return f"{v:,.0f}" if abs(v) >= 10 ** digits else _sig(v, digits)


def count(value: object) -> str:
    """A whole count: ``2,471``."""
    v = _real(value)
    return MISSING if v is None else f"{round(v):,}"


def percent(share: object, digits: int | None = None) -> str:
    """A share (0..1) as a percentage: ``63 %``, ``2.5 %``, ``0.8 %``, ``0.012 %``, ``0 %``.

    ``digits`` forces that many decimals (a table column that must line up)."""
    v = _real(share)
    if v is None:
        return MISSING
    p = v * 100
    if digits is not None:
        return f"{p:,.{digits}f} %"
    if p == 0:
        return "0 %"
    if abs(p) >= 10:
        return f"{p:,.0f} %"
    if abs(p) >= 0.1:
        return f"{p:.1f} %"
    return f"{_sig(p, 2)} %"


def percent_band(low: object, high: object) -> str:
    """A modelled band of shares: ``28 %–63 %``; one figure when both ends read the same."""
    lo, hi = percent(low), percent(high)
    return lo if lo == hi else f"{lo}–{hi}"


def ratio(value: object) -> str:
    """A ratio to a baseline: ``×1.61``, ``×1.00``, ``×0.23``, ``×12.5``, ``×0.0042``."""
    v = _real(value)
    if v is None:
        return MISSING
    if abs(v) >= 100:
        return f"×{v:,.0f}"
    if abs(v) >= 10:
        return f"×{v:.1f}"
    return f"×{v:.2f}" if abs(v) >= 0.01 or v == 0 else f"×{_sig(v, 2)}"


def ops_per_s(value: object) -> str:
    """A rate: ``2,455 ops/s``, ``12.5 ops/s``, ``0.5 ops/s``."""
    v = _real(value)
    return MISSING if v is None else f"{number(v)} ops/s"


#: Latencies below this read ``< 0.01``: a hundredth of a millisecond is what a latency figure resolves
#: (HdrHistograms record microseconds; a modelled 0.00194 ms is nothing a reader can act on).
_MS_FLOOR = 0.01


def ms_figure(value: object) -> str:
    """A latency's figure without its unit (a table column headed "p99 ms"): ``0.42``, ``5.1``, ``919``,
    ``1,204``, ``< 0.01`` (never more digits than a millisecond figure has meaning)."""
    v = _real(value)
    if v is None:
        return MISSING
    return f"< {_MS_FLOOR:g}" if 0 < abs(v) < _MS_FLOOR else number(v)


def ms(value: object) -> str:
    """A latency: ``0.42 ms``, ``5.1 ms``, ``919 ms``, ``1,204 ms``, ``< 0.01 ms``."""
    v = _real(value)
    return MISSING if v is None else f"{ms_figure(v)} ms"


def duration(seconds: object) -> str:
    """A span of time: ``0.25 s``, ``30 s``, ``2 min``, ``2.5 min``, ``1.5 h``; ``never`` for
    None or infinity (an event that does not happen), ``–`` for anything else unreadable."""
    if seconds is None or (isinstance(seconds, float) and math.isinf(seconds) and seconds > 0):
        return "never"
    s = _real(seconds)
    if s is None:
        return MISSING
    if abs(s) < 120:
        return f"{_sig(s, 2) if abs(s) < 10 else f'{s:.0f}'} s"
    if abs(s) < 2 * 3600:
        return f"{_sig(s / 60, 2)} min"
    return f"{_sig(s / 3600, 2)} h"


def plural(n: object, word: str, words: str | None = None) -> str:
    """``1 run``, ``2 runs``, ``2,000 operations`` (``words``: an irregular plural)."""
    v = _real(n)
    if v is None:
        return f"{MISSING} {words or word + 's'}"
    return f"{count(v) if v == round(v) else number(v)} {word if v == 1 else (words or word + 's')}"


def usd(value: object) -> str:
    """Money: ``$1,234``, ``$120``, ``$12.50``, ``$0.042``."""
    v = _real(value)
    if v is None:
        return MISSING
    if abs(v) >= 100:
        return f"${v:,.0f}"
    if abs(v) >= 1 or v == 0:
        return f"${v:,.2f}"
    return f"${_sig(v, 2)}"


_FIGURE = re.compile(r"\d+(?:\.\d+)?")


def merge_figures(texts: Sequence[str]) -> tuple[str, str]:
    """Texts that differ only in their figures as one: ``(template, text)`` where the template has
    ``#`` for each figure and the text each figure as the range the texts span (``0.30–0.54 of a
    core``). Texts of different templates are a caller's bug (the first one's template is used)."""
    template = _FIGURE.sub("#", texts[0]) if texts else ""
    slots = list(zip(*(_FIGURE.findall(t) for t in texts), strict=False))
    parts = template.split("#")
    out = [parts[0]]
    for values, rest in zip(slots, parts[1:], strict=False):
        low, high = min(values, key=float), max(values, key=float)
        out += [low if float(low) == float(high) else f"{low}–{high}", rest]
    return template, "".join(out)
