"""A run's profile read back, typed: the resolved table a manifest keeps as the profile layer's objects.

The runner writes the resolved profile (every default filled in) into ``manifest.json``; everything
that reads a finished run — the key-space analysis, the forecast, the plan — reads it back here,
once, as ``Settings``, its ``[launch]`` as ``LaunchSettings`` and its cells as ``Cell`` (each with
its schedule built once), never as a dict passed on and parsed again further down.

An older run's table may lack fields added since: they take their defaults (the table of a
profile that names nothing), sections merged field by field, so a run written before a field
existed still reads.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from keyramp.core import UsageError
from keyramp.profile._launch import LaunchSettings
from keyramp.profile._model import Cell, Settings
from keyramp.profile._schedules import make_schedule
from keyramp.profile._schema import Section, Sub

__all__ = ["read_launch", "read_settings", "rebuilds_keys", "run_cell"]


@functools.cache
def _defaults() -> Mapping[str, Any]:
    """The resolved table of a profile that names nothing but itself."""
    from keyramp.profile._profile import parse_profile  # deferred: import order (_profile builds on this layer)

    return parse_profile({"name": "defaults"}).data


def _merged(section: type[Section], data: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with the fields it lacks from ``defaults``, sub-sections merged field by field."""
    out = dict(data)
    for opt in section.options():
        if opt.wire not in defaults:
            continue
        if opt.wire not in data:
            out[opt.wire] = defaults[opt.wire]
        elif isinstance(opt.check, Sub) and isinstance(data[opt.wire], Mapping):
            out[opt.wire] = _merged(opt.check.section, data[opt.wire], defaults[opt.wire])
    return out


def read_settings(data: Mapping[str, Any] | None) -> Settings | None:
    """A manifest's resolved profile as ``Settings`` (None: the run kept none, or it does not read: a
    hand-edited table; the readers then work from what was recorded alone)."""
    if not isinstance(data, Mapping):
        return None
    try:
        settings = Settings.from_data(_merged(Settings, data, _defaults()))
    except (UsageError, KeyError, TypeError, ValueError):
        return None
    object.__setattr__(settings, "_defaulted", frozenset(o.wire for o in Settings.options() if o.wire not in data))
    return settings


def rebuilds_keys(settings: Settings) -> bool:
    """Whether ``settings`` say how the run made its keys: its seed, key strategies and workload were in the
    table (a run's always are; a hand-made table without them gets defaults that are not what ran)."""
    defaulted = settings.__dict__.get("_defaulted", frozenset())
    return not {"seed", "keys", "workload"} & defaulted


def read_launch(data: Mapping[str, Any] | None) -> LaunchSettings | None:
    """A manifest's resolved ``[launch]`` (None: the profile had none, or it does not read)."""
    table = data.get("launch") if isinstance(data, Mapping) else None
    if not isinstance(table, Mapping):
        return None
    try:
        return LaunchSettings.from_data(table)
    except (UsageError, KeyError, TypeError, ValueError):
        return None


def run_cell(settings: Settings, *, index: int, cell_id: str, backend: str, strategy: str,
             duration_s: float | None = None, time_scale: float | None = None) -> Cell:
    """One cell of a finished run, as the profile expanded it: its schedule built once from the settings
    (``UsageError`` when the schedule does not build: a hand-edited table)."""
    duration = float(duration_s if duration_s is not None else settings.duration_s)
    scale = float(time_scale if time_scale is not None else settings.schedule.time_scale)
    try:
        schedule = make_schedule(settings.schedule.table, horizon=duration * scale)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"schedule: {exc}") from None
    return Cell(index=index, id=cell_id, backend=backend, strategy=strategy, schedule=schedule, duration_s=duration,
                time_scale=scale, settings=settings)
