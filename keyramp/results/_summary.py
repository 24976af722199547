"""The results model: ``summary.json`` and ``manifest.json`` as typed, versioned documents.

``RunSummary`` (cells of ``CellSummary``, operations of ``OpStats``) and ``RunManifest`` are
what the runner writes (``RunDirectory.write_summary``/``write_manifest`` go through them) and
what readers read (``Run.summary``). Field meanings: docs/run-format.md; for readers
outside Python, docs/run-summary.schema.json is generated from these declarations
(``python -m keyramp.results._schema``).

Versions: ``schema`` is the run directory's layout (1); ``schema_version`` is this model's
version of ``summary.json``. Version 1 (no ``schema_version`` key) is every summary written
before it; ``RunSummary.upgrade`` reads those (``errors_by_class`` counts alone, before issue
28, become ``{"count": n}``; fields added later are simply absent: None). A summary of a newer
version than this keyramp knows is refused with a ``DocError`` naming it.

A cell's key-space figures (``KeyspaceFigures``, ``_keyspace_doc``), launch forecast (``CellForecast``,
``_forecast_doc``) and launch plan (``CellLaunchPlan``, ``_plan_doc``) are documents of this model, written by
the layers above (``keyspace``, ``forecast``). A scenario probe's result is ``ProbeResult``
(``_probe_doc``): the probes sit below results and return mappings, which the runner reads through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, TypeAlias

from keyramp.core import UsageError
from keyramp.profile import Cell, LaunchSettings, Settings, read_launch, read_settings, run_cell
from keyramp.results._doc import DocError, JsonDoc
from keyramp.results._doc import doc as _doc
from keyramp.results._forecast_doc import CellForecast
from keyramp.results._keyspace_doc import KeyspaceFigures
from keyramp.results._plan_doc import CellLaunchPlan
from keyramp.results._probe_doc import ProbeResult
from keyramp.results._target_doc import CellStoreModel, TargetModel

__all__ = [
    "MANIFEST_SCHEMA",
    "SUMMARY_VERSION",
    "CellLike",
    "CellSummary",
    "ErrorClass",
    "GeneratorVerdict",
    "Latency",
    "LoadCpu",
    "LoadGenerated",
    "ManifestCell",
    "OpStats",
    "RunManifest",
    "RunSummary",
    "TargetPoint",
    "ThresholdRow",
    "WarmupError",
    "as_cell",
]

#: The run directory's layout version (``schema`` in manifest.json and summary.json).
MANIFEST_SCHEMA = 1
#: This model's version of summary.json (``schema_version``; absent: 1).
SUMMARY_VERSION = 2


@dataclass(kw_only=True)
class Latency(JsonDoc):
    """Latency percentiles of one operation in milliseconds (null when nothing was recorded)."""

    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    p999: float | None = None
    max: float | None = None
    mean: float | None = None


@dataclass(kw_only=True)
class ErrorClass(JsonDoc):
    """One error class of an operation; a workload's own exception adds its first occurrence."""

    count: int
    op: str | None = None
    message: str | None = None
    traceback: list[str] | None = None
    where: str | None = None


@dataclass(kw_only=True)
class WarmupError(JsonDoc):
    """A cell's ``warmup_failure``: the workload's own exception every warm-up operation raised."""

    ops: int | None = field(default=None, metadata=_doc("warm-up operations, every one of which raised it"))
    error_class: str | None = None
    op: str | None = None
    message: str | None = None
    traceback: list[str] | None = None
    where: str | None = None


@dataclass(kw_only=True)
class OpStats(JsonDoc):
    """One operation's (or the cell ``total``'s) measured figures."""

    count: int = field(metadata=_doc("completed operations (successes + errors)"))
    errors: int | None = None
    error_rate: float | None = None
    errors_by_class: dict[str, ErrorClass] = field(default_factory=dict)
    workload_errors: int | None = None
    attempts: int | None = None
    ops_per_s: float | None = None
    latency_ms: Latency | None = field(default=None, metadata=_doc("from the intended start (CO-corrected)"))
    service_ms: Latency | None = field(default=None, metadata=_doc("from the actual start"))
    late: int | None = None
    dropped: int | None = field(default=None, metadata=_doc(
        "intended operations never started (the total's; null for an operation: none was chosen for them)"))

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Version 1 (before issue 28): an ``errors_by_class`` entry was the count alone (a copy is upgraded)."""
        return _counts_upgraded(data)


@dataclass(kw_only=True)
class TargetPoint(JsonDoc):
    """One measured second of an open-model schedule: the rate asked for and the rate achieved."""

    t: float
    target: float | None = None
    achieved: float | None = None
    errors: int | None = field(default=None, metadata=_doc("operations that failed in that second (any class)"))


@dataclass(kw_only=True)
class LoadCpu(JsonDoc):
    """CPU the load processes used in the measured phase (measured)."""

    processes: int | None = None
    cpu_s: float | None = None
    cores: float | None = None
    max_process_cores: float | None = None
    machine_busy: float | None = None
    machine_cores: int | None = None
    store_local: bool | None = None


@dataclass(kw_only=True)
class LoadGenerated(JsonDoc):
    """Operations the schedule asked for vs the ones generated (and workers lost)."""

    scheduled_ops: float | None = None
    generated_ops: int | None = None
    not_generated_share: float | None = None
    workers_lost: list[dict[str, Any]] | None = None


@dataclass(kw_only=True)
class GeneratorVerdict(JsonDoc):
    """Whether the load generator limited the cell, and the figures it rests on (results/_generator.py)."""

    limited: bool | None = None
    reason: str | None = None
    late_fraction: float | None = None
    dropped_fraction: float | None = None
    users_busy: float | None = None
    cpu_cores: float | None = None
    max_process_cores: float | None = None
    machine_busy: float | None = None
    machine_limited: bool | None = None
    store_local: bool | None = None
    store_errors: bool | None = field(default=None, metadata=_doc(
        "the store's errors coincide with the throughput gaps: they, not the generator, cost the schedule"))


@dataclass(kw_only=True)
class ThresholdRow(JsonDoc):
    """One evaluated threshold (``op`` is the comparator); only verdict "pass" has ``passed`` true."""

    name: str
    op: str | None = None
    limit: float | None = None
    value: float | None = None
    passed: bool
    verdict: str | None = None
    note: str | None = None


@dataclass(kw_only=True)
class CellSummary(JsonDoc):
    """One cell of a run: what ran, what was measured, and what the analyses made of it."""

    backend: str | None = None
    strategy: str | None = None
    schedule: str | None = None
    schedule_description: str | None = None
    distribution: str | None = None
    status: str | None = field(default=None, metadata=_doc("'failed' for a cell stopped before its measured phase"))
    reason: str | None = None
    duration_s: float | None = None
    time_scale: float | None = None
    users: int | None = None
    warmup_s: float | None = None
    warmup_inserts: int | None = None
    namespace: str | None = None
    operations: dict[str, OpStats] = field(default_factory=dict)
    total: OpStats | None = None
    target_ops_per_s: list[TargetPoint] = field(default_factory=list)
    late: int | None = None
    dropped: int | None = None
    load_cpu: LoadCpu | None = None
    load_generated: LoadGenerated | None = None
    generator_limited: bool | None = None
    generator: GeneratorVerdict | None = None
    incomplete: bool | None = field(default=None, metadata=_doc("the run stopped during this cell"))
    warmup_failure: WarmupError | None = None
    # Written by layers above results (keyspace/, forecast/) and by the runner from a probe's mapping.
    keyspace: KeyspaceFigures | None = field(default=None, metadata=_doc("hotspot metrics (keyspace/)"))
    forecast: CellForecast | None = field(default=None, metadata=_doc("the launch forecast, modelled (forecast/)"))
    plan: CellLaunchPlan | None = field(default=None, metadata=_doc("the launch plan, modelled (forecast/_plan_cell)"))
    probe: ProbeResult | None = field(default=None, metadata=_doc("a scenario probe's result, measured (probes/)"))
    store_model: CellStoreModel | None = field(default=None, metadata=_doc(
        "the store-like target: what its proxy forwarded, modelled and throttled in the measured phase"))
    # Last, as the runner writes it: evaluated after every analysis (they may gate on its parts).
    thresholds: list[ThresholdRow] = field(default_factory=list)


#: A cell summary, or (at the edge, until every caller holds the model) the mapping it is read from.
CellLike: TypeAlias = "CellSummary | Mapping[str, Any]"


def as_cell(cell: CellLike | None) -> CellSummary:
    """A cell summary through the model: a mapping (summary.json's, or a hand-made one) is read at
    this edge; None is an empty cell (every figure unknown)."""
    if isinstance(cell, CellSummary):
        return cell
    return CellSummary.from_json(dict(cell or {}), where="cell")


def _counts_upgraded(stats: Any) -> Any:
    """An operation's figures with ``errors_by_class`` counts alone (before issue 28) as ``{"count": n}``."""
    classes = stats.get("errors_by_class") if isinstance(stats, dict) else None
    if isinstance(classes, dict) and any(isinstance(v, int | float) for v in classes.values()):
        return {**stats, "errors_by_class": {k: {"count": v} if isinstance(v, int | float) else v
                                             for k, v in classes.items()}}
    return stats


@dataclass(kw_only=True)
class RunSummary(JsonDoc):
    """``summary.json``: what a run measured, per cell."""

    schema: int = field(default=MANIFEST_SCHEMA, metadata=_doc("the run directory's layout version"))
    schema_version: int = field(default=SUMMARY_VERSION, metadata=_doc("this document's version; absent: 1"))
    run_id: str | None = None
    profile_name: str | None = None
    status: str | None = field(default=None, metadata=_doc("running | complete | interrupted | failed"))
    reason: str | None = None
    cells: dict[str, CellSummary] = field(default_factory=dict)
    thresholds_passed: bool | None = None
    warnings: list[str] = field(default_factory=list)
    target: TargetModel | None = field(default=None, metadata=_doc(
        "a store model in front of the emulators (docs/fidelity.md); absent: the emulator as it is, or the cloud"))
    ALWAYS: ClassVar[tuple[str, ...]] = ("schema", "schema_version", "reason")

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        version = data.get("schema_version", 1)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise DocError(f"expected a version number, got {version!r}", ("schema_version",))
        if version > SUMMARY_VERSION:
            raise DocError(f"{version} is newer than this keyramp reads ({SUMMARY_VERSION}); upgrade keyramp",
                           ("schema_version",))
        if version == 1:  # (``OpStats.upgrade`` turns its ``errors_by_class`` counts into objects)
            if "schema_version" not in data:
                # written after ``schema``: where the current writer puts it
                items = list(data.items())
                at = next((i + 1 for i, (k, _) in enumerate(items) if k == "schema"), 0)
                items.insert(at, ("schema_version", SUMMARY_VERSION))
                return dict(items)
            return {**data, "schema_version": SUMMARY_VERSION}  # a copy: never edits the caller's document
        return data

    def cell(self, cell_id: str) -> CellSummary | None:
        return self.cells.get(cell_id)


@dataclass(kw_only=True)
class ManifestCell(JsonDoc):
    """One cell as planned (manifest.json ``cells``)."""

    id: str
    backend: str | None = None
    driver: str | None = None
    strategy: str | None = None
    schedule: dict[str, Any] | None = None
    distribution: str | None = None
    ops: dict[str, float] | None = None
    duration_s: float | None = None
    time_scale: float | None = None
    target: str | None = None
    endpoint: str | None = None
    namespace: str | None = None
    workers: list[dict[str, Any]] | None = field(default=None, metadata=_doc("per worker: index, host, pid, …"))
    cleanup: dict[str, Any] | None = field(default=None, metadata=_doc("cloud runs: what was deleted, verified"))


@dataclass(kw_only=True)
class RunManifest(JsonDoc):
    """``manifest.json``: what ran (profile, cells, versions, host), rewritten at start and end."""

    schema: int = MANIFEST_SCHEMA
    run_id: str | None = None
    profile_name: str | None = None
    profile_path: str | None = None
    profile: dict[str, Any] | None = field(default=None, metadata=_doc("the resolved profile, defaults filled in"))
    cells: list[ManifestCell] = field(default_factory=list)
    versions: dict[str, str | None] = field(default_factory=dict)
    git_sha: str | None = None
    host: str | None = None
    pid: int | None = field(default=None, metadata=_doc("the run's process on host: a reader tells a dead run by it"))
    pid_started: float | None = field(default=None, metadata=_doc("that process's start, epoch s (pid reuse)"))
    seed: int | None = None
    started_at: str | None = None
    ended_at: str | None = None
    status: str | None = None
    reason: str | None = None
    lint: list[dict[str, Any]] = field(default_factory=list)
    workers: int | None = None
    master: dict[str, Any] | None = None
    cloud: dict[str, Any] | None = None
    target: TargetModel | None = field(default=None, metadata=_doc("a store model in front of the emulators"))
    ALWAYS: ClassVar[tuple[str, ...]] = ("schema", "ended_at", "status", "reason")

    @cached_property
    def settings(self) -> Settings | None:
        """``profile`` read back as the profile layer's typed ``Settings`` (an older run's missing fields at
        their defaults); None without a profile, or one that does not read."""
        return read_settings(self.profile)

    @cached_property
    def launch(self) -> LaunchSettings | None:
        """The profile's ``[launch]``, typed (None: none, or it does not read)."""
        return read_launch(self.profile)

    def run_cell(self, cell_id: str) -> Cell | None:
        """Cell ``cell_id`` as the profile expanded it (its schedule built from the settings), or None: no such
        cell, no settings, or a schedule that does not build."""
        settings = self.settings
        found = next(((i, c) for i, c in enumerate(self.cells) if c.id == cell_id), None)
        if settings is None or found is None:
            return None
        index, meta = found
        try:
            return run_cell(settings, index=index, cell_id=meta.id, backend=str(meta.backend),
                            strategy=str(meta.strategy), duration_s=meta.duration_s, time_scale=meta.time_scale)
        except UsageError:
            return None
