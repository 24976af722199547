"""What a cloud run will cost at list prices: the plan of ``keyramp run --plan`` and ``keyramp
calibrate suite``, priced before anything runs (no network: the plan and the price table only).

Per cell: the planned operations (measured + warm-up; a closed-model cell at its cap, an upper
bound) through the cell's op mix as the profile declares it, the preload's writes, and the
clean-up that deletes every record the cell wrote (listing them bills a read per document on
Firestore; Datastore mode's keys-only results are free small operations). Bigtable: the
nodes the run's peak needs at Google's per-node maximum (or ``[launch] nodes`` if more), billed
at least one hour each. The target layer prints it through a hook (``print_budgets(costs=…)``,
``TargetOptions.budget_costs``): it cannot import the forecast layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keyramp.backends import spec_for
from keyramp.core import fmt
from keyramp.forecast._cost import (
    GIB,
    Cost,
    PriceRef,
    Usage,
    format_usd,
    min_nodes,
    price_usage,
    record_bytes,
    usage_of,
)
from keyramp.forecast._mix import op_mix
from keyramp.forecast._prices import LABEL, Prices, as_of_text
from keyramp.results import PricesUsed, WindowCost

if TYPE_CHECKING:
    from keyramp.profile import Profile
    from keyramp.targets import CellBudget, RunBudget

__all__ = ["RunCellCost", "RunCost", "budget_costs", "render_run_cost", "run_cost"]

@dataclass(frozen=True, kw_only=True)
class RunCellCost:
    cell_id: str
    backend: str
    cost: Cost
    prices: PriceRef
    ops: float
    preload: float
    cleanup_deletes: float
    #: Reads the clean-up's listing bills (Firestore: one per document).
    cleanup_reads: float = 0.0
    nodes: int | None = None
    #: Bigtable: the nodes the run's peak needs at Google's per-node maximum (``nodes`` may be more).
    needed_nodes: int | None = None
    storage: str | None = None
    #: A closed-model cell: operations bounded by the caps, not planned (an upper bound).
    capped: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"cell_id": self.cell_id, "backend": self.backend, "usd": self.cost.usd,
                "cost": self.cost.to_doc().to_json(), "prices": self.prices.to_doc().to_json(), "ops": self.ops,
                "preload": self.preload, "cleanup_deletes": self.cleanup_deletes, "cleanup_reads": self.cleanup_reads,
                "nodes": self.nodes, "needed_nodes": self.needed_nodes, "storage": self.storage, "capped": self.capped}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RunCellCost:
        return cls(cell_id=str(doc["cell_id"]), backend=str(doc["backend"]),
                   cost=Cost.from_doc(WindowCost.from_json(doc["cost"], where="cost")),
                   prices=PriceRef.from_doc(PricesUsed.from_json(doc["prices"], where="prices")),
                   ops=float(doc["ops"]), preload=float(doc["preload"]), cleanup_deletes=float(doc["cleanup_deletes"]),
                   cleanup_reads=float(doc.get("cleanup_reads", 0.0)), nodes=doc.get("nodes"),
                   needed_nodes=doc.get("needed_nodes"), storage=doc.get("storage"),
                   capped=bool(doc.get("capped", False)))


@dataclass(frozen=True, kw_only=True)
class RunCost:
    """A cloud run's estimated cost, per cell (all modelled: an estimate, not a bill)."""

    profile: str
    cells: tuple[RunCellCost, ...]
    #: The data stays after the run ([cloud] cleanup = false): it bills storage every month.
    keeps_data: bool = False
    label: str = LABEL

    @property
    def usd(self) -> float:
        return sum(c.cost.usd for c in self.cells)

    @property
    def storage_usd_per_month(self) -> float:
        return sum(c.cost.storage_usd_per_month for c in self.cells) if self.keeps_data else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"profile": self.profile, "usd": self.usd, "cells": [c.to_json() for c in self.cells],
                "keeps_data": self.keeps_data, "storage_usd_per_month": self.storage_usd_per_month,
                "label": self.label, "modelled": True}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RunCost:
        return cls(profile=str(doc["profile"]), cells=tuple(RunCellCost.from_json(c) for c in doc["cells"]),
                   keeps_data=bool(doc.get("keeps_data", False)), label=str(doc.get("label") or LABEL))


def _cell_cost(profile: Profile, plan: RunBudget, cell: CellBudget, prices: Prices,
               location: str | None) -> RunCellCost:
    workload = profile.workload
    store = prices.for_backend(cell.backend)
    loc = store.location(location, src=prices.files[-1] if prices.files else "prices")
    mix = op_mix({}, workload)  # what the profile declares: the run has not counted anything yet
    capped = cell.total_ops is None
    ops = plan.caps.max_ops_per_s * cell.wall_s if capped else (cell.total_ops or 0.0) + (cell.warmup_ops or 0.0)
    records = cell.preload_records + mix.inserts_per_op * ops
    deletes = records if plan.cleanup else 0.0
    cloud = spec_for(cell.backend).cloud  # what listing the records to delete bills: the store's own rule
    listing = deletes * (cloud.listing_reads_per_record if cloud is not None else 0.0)
    billed_as = None if workload.user else store.billed_as  # a Python workload's op names are its own
    usage = usage_of(mix, ops, billed_as=billed_as) + Usage(
        writes=float(cell.preload_records), deletes=deletes, reads=listing,
        stored_gib=records * record_bytes(workload) / GIB)
    nodes = needed = kind = None
    if store.billing == "nodes":
        launch = profile.launch
        kind = (launch.storage if launch else None) or "ssd"
        peak = plan.caps.max_ops_per_s if capped else (cell.peak_ops_per_s or 0.0)
        needed = min_nodes(cell.backend, mix, peak, kind)
        nodes = max((launch.nodes if launch else None) or 1, needed)
        usage += Usage(node_hours=nodes * max(1.0, cell.wall_s / 3600.0))  # at least one hour per node
    cost = price_usage(usage, store, loc, storage=kind)
    return RunCellCost(cell_id=cell.cell_id, backend=cell.backend, cost=cost, prices=PriceRef.of(prices, loc, cost),
                       ops=ops, preload=float(cell.preload_records),
                       cleanup_deletes=deletes, cleanup_reads=listing, nodes=nodes, needed_nodes=needed, storage=kind,
                       capped=capped)


def run_cost(profile: Profile, plan: RunBudget, prices: Prices, *, location: str | None = None) -> RunCost:
    """The estimated cost of running ``plan`` (``targets._cloud.run_budget``) at ``location``'s prices
    (each store's default location when None)."""
    by_id = {c.cell_id: c for c in plan.cells}
    cells = tuple(_cell_cost(profile, plan, by_id[c.id], prices, location) for c in profile.cells if c.id in by_id)
    return RunCost(profile=plan.profile, cells=cells, keeps_data=not plan.cleanup, label=prices.label)


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:,.3g}"


def render_run_cost(cost: RunCost) -> str:
    """The cost lines printed under the plan."""
    lines = [f"cost: {format_usd(cost.usd)} ({cost.label}; modelled from the planned operations)"]
    for c in cost.cells:
        billed = " + ".join(f"{_count(line.quantity)} {line.item} {format_usd(line.usd)}"
                            for line in c.cost.lines if line.quantity > 0) or "nothing billed"
        where = f"{c.prices.location} ({c.prices.location_type}), {as_of_text(c.prices.as_of)}"
        lines.append(f"  {c.cell_id}: {format_usd(c.cost.usd)} = {billed}; {where}")
        if c.nodes is not None:
            lines.append(f"      {fmt.plural(c.nodes, (c.storage or '').upper() + ' node')} for the run (its peak "
                         f"needs {c.needed_nodes} at Google's per-node maximum; [launch] nodes if more): "
                         "the instance's own nodes are what bills, each at least one hour")
        else:
            parts = [f"{_count(c.ops)} operations" + (" (capped: closed model, an upper bound)" if c.capped else "")]
            if c.preload:
                parts.append(f"{_count(c.preload)} records preloaded")
            if c.cleanup_deletes:
                parts.append(f"{_count(c.cleanup_deletes)} deleted by the clean-up"
                             + (f" (listing them: {_count(c.cleanup_reads)} reads)" if c.cleanup_reads else ""))
            lines.append(f"      {', '.join(parts)}")
    if cost.keeps_data:
        lines.append(f"  the data stays ([cloud] cleanup = false): about {format_usd(cost.storage_usd_per_month)} "
                     "a month of storage until you delete it")
    return "\n".join(lines)


def budget_costs(prices: Prices, *, location: str | None = None) -> Callable[[Profile, RunBudget], str]:
    """The hook the target layer calls to print a cloud budget's cost (it cannot import this layer)."""

    def text(profile: Profile, plan: RunBudget) -> str:
        return render_run_cost(run_cost(profile, plan, prices, location=location))

    return text
