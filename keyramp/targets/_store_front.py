"""A run's store proxies: the store-like target (``[emulator] fidelity = "store"``,
docs/fidelity.md) puts one in front of each emulator the run uses.

Each cell: before it (reset, prepare, preload, warm-up) the proxy only forwards; when its
measured phase starts the proxy gets a fresh store model with the clock at zero, so the model
sees the cell's schedule from its first second as the forecast sees the launch; when the
phase ends the proxy's counts become the cell's ``store_model`` and it forwards only again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from keyramp.backends import spec_for
from keyramp.targets._proxy_process import ProxyProcess, upstream_of
from keyramp.targets._proxy_stats import ProxyConfig

if TYPE_CHECKING:
    from keyramp.backends import Target
    from keyramp.profile import Cell, Profile

__all__ = ["StoreFront"]


class StoreFront:
    """The proxies of one run, by emulator kind."""

    def __init__(self, profile: Profile, *, state_dir: Path) -> None:
        self.profile = profile
        self.state_dir = state_dir
        self.proxies: dict[str, ProxyProcess] = {}
        #: The cell whose measured phase the proxy models now, and its unindexed fields.
        self._exempt: dict[str, tuple[str, ...]] = {}

    def open(self, endpoints: Mapping[str, str], store_of: Mapping[str, str],
             note: Callable[[str], None]) -> dict[str, str]:
        """Start a proxy in front of each emulator; returns the proxies' endpoints by kind. An
        endpoint that is itself a shared proxy (``emulators up --fidelity store``) is replaced by
        the emulator behind it: the run models each cell with its own, fresh model."""
        out = {}
        for kind, endpoint in endpoints.items():
            upstream = upstream_of(self.state_dir, endpoint) or endpoint
            proxy = ProxyProcess(store=store_of[kind], upstream=upstream, config=ProxyConfig(mode="off"),
                                 log_dir=self.state_dir / "logs").start()
            self.proxies[kind] = proxy
            out[kind] = proxy.endpoint
            note(f"{proxy.describe()}")
        return out

    def upstream(self, kind: str) -> str:
        return self.proxies[kind].upstream

    def config(self, cell: Cell, *, mode: str) -> ProxyConfig:
        settings = self.profile.emulator
        launch = self.profile.launch
        cluster = spec_for(cell.backend).tablets
        nodes_kind = cluster is not None and cluster.box().kind == "nodes"
        return ProxyConfig(mode=mode, scale=settings.scale,
                           time_scale=settings.time_scale if settings.time_scale is not None else cell.time_scale,
                           nodes=(launch.nodes or 1) if launch is not None and nodes_kind else 1,
                           storage=launch.storage if launch is not None and nodes_kind else None,
                           seed=self.profile.seed, exempt=self._exempt.get(cell.id, ()))

    def before_cell(self, kind: str, cell: Cell, address: Target) -> None:
        self._exempt[cell.id] = tuple(sorted(address.unindexed))
        self.proxies[kind].configure(self.config(cell, mode="off"))

    def measuring(self, kind: str, cell: Cell) -> None:
        self.proxies[kind].configure(self.config(cell, mode="store"))

    def measured(self, kind: str, cell: Cell) -> dict[str, Any] | None:
        """The proxy's counts for the cell's measured phase (None if it cannot be reached)."""
        proxy = self.proxies[kind]
        if proxy.died() is not None:
            return None
        try:
            return proxy.configure(self.config(cell, mode="off"))
        except Exception:  # noqa: BLE001 - a proxy that stopped answering loses its counts, never the cell's
            return None

    def died(self, kind: str) -> str | None:
        proxy = self.proxies.get(kind)
        return None if proxy is None else proxy.died()

    def describe(self) -> dict[str, Any]:
        """The run's target for the manifest and the summary (``results.TargetModel``'s JSON)."""
        settings = self.profile.emulator
        clock = ("each cell's schedule time scale" if settings.time_scale is None
                 else f"time scale {settings.time_scale:g}")
        return {"fidelity": "store", "scale": settings.scale, "time_scale": settings.time_scale, "point": "mid",
                "description": (f"store model at scale 1/{settings.scale:g}, {clock}, mid point of each store's "
                                "parameter box, in front of the emulators (modelled: not the emulator, not the cloud)"),
                "proxies": {kind: p.describe() for kind, p in self.proxies.items()}}

    def close(self) -> None:
        for proxy in self.proxies.values():
            proxy.stop()
        self.proxies.clear()
