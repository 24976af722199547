"""A launch's cost at list prices as a results document (``cells[id].plan.cost``, plan.json).

Every figure is modelled: the cell's op mix priced from a price table (an estimate, not a
bill; docs/plan.md#cost). The price table, the pricing and the objects that compute a cost
are ``keyramp.forecast``'s (``_prices``, ``_cost.CellCost``); these are the documents they leave,
so a reader of a plan reads the figures here without the forecast layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from keyramp.results._doc import JsonDoc

__all__ = ["LABEL", "BilledLine", "ListPrice", "PlanCost", "PricesUsed", "WindowCost"]

#: What every cost figure is (written with each cost; the price table's own label may say more).
LABEL = "estimate at list prices, before free tier and discounts"


@dataclass(kw_only=True)
class ListPrice(JsonDoc):
    """One list price in USD, where it was found and the date that source carries (``undated``: none,
    and ``why_undated`` says why)."""

    usd: float
    source: str
    as_of: str = field(metadata={"doc": "the date on the source page (YYYY-MM-DD), or undated"})
    note: str = ""
    why_undated: str | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("note",)


@dataclass(kw_only=True)
class BilledLine(JsonDoc):
    """One billed quantity at one price: ``usd = quantity / per × price_usd``."""

    item: str = field(metadata={"doc": "reads, writes, deletes, or ssd/hdd node-hours"})
    quantity: float
    per: float
    price_usd: float
    usd: float
    source: str
    as_of: str = field(metadata={"doc": "the date on the source page (YYYY-MM-DD), or undated"})
    note: str = ""
    why_undated: str | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("note",)


@dataclass(kw_only=True)
class WindowCost(JsonDoc):
    """One window (the launch's hour, the ramp) at list prices: its billed lines, and what the data
    it adds costs per month to keep (billed for as long as the data stays)."""

    usd: float
    lines: list[BilledLine] = field(default_factory=list)
    stored_gib: float = 0.0
    storage_usd_per_month: float = 0.0
    storage_price: ListPrice | None = None
    ALWAYS: ClassVar[tuple[str, ...]] = ("lines", "stored_gib", "storage_usd_per_month", "storage_price")


@dataclass(kw_only=True)
class PricesUsed(JsonDoc):
    """Which prices a cost used: the table (and override), the oldest date among them (``undated`` when any
    of them carries none), the location."""

    source: str
    as_of: str
    location: str
    location_type: str


@dataclass(kw_only=True)
class PlanCost(JsonDoc):
    """A cell's launch at list prices (all figures modelled: an estimate, not a bill)."""

    backend: str
    launch_usd_per_hour: float
    ramp_usd: float | None = field(metadata={"doc": "the ramp to the target (null: no ramp planned)"})
    breakdown: dict[str, WindowCost] = field(
        metadata={"doc": "launch_hour and (with a ramp) ramp: the billed lines of each"})
    prices: PricesUsed
    nodes: int | None = field(default=None, metadata={"doc": "Bigtable: the nodes priced (at least what the peak "
                                                              "needs at Google's per-node maximum)"})
    storage: str | None = None
    not_priced: list[str] = field(default_factory=list, metadata={
        "doc": "operations of the mix the model cannot price (a query's reads depend on its results)"})
    notes: list[str] = field(default_factory=list)
    label: str = LABEL
    modelled: bool = True
    ALWAYS: ClassVar[tuple[str, ...]] = ("nodes", "storage", "not_priced", "notes", "label", "modelled")
