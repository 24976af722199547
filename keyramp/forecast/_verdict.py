"""The forecast's verdict words and how bad each is: one vocabulary for the band, the views
and every comparison of two verdicts (``compare``, the scenario report).

``ok``, ``at_risk`` and ``hotspot`` are the verdicts of one point of the parameter box
(``_band.verdict_of``); a band over several points says:

* its points' common verdict when they agree;
* ``at_risk-hotspot`` when every point throttles beyond the ok limit, some at_risk and some
  hotspot: the launch is not fine anywhere in the box, whatever the unknown parameters are;
* ``uncertain`` only when the band reaches ``ok`` and something worse.

Light on purpose (no numpy): the run table and ``compare`` import it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = ["AT_RISK_HOTSPOT", "VERDICT_RANK", "span_verdict"]

#: Every point throttles beyond the ok limit, some at_risk and some hotspot.
AT_RISK_HOTSPOT: Final = "at_risk-hotspot"
#: How bad a verdict is: a candidate ranking above its baseline is a forecast regression.
#: ``uncertain`` reaches ok, so it ranks with at_risk; ``at_risk-hotspot`` never does.
VERDICT_RANK: Final = {"ok": 0, "at_risk": 1, "uncertain": 1, AT_RISK_HOTSPOT: 2, "hotspot": 3}


def span_verdict(verdicts: Iterable[str]) -> str:
    """One word for several points' verdicts: their common verdict; ``at_risk-hotspot`` when none
    is ok (every point throttles); ``uncertain`` when some point is ok and another is not."""
    seen = set(verdicts)
    if len(seen) == 1:
        return seen.pop()
    if not seen or "ok" in seen or "uncertain" in seen:
        return "uncertain"
    return AT_RISK_HOTSPOT
