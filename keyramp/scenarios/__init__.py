"""The scenario report: scenario runs (profiles with best-practice ``rules``) as one report with a
verdict, evidence and charts per rule. The probes those profiles run are ``keyramp.probes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from keyramp.scenarios._report import default_report_dir, expand_runs, report_for_runs


def is_scenario_profile(profile_data: Mapping[str, Any]) -> bool:
    """A profile whose runs belong in the scenario report: it names best-practice ``rules``."""
    return bool(profile_data.get("rules"))


if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
