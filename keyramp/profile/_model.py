"""Typed views of a resolved profile: what the code reads instead of nested dicts.

The loader (``_profile.py``) validates a TOML table into a *resolved* mapping (every
default filled in); that mapping stays the wire and manifest format (JSON, Locust
messages to workers). ``Settings.from_data`` turns it into frozen objects once — on the
master from the profile file, on a worker from the frozen cell plan it receives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from keyramp.forecast._launch import Launch
    from keyramp.profile._schedules import Schedule
    from keyramp.profile._thresholds import Threshold

__all__ = [
    "Cell",
    "CloudSettings",
    "EmulatorSettings",
    "KeySettings",
    "Profile",
    "QuerySettings",
    "ScheduleSettings",
    "Settings",
    "WorkloadSettings",
]

_T = TypeVar("_T")


def _build(cls: type[_T], data: Mapping[str, Any], **converted: Any) -> _T:
    """``cls`` from the keys of ``data`` named like its fields (``converted`` overrides some)."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    return cls(**{n: converted[n] if n in converted else data[n] for n in names})


@dataclass(frozen=True, kw_only=True)
class QuerySettings:
    """``[workload.query]``: what the ``query`` operation sends."""

    field: str
    op: str
    value: Any
    order_by: str
    limit: int
    offset: int
    paginate: str
    page: int
    keys_only: bool
    projection: tuple[str, ...]
    ancestor: bool

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> QuerySettings:
        return _build(cls, data, projection=tuple(data["projection"]))


@dataclass(frozen=True, kw_only=True)
class WorkloadSettings:
    ops: Mapping[str, float]
    record_count: int
    value_size: int
    read_distribution: str
    distribution_params: Mapping[str, Any]
    batch_size: int
    scan_length: int
    entity_group_size: int
    indexed_value: str
    indexed_fields: int
    key_samples_per_s: int
    query: QuerySettings
    probe: str
    probe_params: Mapping[str, Any]
    #: ``[workload.document]`` as written (``keys.parse_shape`` reads it): the record's shape.
    document: Mapping[str, Any]
    #: ``"/abs/file.py:Class"``: a Python workload (``keyramp/pyworkload``), ``""`` for the built-in ops.
    user: str
    #: Besides insert / batch_write: the Python workload's ops that create keys (key-space analysis).
    insert_ops: tuple[str, ...]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> WorkloadSettings:
        # Fields added later default when absent (manifests of older runs are re-read).
        return _build(
            cls,
            data,
            query=QuerySettings.from_data(data["query"]),
            document=dict(data.get("document") or {}),
            user=str(data.get("user") or ""),
            insert_ops=tuple(data.get("insert_ops") or ()),
        )


@dataclass(frozen=True, kw_only=True)
class KeySettings:
    strategies: tuple[str, ...]
    params: Mapping[str, Any]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> KeySettings:
        return cls(strategies=tuple(data["strategy"]), params=dict(data["params"]))


@dataclass(frozen=True, kw_only=True)
class ScheduleSettings:
    kind: str
    time_scale: float
    max_users: int
    drop_after_s: float
    warmup_s: float
    #: The whole resolved ``[schedule]`` table (what ``make_schedule`` builds the kind from).
    table: Mapping[str, Any]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ScheduleSettings:
        return _build(cls, data, table=dict(data))


@dataclass(frozen=True, kw_only=True)
class EmulatorSettings:
    consistency: float

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> EmulatorSettings:
        return cls(consistency=float(data["consistency"]))


@dataclass(frozen=True, kw_only=True)
class CloudSettings:
    instance: str
    database: str
    max_ops_per_s: float
    max_duration_s: float
    cleanup: bool

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CloudSettings:
        return _build(cls, data)


@dataclass(frozen=True, kw_only=True)
class Settings:
    """The resolved profile table, typed (everything but the matrix of cells)."""

    name: str
    description: str
    rules: tuple[str, ...]
    backends: tuple[str, ...]
    #: How operations reach the store: a name in each store's ``StoreSpec.drivers``.
    driver: str
    target: str
    project: str
    duration_s: float
    seed: int
    workload: WorkloadSettings
    keys: KeySettings
    schedule: ScheduleSettings
    emulator: EmulatorSettings
    cloud: CloudSettings

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Settings:
        return Settings(**cls.fields_of(data))

    @staticmethod
    def fields_of(data: Mapping[str, Any]) -> dict[str, Any]:
        return dict(
            name=str(data["name"]), description=str(data["description"]), rules=tuple(data["rules"]),
            backends=tuple(data["backend"]),
            driver=str(data.get("driver", "client")),  # run directories from before drivers: the client
            target=str(data["target"]), project=str(data["project"]),
            duration_s=float(data["duration_s"]), seed=int(data["seed"]),
            workload=WorkloadSettings.from_data(data["workload"]), keys=KeySettings.from_data(data["keys"]),
            schedule=ScheduleSettings.from_data(data["schedule"]),
            emulator=EmulatorSettings.from_data(data["emulator"]), cloud=CloudSettings.from_data(data["cloud"]),
        )


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
    thresholds: tuple[Threshold, ...] = ()
    #: ``[launch]``: the traffic every cell is forecast at (``keyramp.forecast``), or None.
    launch: Launch | None = None
