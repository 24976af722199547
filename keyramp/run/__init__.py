"""How load is generated and measured: the runner (one process or Locust master/workers),
the Locust users (keyramp's own and a Python workload's), the pacer, the recorder and the
live status. What the users do is ``keyramp.workload``; what they write, ``keyramp.results``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from keyramp.run._api import RunsOutcome, budget_costs, budget_profiles, run_profiles
    from keyramp.run._hdr import bucket_layout, bucket_values_us, counts
    from keyramp.run._master import MasterOptions
    from keyramp.run._pyuser import user_class
    from keyramp.run._report import Console, plan_lines, summary_table, workload_exceptions
    from keyramp.run._report_plan import PLAN_NOTE, plan_line
    from keyramp.run._runner import RunOptions, RunOutcome, run_profile
    from keyramp.run._worker import run_worker


if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
