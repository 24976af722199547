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

``hottest_1pct_share`` stays in summary.json; this is how it is read out. ``FIGURES`` are the
headline figures beside it, labelled and formatted once for every view.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from keyramp.core import fmt
from keyramp.results import KeyspaceFigures, as_keyspace

__all__ = ["FIGURE", "FIGURES", "HOT_RANGE_MIN", "Figure", "keyspace_headline"]

#: The busiest 1 % of the range taking at least this share is a hot range (uniform: ≈ 1 %).
HOT_RANGE_MIN: Final = 0.05


def keyspace_headline(keyspace: KeyspaceFigures | Mapping[str, Any] | None) -> str:
    """The headline of a cell's measured key-space figures (summary.json ``keyspace``); ``-`` without them.

    A mapping (a JSON twin's, compare's flattened figures) is read through the results model."""
    ks = as_keyspace(keyspace)
    if ks is None or ks.empty:
        return "-"
    if ks.append_points is not None and ks.append_points >= 1:
        down, up = ks.prepend_fraction or 0.0, ks.append_fraction or 0.0
        return f"{'prepend' if down > up else 'append'} ×{ks.append_points:,.0f}"
    hot = ks.hottest_1pct_share
    if hot is not None and hot >= HOT_RANGE_MIN:
        return f"hot range {fmt.percent(hot)} of ops on 1 % of keys"
    return "spread"


def _yes_no(value: object) -> str:
    return fmt.MISSING if not isinstance(value, bool) else ("yes" if value else "no")


def _two(value: object) -> str:
    return fmt.number(value, 2)


@dataclass(frozen=True)
class Figure:
    """One headline figure of a cell's ``keyspace``: its field, its label and how it reads."""

    field: str
    label: str
    text: Callable[[object], str]
    #: From ``keyspace.model``: the tablet model at the test's own rate, not a measurement.
    modelled: bool = False

    def value(self, keyspace: KeyspaceFigures | Mapping[str, Any]) -> Any:
        """The figure in ``keyspace``: summary.json's, or compare's flattened (``model.`` prefixes)."""
        if isinstance(keyspace, KeyspaceFigures):
            source = keyspace.model if self.modelled else keyspace
            return None if source is None else getattr(source, self.field)
        return keyspace.get(f"model.{self.field}" if self.modelled else self.field)


#: The headline figures, in the order and words every view shows them (the run page, ``keyramp
#: compare``, the UI's compare page): rounded by the one format, the model's constants (step
#: sizes, parameters) left out; summary.json keeps every field.
FIGURES: Final[tuple[Figure, ...]] = (
    Figure("hottest_1pct_share", "hottest 1 % of the key range", fmt.percent),
    Figure("hottest_1pct_ops_per_s", "hot window", fmt.ops_per_s),
    Figure("append_points", "append points", fmt.count),
    Figure("moving_hotspot", "moving hotspot", _yes_no),
    Figure("append_fraction", "appends at the end", fmt.percent),
    Figure("prepend_fraction", "prepends at the start", fmt.percent),
    Figure("gini", "unevenness (Gini)", _two),
    Figure("entropy_norm", "evenness (entropy)", _two),
    Figure("samples", "sampled operations", fmt.count),
    Figure("max_throttled_fraction", "throttled load (peak)", fmt.percent, modelled=True),
    Figure("peak_tablets", "tablets (peak)", fmt.count, modelled=True),
    Figure("max_added_latency_ms", "added latency (peak)", fmt.ms, modelled=True),
)
#: The figures by field.
FIGURE: Final[dict[str, Figure]] = {f.field: f for f in FIGURES}
