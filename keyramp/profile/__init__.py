"""What a run is asked to do: profiles (declared once in ``_schema``, validated, expanded into
cells), schedules, the launch a forecast projects to, lint rules and thresholds."""

from __future__ import annotations

from keyramp.profile._files import collect_profiles, load_profile
from keyramp.profile._model import (
    Cell,
    CloudSettings,
    EmulatorSettings,
    KeySettings,
    LaunchSettings,
    Profile,
    QuerySettings,
    ScheduleSettings,
    Settings,
    WorkloadSettings,
)
from keyramp.profile._profile import cell_namespace, parse_profile, slug
from keyramp.profile._resolved import read_launch, read_settings, rebuilds_keys, run_cell

__all__ = ["Cell", "CloudSettings", "EmulatorSettings", "KeySettings", "LaunchSettings", "Profile", "QuerySettings",
           "ScheduleSettings", "Settings", "WorkloadSettings", "cell_namespace", "collect_profiles", "load_profile",
           "parse_profile", "read_launch", "read_settings", "rebuilds_keys", "run_cell", "slug"]
