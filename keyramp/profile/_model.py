"""The profile's sections, declared once (``_schema``): the typed objects the code reads.

The loader (``_profile.py``) validates a TOML table into a *resolved* mapping (every
default filled in); that mapping stays the wire and manifest format (JSON, Locust
messages to workers). ``Settings.from_data`` turns it into frozen objects once — on the
master from the profile file, on a worker from the frozen cell plan it receives.
``[workload]`` is declared in ``_workload.py``, ``[schedule]`` in ``_schedules.py`` and
``[launch]`` in ``_launch.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from keyramp.backends import DEFAULT_BACKEND, STORES, spec_for
from keyramp.core import UsageError
from keyramp.keys import STRATEGIES, make_strategy
from keyramp.profile._acknowledge import Acknowledge
from keyramp.profile._checks import (
    Bool,
    Check,
    Choice,
    Context,
    Duration,
    Int,
    Known,
    Names,
    Number,
    Pattern,
    Strings,
    Table,
    Text,
    Where,
    quoted,
)
from keyramp.profile._launch import LaunchSettings
from keyramp.profile._schedules import ScheduleSettings
from keyramp.profile._schema import Section, Sub, option
from keyramp.profile._workload import QuerySettings, WorkloadSettings

if TYPE_CHECKING:
    from keyramp.profile._schedules import Schedule
    from keyramp.profile._thresholds import Threshold

__all__ = [
    "Cell",
    "CloudSettings",
    "EmulatorSettings",
    "KeySettings",
    "LaunchSettings",
    "Profile",
    "QuerySettings",
    "ScheduleSettings",
    "Settings",
    "WorkloadSettings",
]

_DATABASE_ID = re.compile(r"\(default\)|[a-z][a-z0-9-]{2,61}[a-z0-9]")
_BIGTABLE_INSTANCE_ID = re.compile(r"[a-z][a-z0-9-]{4,31}[a-z0-9]")
_PROJECT_ID = re.compile(r"[a-z][a-z0-9-]{3,61}[a-z0-9]")


@dataclass(frozen=True, kw_only=True)
class KeySettings(Section):
    """``[keys]``: the key strategies compared and their parameters."""

    TABLE: ClassVar = "keys"
    strategies: tuple[str, ...] = field(metadata=option(
        Names(), toml="strategy", wire="strategy", default="random", bad=("bogus",),
        doc="named strategies (" + ", ".join(f"`{name}`" for name in STRATEGIES) + ") or key templates "
            "(below); a list expands into cells"))
    params: Mapping[str, Any] = field(metadata=option(
        Table(), default={}, doc="strategy parameters; `[keys.params.<strategy>]` for one strategy only"))

    @classmethod
    def finish(cls, out: dict[str, Any], given: Mapping[str, Any], ctx: Context) -> None:
        for strategy in out["strategy"]:  # named strategies and templates (parsed once here, before any load)
            try:
                make_strategy(strategy, seed=ctx.resolved["seed"], params=out["params"])
            except UsageError as exc:
                raise UsageError(f"{ctx.src}: keys.strategy: {exc}") from None


class _ModelClock(Check):
    """The store model's time scale: a number > 0, or ``"schedule"`` (each cell's own ``time_scale``)."""

    bad = ("x", 0, -1, True)

    def resolve(self, value: Any, at: Where) -> Any:
        if value == "schedule":
            return value
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
            raise UsageError(f"{at.label}: a number > 0 or \"schedule\", got {value!r}")
        return float(value)

    def typed(self, value: Any) -> Any:
        return None if value == "schedule" else float(value)

    def describe(self) -> str:
        return 'number > 0, or `"schedule"`'


#: The fields that only a store-like target reads.
_STORE_ONLY = ("scale", "time_scale")


@dataclass(frozen=True, kw_only=True)
class EmulatorSettings(Section):
    """``[emulator]``: how the official emulators behave, and whether a store model stands in
    front of them (``fidelity = "store"``: docs/fidelity.md)."""

    TABLE: ClassVar = "emulator"
    consistency: float = field(metadata=option(
        Number(maximum=1.0), default=1.0,
        doc="legacy Datastore emulator: the fraction of eventually consistent applies that succeed"))
    fidelity: str = field(metadata=option(
        Choice(("emulator", "store")), default="emulator", legacy="emulator",
        doc="`emulator`: the official emulators as they are (they never push back); `store`: a store proxy in "
            "front of each runs the store model at 1/`scale` and answers what the store would (docs/fidelity.md)"))
    scale: float = field(metadata=option(
        Number(), default=100, legacy=100.0,
        doc="K: the model's capacities (per key range, node, document) divided by K; run the schedule at 1/K of "
            "the launch (with `fidelity = \"store\"`)"))
    #: None: each cell's schedule ``time_scale`` (the model's clock runs with the schedule's).
    time_scale: float | None = field(metadata=option(
        _ModelClock(), default="schedule", legacy="schedule",
        doc="T: the model's delays (splits, placement) divided by T; `\"schedule\"`: the cell's own "
            "`schedule.time_scale`, so a compressed ramp meets splits as the launch would (with "
            "`fidelity = \"store\"`)"))

    @classmethod
    def applies(cls, given: Mapping[str, Any], ctx: Context) -> None:
        fidelity = given.get("fidelity", "emulator")
        for name in _STORE_ONLY:
            if name in given and fidelity != "store":
                raise UsageError(f"{ctx.src}: emulator.{name}: applies only with fidelity = \"store\" "
                                 "(a store model in front of the emulators; docs/fidelity.md)")
        if fidelity != "store":
            return
        if ctx.resolved.get("target") == "cloud":
            raise UsageError(f"{ctx.src}: emulator.fidelity: \"store\" models the store in front of the emulators; "
                             "target = 'cloud' runs on the real service")
        for backend in ctx.resolved.get("backend", ()):
            if spec_for(backend).proxy is None:
                raise UsageError(f"{ctx.src}: emulator.fidelity: {backend} has no store proxy (docs/fidelity.md)")


@dataclass(frozen=True, kw_only=True)
class CloudSettings(Section):
    """``[cloud]``: where ``target = "cloud"`` runs go and the hard caps that stop them (docs/cloud.md);
    validated whatever the target, so flipping ``target`` never uncovers a typo. Conservative caps:
    a mistyped rate must not become a large bill."""

    TABLE: ClassVar = "cloud"
    COLON: ClassVar = True
    instance: str = field(metadata=option(
        Pattern(_BIGTABLE_INSTANCE_ID, "Bigtable instance id", empty=True), default="",
        doc="Bigtable instance id (required for bigtable cells on the cloud)"))
    database: str = field(metadata=option(
        Pattern(_DATABASE_ID, "database id"), default="(default)", doc="Firestore / Datastore-mode database id"))
    max_ops_per_s: float = field(metadata=option(
        Number(), default=1000, doc="hard cap: a plan above it is refused, a run above it aborted"))
    max_duration_s: float = field(metadata=option(
        Duration(), toml="max_duration", default="10m",
        doc="hard cap on the whole run (every cell's warm-up + measured phase)"))
    cleanup: bool = field(metadata=option(
        Bool(), default=True, doc="delete each cell's kind/collection/table afterwards and verify it is gone"))

    @classmethod
    def finish(cls, out: dict[str, Any], given: Mapping[str, Any], ctx: Context) -> None:
        if ctx.resolved["target"] != "cloud":
            return
        # The default project id exists for the emulators; against the real service an
        # implicit project would be a guess, so the profile must name it.
        if "project" not in ctx.raw:
            raise UsageError(f"{ctx.src}: target = 'cloud' needs an explicit project = \"<project id>\"")
        for backend in ctx.resolved["backend"]:
            cloud_spec = spec_for(backend).cloud
            if cloud_spec is None:
                raise UsageError(f"{ctx.src}: target = 'cloud': {backend} has no cloud service")
            if cloud_spec.needs_instance and not out["instance"]:
                raise UsageError(f"{ctx.src}: cloud: instance is required for {backend} with target = 'cloud'")


class _Driver(Check):
    """A driver every one of the profile's stores has (``StoreSpec.drivers``)."""

    bad = ("raw",)

    def resolve(self, value: Any, at: Where) -> Any:
        for backend in at.ctx.resolved["backend"]:
            drivers = STORES.get(backend).drivers
            if not isinstance(value, str) or value not in drivers:
                raise UsageError(f"{at.path}: {backend} has no driver {value!r} (one of: {', '.join(drivers)})")
        return value

    def describe(self) -> str:
        drivers = dict.fromkeys(name for spec in STORES.specs() for name in spec.drivers)
        return " \\| ".join(f"`{name}`" for name in drivers) + " (each store's: docs/stores.md)"


@dataclass(frozen=True, kw_only=True)
class Settings(Section):
    """The resolved profile table, typed (everything but the matrix of cells)."""

    name: str = field(metadata=option(Text(required=True), doc="shows in reports and the UI"))
    description: str = field(metadata=option(Text(), default="", doc="one line on what the profile compares"))
    rules: tuple[str, ...] = field(metadata=option(
        Strings('a list of rule ids like "BP-KEY-1"'), default=[],
        doc="the rules it exercises: ids from docs/best-practices.md"))
    backends: tuple[str, ...] = field(metadata=option(
        Names(Known(STORES.names, noun="backend", quote=quoted)), toml="backend", wire="backend",
        default=DEFAULT_BACKEND, doc="the stores (docs/stores.md); a list expands into cells"))
    #: How operations reach the store: a name in each store's ``StoreSpec.drivers``.
    driver: str = field(metadata=option(
        _Driver(), default="client", legacy="client",
        doc="`client`: the official client library; `grpc`: the same RPCs as raw gRPC with the official "
            "protobuf types, 3-5x less CPU per op (below)"))
    target: str = field(metadata=option(
        Choice(("emulator", "cloud"), expected="must be 'emulator' or 'cloud'"), default="emulator",
        doc="`cloud` is an explicit opt-in on the command line too (docs/cloud.md)"))
    project: str = field(metadata=option(
        Pattern(_PROJECT_ID, "project id"), default="keyramp-local",
        doc="project id (emulators: any; `target = \"cloud\"`: required, the real project)"))
    duration_s: float = field(metadata=option(
        Duration(), toml="duration", default="60s", doc="wall-clock length of each cell's measured phase"))
    seed: int = field(metadata=option(
        Int(0), default=1, doc="keys, records, op choice and distributions derive from it"))
    workload: WorkloadSettings = field(metadata=option(Sub(WorkloadSettings), default={}, doc="what the users do"))
    keys: KeySettings = field(metadata=option(Sub(KeySettings), default={}, doc="the key strategies compared"))
    schedule: ScheduleSettings = field(metadata=option(
        Sub(ScheduleSettings), default={}, doc="the load over each cell"))
    emulator: EmulatorSettings = field(metadata=option(
        Sub(EmulatorSettings), default={}, doc="how the emulators behave"))
    cloud: CloudSettings = field(metadata=option(
        Sub(CloudSettings), default={}, doc="only read when `target = \"cloud\"`"))

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Settings:
        settings = super().from_data(data)
        object.__setattr__(settings, "_resolved", dict(data))  # the table it was read from (frozen otherwise)
        return settings

    @property
    def resolved(self) -> Mapping[str, Any]:
        """The resolved table these settings were read from: the wire and manifest form (a worker's plan, a
        profile written back as TOML), never what code reads the settings through."""
        return self.__dict__.get("_resolved") or getattr(self, "data", {})


@dataclass(frozen=True, kw_only=True)
class Cell:
    """One combination of the matrix: what a single measured phase runs."""

    index: int
    id: str
    backend: str
    strategy: str
    schedule: Schedule
    duration_s: float
    time_scale: float
    settings: Settings = field(repr=False)

    @property
    def workload(self) -> WorkloadSettings:
        return self.settings.workload

    @property
    def horizon_s(self) -> float:
        """Schedule seconds covered by the cell's wall-clock duration."""
        return self.duration_s * self.time_scale

    def manifest_entry(self) -> dict[str, Any]:
        wl = self.workload
        return {
            "id": self.id,
            "backend": self.backend,
            "driver": self.settings.driver,
            "strategy": self.strategy,
            "schedule": {**self.settings.schedule.table, "description": self.schedule.describe()},
            "distribution": wl.read_distribution,
            "ops": dict(wl.ops),
            "duration_s": self.duration_s,
            "time_scale": self.time_scale,
            "target": self.settings.target,
        }


@dataclass(frozen=True, kw_only=True)
class Profile(Settings):
    """A validated profile: its settings, the resolved table they came from, and its cells."""

    path: Path | None
    #: The resolved table (every default filled in): the manifest and wire format.
    data: Mapping[str, Any] = field(repr=False)
    cells: tuple[Cell, ...]
    #: ``[thresholds]`` parsed (validated once, evaluated per cell).
    thresholds: tuple[Threshold, ...] = field(default=(), metadata=option(
        Table(), default={}, bad=({"insert.p99_ms": "fast"},),
        doc="pass/fail gates: failing one makes `run` exit 1 (below)"))
    #: ``[launch]``: the traffic every cell is forecast at (``keyramp.forecast``), or None.
    launch: LaunchSettings | None = field(default=None, metadata=option(
        Sub(LaunchSettings), doc="the production traffic each cell is forecast at (modelled)"))
    #: ``[acknowledge]``: lint rule id -> why its findings are safe here (reported as acknowledged).
    acknowledge: Mapping[str, str] = field(default_factory=dict, metadata=option(
        Acknowledge(), doc="lint findings accepted, each rule id with its reason: reported as acknowledged, they "
                           "do not fail lint or a run (below; `keyramp plan --write-profile` writes the plan's)"))
