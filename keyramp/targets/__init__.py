"""Where the load goes: the official emulators (start / reuse / attach, reset), with or without
a store proxy in front of each (the store-like target: ``_proxy``, docs/fidelity.md), the real
services behind the explicit cloud opt-in, and the loopback latency proxy — behind one seam,
``RunTarget`` (``_base``), that the runner and the distributed master call alike.

This module stays light (``keyramp emulators status`` imports the package): the target
classes, which pull in the store clients, load when a run needs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from keyramp.targets._base import RunTarget, Warmup

if TYPE_CHECKING:
    from keyramp.profile import Profile
    from keyramp.targets._cloud import (
        BudgetCosts,
        CellBudget,
        RunBudget,
        preflight,
        print_budgets,
        render_budget,
        run_budget,
    )
    from keyramp.targets._emulators import (
        EMULATORS,
        EmulatorManager,
        RunningEmulator,
        endpoints_from_env,
        free_port,
        log_tail,
        sdk_root,
    )
    from keyramp.targets._proxy_process import forget_shared, load_shared, shared_proxies
    from keyramp.targets._proxy_stats import ProxyConfig


class CloudCaps(TypedDict, total=False):
    """Command-line cap overrides (None = the profile's)."""

    max_ops_per_s: float | None
    max_duration_s: float | None


@dataclass(frozen=True, kw_only=True)
class TargetOptions:
    """What the command line says about targets."""

    #: ``--allow-cloud PROJECT``: the opt-in a ``target = "cloud"`` profile needs (docs/cloud.md).
    allow_cloud: str | None = None
    #: Command-line cap overrides: ``max_ops_per_s`` / ``max_duration_s`` (None = the profile's).
    cloud_caps: CloudCaps = field(default_factory=CloudCaps)
    #: Emulator endpoints by emulator kind; ``None`` = attach from the environment, reuse or start.
    endpoints: Mapping[str, str] | None = None
    state_dir: Path | None = None
    #: Prices a cloud budget (``keyramp.forecast._run_cost.budget_costs``), printed under it.
    budget_costs: BudgetCosts | None = None


def target_class(kind: str) -> type[RunTarget]:
    """The class that serves ``profile.target == kind``."""
    from keyramp.targets._cloud_target import CloudTarget  # deferred: start-up cost (this package stays light)
    from keyramp.targets._emulator_target import EmulatorTarget  # deferred: start-up cost

    classes: dict[str, type[RunTarget]] = {cls.kind: cls for cls in (EmulatorTarget, CloudTarget)}
    return classes[kind]


def open_target(profile: Profile, options: TargetOptions) -> RunTarget:
    """The target ``profile`` runs against; every refusal (opt-in, emulator variables, caps)
    here, before a run directory exists."""
    from keyramp.targets._cloud import check_opt_in  # deferred: start-up cost (this package stays light)
    from keyramp.targets._cloud_target import CloudTarget  # deferred: start-up cost
    from keyramp.targets._emulator_target import EmulatorTarget  # deferred: start-up cost

    if check_opt_in(profile, allow_cloud=options.allow_cloud):
        return CloudTarget(profile, allow_cloud=options.allow_cloud, budget_costs=options.budget_costs,
                           **options.cloud_caps)
    return EmulatorTarget(profile, endpoints=options.endpoints, state_dir=options.state_dir)


if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
