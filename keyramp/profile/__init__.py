"""What a run is asked to do: profiles (validated, expanded into cells), schedules,
durations, lint rules and thresholds."""

from __future__ import annotations

from keyramp.profile._files import collect_profiles, load_profile
from keyramp.profile._model import (
    Cell,
    CloudSettings,
    EmulatorSettings,
    KeySettings,
    Profile,
    QuerySettings,
    ScheduleSettings,
    Settings,
    WorkloadSettings,
)
from keyramp.profile._profile import cell_namespace, parse_profile, slug

__all__ = ["Cell", "CloudSettings", "EmulatorSettings", "KeySettings", "Profile", "QuerySettings",
           "ScheduleSettings", "Settings", "WorkloadSettings", "cell_namespace", "collect_profiles", "load_profile",
           "parse_profile", "slug"]
