"""Profiles: TOML files validated into a resolved dict and expanded into cells.

A profile names what to run; a list in ``backend`` or ``keys.strategy`` expands the
matrix, and each combination is a *cell* (run one after the other, each on a reset
store). Every problem is a ``UsageError`` with one line naming the file and field.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from keyramp._durations import parse_duration
from keyramp._errors import UsageError
from keyramp._types import OP_NAMES
from keyramp.keys import INDEXED_VALUES as _INDEXED_VALUES
from keyramp.profile._app import check_query_field, check_shape, check_user, resolve_document, resolve_user
from keyramp.profile._model import Cell, Profile, Settings
from keyramp.profile._schedules import SCHEDULE_FIELDS, check_kind_fields, make_schedule

__all__ = [
    "Cell",
    "Profile",
    "cell_namespace",
    "parse_profile",
]

_TOP_FIELDS = {
    "name",
    "description",
    "rules",
    "backend",
    "driver",
    "target",
    "project",
    "duration",
    "seed",
    "workload",
    "keys",
    "schedule",
    "thresholds",
    "emulator",
    "cloud",
    "launch",
}
_WORKLOAD_DEFAULTS: dict[str, Any] = {
    "ops": {"insert": 0.5, "read": 0.5},
    "record_count": 1000,
    "value_size": 256,
    "read_distribution": "uniform",
    "distribution_params": {},
    "batch_size": 10,
    "scan_length": 20,
    "entity_group_size": 0,
    "indexed_value": "none",
    "indexed_fields": 0,
    "key_samples_per_s": 100,
    "query": {},
    "probe": "none",
    "probe_params": {},
    "document": {},  # [workload.document]: the application's record shape (keys/_shape.py)
    "user": "",  # "file.py:Class": a Python workload (keyramp/pyworkload/), path relative to the profile
}

#: ``[workload.query]``: what the ``query`` op sends (mapped to ``QuerySpec``). ``paginate``
#: reads page ``page`` by ``offset`` (skipped entities still read, BP-QRY-2) or by walking
#: cursors; ``ancestor`` queries inside one entity group (needs ``entity_group_size``).
_QUERY_DEFAULTS: dict[str, Any] = {
    "field": "",
    "op": "==",
    "value": None,
    "order_by": "",
    "limit": 0,  # 0 = workload.scan_length
    "offset": 0,
    "paginate": "none",
    "page": 0,
    "keys_only": False,
    "projection": [],
    "ancestor": False,
}
_QUERY_OPS = ("==", "<", "<=", ">", ">=", "!=")
_PAGINATE = ("none", "offset", "cursor")
_SCHEDULE_DEFAULTS: dict[str, Any] = {
    "kind": "constant", "time_scale": 1.0, "max_users": 50, "drop_after": "1s",
    # Unmeasured operations before each cell: a cold JVM emulator would otherwise make
    # whichever cell runs first look slow (JIT warm-up), biasing the comparison.
    "warmup": "2s",
}
_EMULATOR_DEFAULTS: dict[str, Any] = {"consistency": 1.0}
#: ``[cloud]``: where ``target = "cloud"`` runs go and the hard caps that stop them (see
#: docs/cloud.md). Conservative caps: a mistyped rate must not become a large bill.
_CLOUD_DEFAULTS: dict[str, Any] = {
    "instance": "",  # Bigtable instance id (required when a bigtable cell targets the cloud)
    "database": "(default)",  # Firestore / Datastore-mode database id
    "max_ops_per_s": 1000,
    "max_duration": "10m",  # the whole run: every cell's warm-up + measured phase
    "cleanup": True,  # delete what each cell wrote, and verify it is gone
}
_DATABASE_ID = re.compile(r"\(default\)|[a-z][a-z0-9-]{2,61}[a-z0-9]")
_BIGTABLE_INSTANCE_ID = re.compile(r"[a-z][a-z0-9-]{4,31}[a-z0-9]")
_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-") or "x"


def cell_namespace(cell: Cell, run_tag: str) -> str:
    """Where a cell writes: unique per run (``run_tag``) and cell; valid as Datastore kind,
    Firestore collection and Bigtable table id."""
    return f"kr_{run_tag}_{cell.index:02d}_{slug(cell.strategy)[:20].replace('-', '_')}"


def _fail(where: str, message: str) -> UsageError:
    return UsageError(f"{where}: {message}")


def _check_fields(table: Mapping[str, Any], allowed: set[str] | frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise _fail(where, f"unknown field {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _as_list(value: Any, where: str) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) and v for v in items):
        raise _fail(where, "must be a name or a non-empty list of names")
    if len(set(items)) != len(items):
        raise _fail(where, "lists a name twice")
    return items


def _int(value: Any, where: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(where, f"must be an integer ≥ {minimum}, got {value!r}")
    return value


def _table(raw: Mapping[str, Any], name: str, src: str) -> dict[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, dict):
        raise _fail(src, f"'{name}' must be a table ([{name}])")
    return value


def _resolve_workload(raw: Mapping[str, Any], src: str, base_dir: Path) -> dict[str, Any]:
    given = _table(raw, "workload", src)
    workload = {**copy.deepcopy(_WORKLOAD_DEFAULTS), **given}
    _check_fields(workload, set(_WORKLOAD_DEFAULTS), f"{src}: workload")
    shape = resolve_document(workload, given, src)
    workload["insert_ops"] = []  # besides insert/batch_write: a Python workload's ops that create keys
    if workload["user"]:
        resolve_user(workload, given, src, base_dir)
    ops = workload["ops"]
    if workload["user"]:
        pass  # validated by the loader: method names and their weights
    elif not isinstance(ops, dict) or not ops:
        raise _fail(src, "workload.ops must be a table of operation = share, e.g. { insert = 0.8, read = 0.2 }")
    for op, share in ops.items():
        if op not in OP_NAMES and not workload["user"]:
            raise _fail(src, f"workload.ops: unknown operation '{op}' (one of: {', '.join(OP_NAMES)})")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or share < 0 or math.isnan(share):
            raise _fail(src, f"workload.ops.{op}: share must be a number ≥ 0, got {share!r}")
    total = sum(ops.values())
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise _fail(src, f"workload.ops: shares must sum to 1, they sum to {total:g}")
    workload["ops"] = {op: float(share) for op, share in ops.items() if share > 0}
    workload["record_count"] = _int(workload["record_count"], f"{src}: workload.record_count", minimum=0)
    workload["value_size"] = _int(workload["value_size"], f"{src}: workload.value_size", minimum=0)
    workload["batch_size"] = _int(workload["batch_size"], f"{src}: workload.batch_size", minimum=1)
    workload["scan_length"] = _int(workload["scan_length"], f"{src}: workload.scan_length", minimum=1)
    workload["entity_group_size"] = _int(workload["entity_group_size"], f"{src}: workload.entity_group_size", minimum=0)
    workload["indexed_fields"] = _int(workload["indexed_fields"], f"{src}: workload.indexed_fields", minimum=0)
    workload["key_samples_per_s"] = _int(workload["key_samples_per_s"], f"{src}: workload.key_samples_per_s", minimum=0)
    if workload["indexed_value"] not in _INDEXED_VALUES:
        raise _fail(
            src, f"workload.indexed_value: one of {', '.join(_INDEXED_VALUES)}, got {workload['indexed_value']!r}"
        )
    if not isinstance(workload["distribution_params"], dict):
        raise _fail(src, "workload.distribution_params must be a table")
    from keyramp.keys import DISTRIBUTIONS

    if workload["read_distribution"] not in DISTRIBUTIONS:
        raise _fail(
            src,
            f"workload.read_distribution: unknown '{workload['read_distribution']}' "
            f"(one of: {', '.join(DISTRIBUTIONS)})",
        )
    workload["query"] = _resolve_query(workload, src)
    check_query_field(workload["query"], shape, src)
    workload["probe"], workload["probe_params"] = _resolve_probe(workload, src)
    needs_existing = set(workload["ops"]) - {"insert", "batch_write"}
    if needs_existing and not workload["user"] and workload["record_count"] == 0 and "insert" not in workload["ops"]:
        raise _fail(src, "workload: reads/updates need records: set record_count > 0 or add inserts")
    return workload


def _resolve_query(workload: Mapping[str, Any], src: str) -> dict[str, Any]:
    raw = workload["query"]
    if not isinstance(raw, dict):
        raise _fail(src, "workload.query must be a table ([workload.query])")
    query = {**copy.deepcopy(_QUERY_DEFAULTS), **raw}
    _check_fields(query, set(_QUERY_DEFAULTS), f"{src}: workload.query")
    where = f"{src}: workload.query"
    for name in ("field", "order_by"):
        if not isinstance(query[name], str):
            raise _fail(where, f"{name} must be a property name, got {query[name]!r}")
    if query["op"] not in _QUERY_OPS:
        raise _fail(where, f"op: one of {' '.join(_QUERY_OPS)}, got {query['op']!r}")
    if query["field"] and query["value"] is None:
        raise _fail(where, f"a filter on '{query['field']}' needs a value")
    if query["value"] is not None and not query["field"]:
        raise _fail(where, "value given without field")
    query["limit"] = _int(query["limit"], f"{where}.limit", minimum=0) or workload["scan_length"]
    query["offset"] = _int(query["offset"], f"{where}.offset", minimum=0)
    query["page"] = _int(query["page"], f"{where}.page", minimum=0)
    if query["paginate"] not in _PAGINATE:
        raise _fail(where, f"paginate: one of {', '.join(_PAGINATE)}, got {query['paginate']!r}")
    if query["paginate"] != "none" and not query["page"]:
        raise _fail(where, "paginate needs page ≥ 1 (which page to read)")
    if query["paginate"] != "none" and query["offset"]:
        raise _fail(where, "offset and paginate exclude each other")
    for name in ("keys_only", "ancestor"):
        if not isinstance(query[name], bool):
            raise _fail(where, f"{name} must be true or false")
    proj = query["projection"]
    if not isinstance(proj, list) or not all(isinstance(p, str) and p for p in proj):
        raise _fail(where, "projection must be a list of property names")
    if query["keys_only"] and proj:
        raise _fail(where, "keys_only and projection exclude each other")
    if query["ancestor"] and not workload["entity_group_size"]:
        raise _fail(where, "ancestor = true needs workload.entity_group_size > 0")
    return query


def _resolve_probe(workload: Mapping[str, Any], src: str) -> tuple[str, dict[str, Any]]:
    from keyramp.scenarios import PROBES, probe_params

    name = workload["probe"]
    if name != "none" and name not in PROBES:
        raise _fail(src, f"workload.probe: unknown probe {name!r} (one of: none, {', '.join(PROBES)})")
    if not isinstance(workload["probe_params"], dict):
        raise _fail(src, "workload.probe_params must be a table")
    if name == "none":
        if workload["probe_params"]:
            raise _fail(src, "workload.probe_params given without workload.probe")
        return name, {}
    try:
        return name, probe_params(name, workload["probe_params"])
    except UsageError as exc:
        raise _fail(src, f"workload.probe_params: {exc}") from None


def _resolve_schedule(raw: Mapping[str, Any], src: str) -> dict[str, Any]:
    given = _table(raw, "schedule", src)
    _check_fields(given, SCHEDULE_FIELDS, f"{src}: schedule")
    try:  # before defaults are filled in: only what the profile wrote can be a stray field
        check_kind_fields(given)
    except UsageError as exc:
        raise _fail(src, str(exc)) from None
    schedule = {**_SCHEDULE_DEFAULTS, **given}
    scale = schedule["time_scale"]
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0 or math.isinf(scale):
        raise _fail(src, f"schedule.time_scale: must be a positive number, got {scale!r}")
    schedule["time_scale"] = float(scale)
    schedule["max_users"] = _int(schedule["max_users"], f"{src}: schedule.max_users", minimum=1)
    schedule["drop_after_s"] = parse_duration(schedule.pop("drop_after"), field=f"{src}: schedule.drop_after")
    warmup = schedule.pop("warmup")
    schedule["warmup_s"] = 0.0 if warmup in (0, "0", "0s") else parse_duration(warmup, field=f"{src}: schedule.warmup")
    if schedule["kind"] == "constant" and "rate" not in schedule:
        schedule["rate"] = 200.0
    return schedule


def _resolve_cloud(raw: Mapping[str, Any], src: str, *, target: str, backends: list[str]) -> dict[str, Any]:
    """The ``[cloud]`` table, defaults filled in; validated whatever the target (so flipping
    ``target`` never uncovers a typo), and its requirements enforced for ``target = "cloud"``."""
    cloud = {**_CLOUD_DEFAULTS, **_table(raw, "cloud", src)}
    _check_fields(cloud, set(_CLOUD_DEFAULTS), f"{src}: cloud")
    where = f"{src}: cloud"
    instance, database = cloud["instance"], cloud["database"]
    if not isinstance(instance, str) or (instance and not _BIGTABLE_INSTANCE_ID.fullmatch(instance)):
        raise _fail(where, f"instance: not a valid Bigtable instance id: {instance!r}")
    if not isinstance(database, str) or not _DATABASE_ID.fullmatch(database):
        raise _fail(where, f"database: not a valid database id: {database!r}")
    cap = cloud["max_ops_per_s"]
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not 0 < cap < math.inf:
        raise _fail(where, f"max_ops_per_s: must be a positive number, got {cap!r}")
    if not isinstance(cloud["cleanup"], bool):
        raise _fail(where, "cleanup must be true or false")
    resolved = {
        "instance": instance,
        "database": database,
        "max_ops_per_s": float(cap),
        "max_duration_s": parse_duration(cloud["max_duration"], field=f"{where}.max_duration"),
        "cleanup": cloud["cleanup"],
    }
    if target == "cloud":
        # The default project id exists for the emulators; against the real service an
        # implicit project would be a guess, so the profile must name it.
        if "project" not in raw:
            raise _fail(src, "target = 'cloud' needs an explicit project = \"<project id>\"")
        from keyramp.backends import spec_for

        for backend in backends:
            cloud_spec = spec_for(backend).cloud
            if cloud_spec is None:
                raise _fail(src, f"target = 'cloud': {backend} has no cloud service")
            if cloud_spec.needs_instance and not instance:
                raise _fail(where, f"instance is required for {backend} with target = 'cloud'")
    return resolved


def parse_profile(raw: Mapping[str, Any], *, source: str = "<profile>", path: Path | None = None) -> Profile:
    """Validate a profile mapping (parsed TOML) and expand it into cells."""
    src = source
    _check_fields(raw, _TOP_FIELDS, src)
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _fail(src, "'name' is required (a non-empty string)")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise _fail(src, "'description' must be a string")
    rules = raw.get("rules", [])
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        raise _fail(src, "'rules' must be a list of rule ids like \"BP-KEY-1\"")
    from keyramp.backends import DEFAULT_BACKEND, STORES

    backends = _as_list(raw.get("backend", DEFAULT_BACKEND), f"{src}: backend")
    for backend in backends:
        if backend not in STORES:
            raise _fail(src, f"backend: unknown backend '{backend}' (one of: {', '.join(STORES.names())})")
    driver = raw.get("driver", "client")
    for backend in backends:
        drivers = STORES.get(backend).drivers
        if driver not in drivers:
            raise _fail(src, f"driver: {backend} has no driver {driver!r} (one of: {', '.join(drivers)})")
    target = raw.get("target", "emulator")
    if target not in ("emulator", "cloud"):
        raise _fail(src, f"target: must be 'emulator' or 'cloud', got {target!r}")
    project = raw.get("project", "keyramp-local")
    if not isinstance(project, str) or not re.fullmatch(r"[a-z][a-z0-9-]{3,61}[a-z0-9]", project):
        raise _fail(src, f"project: not a valid project id: {project!r}")
    duration_s = parse_duration(raw.get("duration", "60s"), field=f"{src}: duration")
    seed = _int(raw.get("seed", 1), f"{src}: seed", minimum=0)

    keys = {"params": {}, **_table(raw, "keys", src)}
    _check_fields(keys, {"strategy", "params"}, f"{src}: keys")
    strategies = _as_list(keys.get("strategy", "random"), f"{src}: keys.strategy")
    if not isinstance(keys["params"], dict):
        raise _fail(src, "keys.params must be a table")
    from keyramp.keys import make_strategy

    for strategy in strategies:  # named strategies and templates (parsed once here, before any load)
        try:
            make_strategy(strategy, seed=seed, params=keys["params"])
        except UsageError as exc:
            raise _fail(src, f"keys.strategy: {exc}") from None

    workload = _resolve_workload(raw, src, path.parent if path is not None else Path.cwd())
    schedule = _resolve_schedule(raw, src)
    emulator = {**_EMULATOR_DEFAULTS, **_table(raw, "emulator", src)}
    _check_fields(emulator, set(_EMULATOR_DEFAULTS), f"{src}: emulator")
    consistency = emulator["consistency"]
    if isinstance(consistency, bool) or not isinstance(consistency, (int, float)) or not 0 < consistency <= 1:
        raise _fail(src, f"emulator.consistency: a number in (0, 1], got {consistency!r}")
    thresholds = _table(raw, "thresholds", src)
    from keyramp.profile._thresholds import parse_table as parse_thresholds
    from keyramp.profile._thresholds import with_workload_errors

    try:
        given = parse_thresholds(thresholds, operations={*OP_NAMES, *workload["ops"]})
        threshold_specs = tuple(with_workload_errors(given, python_workload=bool(workload["user"])))
    except UsageError as exc:
        raise _fail(src, str(exc)) from None

    launch = None
    if "launch" in raw:
        from keyramp.forecast._launch import Launch, parse_launch

        launch = Launch.from_resolved(parse_launch(raw["launch"], src=src, backends=backends))
    if launch is None:
        for spec in threshold_specs:
            if spec.name.startswith("forecast."):
                raise _fail(src, f"thresholds.{spec.name}: a forecast threshold needs a [launch] table")

    data: dict[str, Any] = {
        "name": name,
        "description": description,
        "rules": list(rules),
        "backend": backends,
        "driver": driver,
        "target": target,
        "project": project,
        "duration_s": duration_s,
        "seed": seed,
        "workload": workload,
        "keys": {"strategy": strategies, "params": dict(keys["params"])},
        "schedule": schedule,
        "thresholds": dict(thresholds),
        "emulator": emulator,
        "cloud": _resolve_cloud(raw, src, target=target, backends=backends),
    }
    if launch is not None:
        data["launch"] = dict(launch.spec)
    horizon = duration_s * schedule["time_scale"]
    try:
        sched = make_schedule(schedule, horizon=horizon)
    except UsageError as exc:
        raise _fail(src, str(exc)) from None

    settings = Settings.from_data(data)
    cells: list[Cell] = []
    for backend in backends:
        for strategy in strategies:
            index = len(cells)
            cells.append(
                Cell(
                    index=index,
                    id=f"c{index:02d}-{slug(backend)}-{slug(strategy)}",
                    backend=backend,
                    strategy=strategy,
                    schedule=sched,
                    duration_s=duration_s,
                    time_scale=schedule["time_scale"],
                    settings=settings,
                )
            )
    _check_strategies(cells, data, src)
    check_user(cells, data, src)
    check_shape(backends, data["workload"]["document"], src, driver=driver)
    return Profile(**{f.name: getattr(settings, f.name) for f in fields(Settings)}, path=path, data=data,
                   cells=tuple(cells), thresholds=threshold_specs, launch=launch)


def _check_strategies(cells: list[Cell], data: Mapping[str, Any], src: str) -> None:
    """Build each cell's strategy once so bad params or unsupported backends fail now; the
    store's spec refuses ops it lacks and batches above its limit."""
    from keyramp.backends import spec_for
    from keyramp.keys import make_strategy

    workload = data["workload"]
    for backend in dict.fromkeys(c.backend for c in cells):
        if workload["user"]:
            break  # a Python workload's ops are its own (its class says which stores it serves)
        problem = spec_for(backend).workload_problem(workload["ops"], workload["batch_size"])
        if problem:
            raise _fail(src, f"{backend}: {problem}")
    for cell in cells:
        try:
            strategy = make_strategy(cell.strategy, seed=data["seed"], params=data["keys"]["params"],
                                     backend=cell.backend)
        except UsageError as exc:
            raise _fail(src, f"{cell.backend} × {cell.strategy}: {exc}") from None
        # Batch writes send keys they chose; store-allocated keys come back one insert at a time.
        if strategy.server_allocated and "batch_write" in data["workload"]["ops"]:
            raise _fail(src, f"{cell.backend} × {cell.strategy}: workload.ops.batch_write needs client-chosen keys "
                             "(use insert with server-allocated keys)")
