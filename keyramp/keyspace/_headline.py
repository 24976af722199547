"""One key-space headline that means the same in every run: the table, the UI, the scenario report.

The hottest-1 % share alone misleads: a sequential stream whose range was rebuilt from
its samples reads 0.03 (every key touched once, so "evenly spread"), the same stream
against its profile's range 0.70. What a launch does with the keys depends on their
shape, so the headline names the shape from what was measured:

* ``append ×n``: new keys land at n places (``append_points``), each past the earlier
  keys of its part of the range: n hot ranges no split can cool (``prepend ×n`` for
  keys that land below the earlier ones, e.g. reverse timestamps);
* ``hot range 40 % of ops on 1 % of keys``: no append points, but the busiest 1 % of the
  range takes that share (hot keys, skewed reads);
* ``spread``: neither.

``hottest_1pct_share`` stays in summary.json; this is how it is read out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["HOT_RANGE_MIN", "keyspace_headline"]

#: The busiest 1 % of the range taking at least this share is a hot range (uniform: ≈ 1 %).
HOT_RANGE_MIN: Final = 0.05


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def keyspace_headline(keyspace: Any) -> str:
    """The headline of a cell's measured key-space figures (summary.json ``keyspace``); ``-`` without them."""
    if not isinstance(keyspace, Mapping) or not keyspace or keyspace.get("samples") == 0:
        return "-"
    points = _number(keyspace.get("append_points"))
    if points is not None and points >= 1:
        down, up = _number(keyspace.get("prepend_fraction")) or 0.0, _number(keyspace.get("append_fraction")) or 0.0
        return f"{'prepend' if down > up else 'append'} ×{points:,.0f}"
    hot = _number(keyspace.get("hottest_1pct_share"))
    if hot is not None and hot >= HOT_RANGE_MIN:
        return f"hot range {100 * hot:.0f} % of ops on 1 % of keys"
    return "spread"
