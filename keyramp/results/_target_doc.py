"""What a run's cells ran against when it was not the official emulator as it is: the
store-like target (docs/fidelity.md) — a store proxy in front of each emulator running the
store model at 1/K of its capacities and 1/T of its delays.

``RunSummary.target`` and ``RunManifest.target`` say it once for the run (``TargetModel``),
``CellSummary.store_model`` what the proxy saw in the cell's measured phase: what it
forwarded, modelled and throttled (measured, by the proxy), the model's parameters
(modelled), and the model's own state at the end. Every view that shows figures of such a
run says so (``TargetModel.describe``): nobody must mistake them for the emulator's or the cloud's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from keyramp.results._doc import JsonDoc
from keyramp.results._doc import doc as _doc

__all__ = ["CellStoreModel", "TargetModel"]


@dataclass(kw_only=True)
class TargetModel(JsonDoc):
    """The run's target when a store model stood in front of the emulators."""

    fidelity: str = field(metadata=_doc("'store': the store model in front of the emulators"))
    scale: float | None = field(default=None, metadata=_doc("K: capacities divided by K"))
    time_scale: float | None = field(default=None, metadata=_doc("T: delays divided by T (null: each cell's "
                                                                 "schedule time_scale)"))
    point: str | None = field(default=None, metadata=_doc("the point of each store's parameter box: 'mid'"))
    description: str | None = None
    proxies: dict[str, str] = field(default_factory=dict, metadata=_doc("emulator kind -> the proxy in front of it"))

    def describe(self) -> str:
        """One line for every view: what the figures were measured against."""
        if self.description:
            return self.description
        clock = "each cell's schedule time scale" if self.time_scale is None else f"time scale {self.time_scale:g}"
        return (f"store model at scale 1/{(self.scale or 1):g}, {clock}, {self.point or 'mid'} point of the "
                "parameter box, in front of the emulators (not the emulator, not the cloud)")


@dataclass(kw_only=True)
class CellStoreModel(JsonDoc):
    """One cell's measured phase as the store proxy saw it."""

    description: str | None = None
    scale: float | None = None
    time_scale: float | None = None
    point: str | None = None
    nodes: int | None = None
    storage: str | None = None
    requests: int | None = field(default=None, metadata=_doc("requests the proxy received (measured)"))
    modelled: int | None = field(default=None, metadata=_doc("offered to the store model"))
    not_modelled: int | None = field(default=None, metadata=_doc("forwarded unmodelled: queries, admin, "
                                                                 "transaction bookkeeping, undecodable"))
    undecodable: int | None = None
    throttled: int | None = field(default=None, metadata=_doc("answered with the store's throttling status"))
    throttled_by_cause: dict[str, int] = field(default_factory=dict)
    throttled_share: float | None = field(default=None, metadata=_doc("throttled / modelled"))
    delay_s: float | None = field(default=None, metadata=_doc("the model's queueing delays the proxy slept, in all"))
    methods: dict[str, dict[str, Any]] = field(default_factory=dict, metadata=_doc("the counts per RPC"))
    params: dict[str, Any] | None = field(default=None, metadata=_doc("the model's parameters (modelled; "
                                                                      "published units, before K and T)"))
    model: dict[str, Any] | None = field(default=None, metadata=_doc("the model's state at the end: tablets, "
                                                                     "splits"))

    @classmethod
    def from_stats(cls, stats: dict[str, Any]) -> CellStoreModel:
        """From the proxy's counts (its control RPC's JSON: the wire edge)."""
        totals = stats.get("totals") or {}
        config = stats.get("config") or {}
        modelled = int(totals.get("modelled") or 0)
        throttled = int(totals.get("throttled") or 0)
        return cls(description=stats.get("description"), scale=config.get("scale"),
                   time_scale=config.get("time_scale"), point=config.get("point"), nodes=config.get("nodes"),
                   storage=config.get("storage"), requests=totals.get("requests"), modelled=modelled,
                   not_modelled=totals.get("not_modelled"), undecodable=totals.get("undecodable"),
                   throttled=throttled, throttled_by_cause=dict(totals.get("throttled_by_cause") or {}),
                   throttled_share=round(throttled / modelled, 6) if modelled else None,
                   delay_s=totals.get("delay_s"), methods=dict(stats.get("methods") or {}),
                   params=stats.get("params"), model=stats.get("model"))

    def line(self) -> str:
        """``store model at scale 1/100 …: 4,812 of 20,000 modelled requests throttled (24.1 %) …``."""
        share = f" ({self.throttled_share:.1%})" if self.throttled_share is not None else ""
        causes = ", ".join(f"{cause} {n:,}" for cause, n in sorted(self.throttled_by_cause.items()))
        return (f"{self.description or 'store model'}: {self.throttled or 0:,} of {self.modelled or 0:,} modelled "
                f"requests throttled{share}{f' ({causes})' if causes else ''}; {self.not_modelled or 0:,} forwarded "
                f"unmodelled ({self.undecodable or 0:,} undecodable)")
