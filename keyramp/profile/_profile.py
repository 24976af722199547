"""Profiles: TOML files validated into a resolved table and expanded into cells.

A profile names what to run; a list in ``backend`` or ``keys.strategy`` expands the
matrix, and each combination is a *cell* (run one after the other, each on a reset
store). The sections are declared once (``_model``, ``_schema``); every problem is a
``UsageError`` with one line naming the file and field.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from keyramp.backends import spec_for
from keyramp.core import OP_NAMES, UsageError
from keyramp.keys import make_strategy
from keyramp.profile._app import check_shape
from keyramp.profile._checks import Context
from keyramp.profile._launch import LaunchSettings
from keyramp.profile._model import Cell, Profile, Settings
from keyramp.profile._schedules import make_schedule
from keyramp.profile._thresholds import Threshold, with_workload_errors
from keyramp.profile._thresholds import parse_table as parse_thresholds
from keyramp.pyworkload import load_user

__all__ = [
    "Cell",
    "Profile",
    "cell_namespace",
    "parse_profile",
]

_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-") or "x"


def cell_namespace(cell: Cell, run_tag: str) -> str:
    """Where a cell writes: unique per run (``run_tag``) and cell; valid as Datastore kind,
    Firestore collection and Bigtable table id."""
    return f"kr_{run_tag}_{cell.index:02d}_{slug(cell.strategy)[:20].replace('-', '_')}"


def _fail(where: str, message: str) -> UsageError:
    return UsageError(f"{where}: {message}")


def parse_profile(raw: Mapping[str, Any], *, source: str = "<profile>", path: Path | None = None) -> Profile:
    """Validate a profile mapping (parsed TOML) and expand it into cells."""
    src = source
    ctx = Context(src=src, base_dir=path.parent if path is not None else Path.cwd(), raw=raw)
    data = Profile.resolve(raw, ctx)
    thresholds = _thresholds(data, src)
    launch = LaunchSettings.from_data(data["launch"]) if "launch" in data else None
    settings = Settings.from_data(data)
    try:
        schedule = make_schedule(data["schedule"], horizon=settings.duration_s * settings.schedule.time_scale)
    except UsageError as exc:
        raise _fail(src, str(exc)) from None
    cells = [
        Cell(index=index, id=f"c{index:02d}-{slug(backend)}-{slug(strategy)}", backend=backend, strategy=strategy,
             schedule=schedule, duration_s=settings.duration_s, time_scale=settings.schedule.time_scale,
             settings=settings)
        for index, (backend, strategy) in enumerate(itertools.product(settings.backends, settings.keys.strategies))
    ]
    _check_strategies(cells, data, src)
    _check_user(cells, data, src)
    check_shape(list(settings.backends), data["workload"]["document"], src, driver=settings.driver)
    return Profile(**{f.name: getattr(settings, f.name) for f in fields(Settings)}, path=path, data=data,
                   cells=tuple(cells), thresholds=thresholds, launch=launch,
                   acknowledge=dict(data.get("acknowledge", {})))


def _check_user(cells: list[Cell], data: Mapping[str, Any], src: str) -> None:
    """A Python workload's class serves the cells' backends, and chooses its keys."""
    spec = data["workload"]["user"]
    if not spec:
        return
    loaded = load_user(spec, base_dir=Path("/"))  # absolute by now; imported once already
    for cell in cells:
        if cell.backend not in loaded.backends:
            raise _fail(src, f"backend: {cell.backend} does not apply to {loaded.class_name}, a "
                             f"{loaded.store} user (serves: {', '.join(sorted(loaded.backends))})")
        if make_strategy(cell.strategy, seed=data["seed"], params=data["keys"]["params"]).server_allocated:
            raise _fail(src, f"keys.strategy: {cell.strategy} does not apply to a Python workload "
                             "(self.keys.new() chooses the key; let the store allocate ids in your op instead)")


def _thresholds(data: Mapping[str, Any], src: str) -> tuple[Threshold, ...]:
    """``[thresholds]`` parsed against the workload's operations; a forecast or plan gate needs a ``[launch]``."""
    try:
        given = parse_thresholds(data["thresholds"], operations={*OP_NAMES, *data["workload"]["ops"]})
        specs = tuple(with_workload_errors(given, python_workload=bool(data["workload"]["user"])))
    except UsageError as exc:
        raise _fail(src, str(exc)) from None
    gated = [spec for spec in specs if spec.name.startswith(("forecast.", "plan."))]
    if gated and "launch" not in data:
        what = gated[0].name.split(".")[0]
        raise _fail(src, f"thresholds.{gated[0].name}: a {what} threshold needs a [launch] table")
    return specs


def _check_strategies(cells: list[Cell], data: Mapping[str, Any], src: str) -> None:
    """Build each cell's strategy once so bad params or unsupported backends fail now; the
    store's spec refuses ops it lacks and batches above its limit."""
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
