"""What a cell's load costs at list prices: the launch's hour at target, and the ramp to it.

Billable quantities come from the cell's op mix (``_project.op_mix``: rows per operation
read, written and deleted; a batch counts its rows), so the cost counts what the forecast
counts, except where the store bills an operation otherwise (``prices.json`` ``billed_as``: a
Firestore ``increment`` is a field transform, one write and no read). Firestore and Datastore
mode bill per document read, written and deleted (index entry writes are not billed apart:
``prices.json`` cites it); Bigtable bills its nodes by the hour, busy or idle, so its cost is
node-hours of the nodes the caller plans — never fewer than the peak needs at Google's published
per-node maximum rows/s.

Storage is reported apart, as what the data a window adds costs per month to keep: it is
billed for as long as the data stays, not for the hour that wrote it.

Every figure is an estimate at list prices, before free tier and discounts (``LABEL``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from keyramp.backends import store_params
from keyramp.core import UsageError, fmt
from keyramp.forecast._mix import op_mix
from keyramp.forecast._prices import LABEL, PRICE_UNITS, UNDATED, Location, OpBilling, Price, Prices, StorePrices
from keyramp.keys import parse_shape
from keyramp.results import BilledLine, ListPrice, PlanCost, PricesUsed, WindowCost

if TYPE_CHECKING:
    from keyramp.forecast._mix import OpMix
    from keyramp.profile import Schedule, WorkloadSettings

__all__ = ["GIB", "CellCost", "Cost", "CostLine", "PriceRef", "Usage", "cell_cost", "cost_notes", "format_usd",
           "min_nodes", "price_usage", "record_bytes", "usage_of"]

GIB = float(1 << 30)
_HOUR = 3600.0
_Doc = TypeVar("_Doc", BilledLine, ListPrice)


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Billable quantities of a window: rows read, written (not deleted), deleted; node-hours;
    and the GiB the window's inserts add."""

    reads: float = 0.0
    writes: float = 0.0
    deletes: float = 0.0
    node_hours: float = 0.0
    stored_gib: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(reads=self.reads + other.reads, writes=self.writes + other.writes,
                     deletes=self.deletes + other.deletes, node_hours=self.node_hours + other.node_hours,
                     stored_gib=self.stored_gib + other.stored_gib)


def usage_of(mix: OpMix, ops: float, *, bytes_per_record: float = 0.0,
             billed_as: Mapping[str, OpBilling] | None = None) -> Usage:
    """``ops`` operations of ``mix``: the rows they read, write and delete, and what their inserts store.
    ``billed_as``: the store's bill of an operation where it differs from the rows the forecast counts
    (a Firestore ``increment`` is one write, no read); only for built-in operations."""
    reads, writes = mix.reads_per_op, mix.writes_per_op - mix.deletes_per_op
    for op, bill in (billed_as or {}).items():
        share = mix.shares.get(op, 0.0)
        if share > 0:
            rows = op_mix({op: 1.0}, None)  # what the forecast counts for one
            reads += share * (bill.reads - rows.reads_per_op)
            writes += share * (bill.writes - (rows.writes_per_op - rows.deletes_per_op))
    return Usage(reads=reads * ops, writes=writes * ops, deletes=mix.deletes_per_op * ops,
                 stored_gib=mix.inserts_per_op * ops * bytes_per_record / GIB)


def record_bytes(workload: WorkloadSettings) -> float:
    """Stored bytes of one record: the ``[workload.document]`` shape's size, else the payload +
    a small property overhead. Index entries and the key add more (an under-estimate)."""
    shape = parse_shape(workload.document or {})
    if shape:
        return float(shape.size_bytes())
    return float(workload.value_size) + 32.0


@dataclass(frozen=True, kw_only=True)
class CostLine:
    """One billed quantity at one price (``usd = quantity / per × price.usd``)."""

    item: str  # "reads", "writes", "deletes", "ssd node-hours"
    quantity: float
    per: float
    price: Price

    @property
    def usd(self) -> float:
        return self.quantity / self.per * self.price.usd

    def to_doc(self) -> BilledLine:
        return _undated(self.price, BilledLine(item=self.item, quantity=self.quantity, per=self.per,
                                               price_usd=self.price.usd, usd=self.usd, source=self.price.source,
                                               as_of=self.price.as_of, note=self.price.note))

    @classmethod
    def from_doc(cls, doc: BilledLine) -> CostLine:
        price = Price(usd=doc.price_usd, source=doc.source, as_of=doc.as_of, note=doc.note,
                      why_undated=doc.why_undated or "")
        return cls(item=doc.item, quantity=doc.quantity, per=doc.per, price=price)


def _undated(price: Price, doc: _Doc) -> _Doc:
    """``doc`` with ``why_undated``, written only for a price whose source carries no date."""
    if not price.dated:
        doc.why_undated = price.why_undated
    return doc


@dataclass(frozen=True, kw_only=True)
class Cost:
    """One window at list prices: its billed lines, and what the data it adds costs per month."""

    lines: tuple[CostLine, ...] = ()
    stored_gib: float = 0.0
    storage: Price | None = None

    @property
    def usd(self) -> float:
        return sum(line.usd for line in self.lines)

    @property
    def storage_usd_per_month(self) -> float:
        return self.stored_gib * (self.storage.usd if self.storage else 0.0)

    def to_doc(self) -> WindowCost:
        storage = self.storage
        return WindowCost(usd=self.usd, lines=[line.to_doc() for line in self.lines], stored_gib=self.stored_gib,
                          storage_usd_per_month=self.storage_usd_per_month,
                          storage_price=None if storage is None else _undated(storage, ListPrice(
                              usd=storage.usd, source=storage.source, as_of=storage.as_of, note=storage.note)))

    @classmethod
    def from_doc(cls, doc: WindowCost) -> Cost:
        storage = doc.storage_price
        return cls(lines=tuple(CostLine.from_doc(x) for x in doc.lines), stored_gib=doc.stored_gib,
                   storage=None if storage is None else Price(usd=storage.usd, source=storage.source,
                                                              as_of=storage.as_of, note=storage.note,
                                                              why_undated=storage.why_undated or ""))


def _line(item: str, quantity: float, location: Location, name: str) -> CostLine:
    return CostLine(item=item, quantity=quantity, per=PRICE_UNITS[name][1], price=location.prices[name])


def price_usage(usage: Usage, store: StorePrices, location: Location, *, storage: str | None = None) -> Cost:
    """``usage`` at ``location``'s prices: per operation, or (Bigtable) node-hours on ``storage``."""
    if store.billing == "nodes":
        kind = _storage(storage)
        return Cost(lines=(_line(f"{kind} node-hours", usage.node_hours, location, f"node_hour_{kind}"),),
                    stored_gib=usage.stored_gib, storage=location.prices[f"storage_gib_month_{kind}"])
    lines = tuple(_line(item, quantity, location, f"{item}_per_100k")
                  for item, quantity in (("reads", usage.reads), ("writes", usage.writes), ("deletes", usage.deletes)))
    return Cost(lines=lines, stored_gib=usage.stored_gib, storage=location.prices["storage_gib_month"])


def _storage(storage: str | None) -> str:
    kind = storage or "ssd"
    if kind not in ("ssd", "hdd"):
        raise UsageError(f"--storage: one of ssd, hdd, got {storage!r}")
    return kind


def min_nodes(backend: str, mix: OpMix, peak_ops_per_s: float, storage: str | None = None) -> int:
    """Bigtable nodes below which ``peak_ops_per_s`` of ``mix`` cannot be served at all: rows/s at
    Google's published per-node maximum (the ``high`` end of the model's node ranges)."""
    box = store_params(backend, storage)
    write, read = box.ranges["node_write_rows_per_s"].high, box.ranges["node_read_rows_per_s"].high
    load = peak_ops_per_s * (mix.writes_per_op / write + mix.reads_per_op / read)
    return max(1, math.ceil(load - 1e-9))


@dataclass(frozen=True, kw_only=True)
class PriceRef:
    """Which prices a cost used: the table (and override), the oldest date among them, the location."""

    source: str
    as_of: str
    location: str
    location_type: str

    def to_doc(self) -> PricesUsed:
        return PricesUsed(source=self.source, as_of=self.as_of, location=self.location,
                          location_type=self.location_type)

    @classmethod
    def from_doc(cls, doc: PricesUsed) -> PriceRef:
        return cls(source=doc.source, as_of=doc.as_of, location=doc.location, location_type=doc.location_type)

    @classmethod
    def of(cls, prices: Prices, location: Location, *costs: Cost) -> PriceRef:
        """``as_of``: the oldest date among the prices ``costs`` used (a billed quantity, stored data; all of the
        location's without);
        ``undated`` when any of them carries no date (a cost is no newer than its oldest price)."""
        used = ([line.price for c in costs for line in c.lines if line.quantity > 0]
                + [c.storage for c in costs if c.storage and c.stored_gib > 0])
        dates = [p.as_of for p in used or location.prices.values()]
        return cls(source=prices.source, as_of=UNDATED if UNDATED in dates else min(dates),
                   location=location.name, location_type=location.type)


@dataclass(frozen=True, kw_only=True)
class CellCost:
    """A cell's launch at list prices (all figures modelled: an estimate, not a bill)."""

    backend: str
    launch_usd_per_hour: float
    #: The ramp to the target (None: no ramp given).
    ramp_usd: float | None
    #: "launch_hour" and (with a ramp) "ramp": the billed lines of each.
    breakdown: Mapping[str, Cost]
    prices: PriceRef
    #: Bigtable: the nodes priced (at least what the peak needs) and their storage type.
    nodes: int | None = None
    storage: str | None = None
    #: Operations of the mix the model cannot price (a query's reads depend on its results).
    not_priced: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    label: str = LABEL

    def to_doc(self) -> PlanCost:
        """The document a plan holds (``cells[id].plan.cost``)."""
        return PlanCost(backend=self.backend, launch_usd_per_hour=self.launch_usd_per_hour, ramp_usd=self.ramp_usd,
                        breakdown={k: c.to_doc() for k, c in self.breakdown.items()}, prices=self.prices.to_doc(),
                        nodes=self.nodes, storage=self.storage, not_priced=list(self.not_priced),
                        notes=list(self.notes), label=self.label)

    def to_json(self) -> dict[str, Any]:
        return self.to_doc().to_json()

    @classmethod
    def from_json(cls, doc: Any, *, where: str = "") -> CellCost:
        """``DocError`` naming the field when ``doc`` is not a plan's cost document."""
        return cls.from_doc(PlanCost.from_json(doc, where=where))

    @classmethod
    def from_doc(cls, doc: PlanCost) -> CellCost:
        return cls(backend=doc.backend, launch_usd_per_hour=doc.launch_usd_per_hour, ramp_usd=doc.ramp_usd,
                   breakdown={k: Cost.from_doc(v) for k, v in doc.breakdown.items()},
                   prices=PriceRef.from_doc(doc.prices), nodes=doc.nodes, storage=doc.storage,
                   not_priced=tuple(doc.not_priced), notes=tuple(doc.notes), label=doc.label or LABEL)


def cost_notes(store: StorePrices, mix: OpMix, *, python_workload: bool = False) -> tuple[str, ...]:
    """What a reader of the figure must know: what is not priced, and how the store bills."""
    notes = []
    if mix.not_projected:
        notes.append(f"not priced: {', '.join(mix.not_projected)} (a query bills a read per result, plus index "
                     "entries it reads; the key stream does not show how many)")
    if python_workload:
        notes.append("a Python workload's operations are priced as the forecast counts them: an insert or one read")
    if store.index_entry_writes is not None and not store.index_entry_writes.billed:
        notes.append(f"index entry writes are not billed apart ({store.index_entry_writes.source}); "
                     "index entries count as stored data")
    if not python_workload:
        for op, bill in store.billed_as.items():
            if mix.shares.get(op, 0.0) > 0:
                notes.append(f"an {op} bills {fmt.plural(bill.reads, 'read')} and "
                             f"{fmt.plural(bill.writes, 'write')} ({bill.source})")
    if store.billing == "nodes":
        notes.append("nodes bill by the hour whether busy or idle, at least one hour each; reads, writes and "
                     "ReadModifyWrite (increment) are not billed per operation (a ramp shorter than an hour still "
                     "bills whole node-hours)")
    return tuple(notes)


def cell_cost(*, backend: str, mix: OpMix, target_ops_per_s: float, prices: Prices,
              ramp: Schedule | None = None, ramp_s: float = 0.0, location: str | None = None,
              nodes: int | None = None, storage: str | None = None, bytes_per_record: float = 0.0,
              python_workload: bool = False) -> CellCost:
    """The cost of ``backend`` serving ``mix`` at ``target_ops_per_s`` for an hour, and of ``ramp``
    (rate over ``ramp_s`` seconds) when given. Bigtable: ``nodes`` on ``storage``, raised to what
    the peak needs (:func:`min_nodes`)."""
    if not 0 <= target_ops_per_s < math.inf:
        raise UsageError(f"--target: ops/s must be a number >= 0, got {target_ops_per_s!r}")
    store = prices.for_backend(backend)
    loc = store.location(location, src=prices.files[-1] if prices.files else "prices")
    kind: str | None = None
    if store.billing == "nodes":
        kind = _storage(storage)
        peak = max(target_ops_per_s, ramp.peak(ramp_s) if ramp is not None and ramp_s > 0 else 0.0)
        nodes = max(nodes or 0, min_nodes(backend, mix, peak, kind))
    billed_nodes = float(nodes or 0) if kind else 0.0  # node-hours bill Bigtable only
    billed_as = None if python_workload else store.billed_as  # a Python workload's op names are its own
    hour = usage_of(mix, target_ops_per_s * _HOUR, bytes_per_record=bytes_per_record, billed_as=billed_as) + Usage(
        node_hours=billed_nodes)
    breakdown = {"launch_hour": price_usage(hour, store, loc, storage=kind)}
    if ramp is not None:
        ramp_usage = usage_of(mix, ramp.total_ops(ramp_s), bytes_per_record=bytes_per_record,
                              billed_as=billed_as) + Usage(node_hours=billed_nodes * ramp_s / _HOUR)
        breakdown["ramp"] = price_usage(ramp_usage, store, loc, storage=kind)
    return CellCost(backend=backend, launch_usd_per_hour=breakdown["launch_hour"].usd,
                    ramp_usd=breakdown["ramp"].usd if "ramp" in breakdown else None, breakdown=breakdown,
                    prices=PriceRef.of(prices, loc, *breakdown.values()), nodes=nodes if kind else None, storage=kind,
                    not_priced=mix.not_projected, notes=cost_notes(store, mix, python_workload=python_workload))


def format_usd(value: float) -> str:
    """$1,234.50 / $0.0123 (three significant digits below a dollar, so a cent is not lost)."""
    if value == 0:
        return "$0"
    return f"${value:,.2f}" if value >= 1 else f"${value:.3g}"
