"""What a run is asked to do: profiles (declared once in ``_schema``, validated, expanded into
cells), schedules, the launch a forecast projects to, lint rules and thresholds."""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from keyramp.profile._files import profile_paths, write_profile
    from keyramp.profile._launch import CLUSTER_FIELDS, DEFAULT_DURATION_S, cluster_stores, parse_launch
    from keyramp.profile._lint import Finding, group_findings, lint_profile
    from keyramp.profile._lint_files import lint_files
    from keyramp.profile._schedules import Ramp50050, Schedule, make_schedule
    from keyramp.profile._thresholds import (
        FORECAST_METRICS,
        METRICS,
        WORKLOAD_ERRORS,
        Threshold,
        parse_expression,
        parse_table,
        with_workload_errors,
    )


if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
