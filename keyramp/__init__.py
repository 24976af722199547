"""keyramp: load-testing harness for Google's NoSQL stores.

The public API is what this module exports (``__all__``); everything under a package's
private modules (``_name.py``) may change. Names whose module imports Locust — which
monkey-patches the standard library for gevent — load on first use, so ``import keyramp``
stays light (``keyramp --help``, ``keyramp lint``).
"""

from __future__ import annotations

import os as _os
from typing import TYPE_CHECKING

from keyramp._lazy import lazy_exports
from keyramp._version import __version__

__all__ = [
    "Backend",
    "BigtableUser",
    "Cell",
    "DatastoreUser",
    "FirestoreUser",
    "KeyrampError",
    "Launch",
    "MasterOptions",
    "Profile",
    "QuerySpec",
    "RunFailed",
    "RunObserver",
    "RunOptions",
    "RunOutcome",
    "RunTarget",
    "RunsOutcome",
    "StoreSpec",
    "Target",
    "TargetOptions",
    "UsageError",
    "__version__",
    "forecast_cell",
    "load_profile",
    "op",
    "parse_profile",
    "read_intervals",
    "read_keys",
    "read_timeseries",
    "registered",
    "run_profile",
    "run_profiles",
    "spec_for",
]

# gRPC's C core re-arms its event engine in a forked child. gevent's subprocess forks with
# Python code running before exec, so an emulator started by a process that already has
# channels (the second profile of one `keyramp run`) aborted in the child with
# "Epoll1Poller … epoll_wait error: Bad file descriptor" (exit -6). keyramp never forks
# processes that use gRPC (workers are exec'd), so fork support only does harm here.
# Read when gRPC initialises: it must be set before the first channel exists.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

#: Public name -> the module that defines it (imported on first use).
_LAZY = {
    "Backend": "keyramp.backends",
    "QuerySpec": "keyramp.backends",
    "Target": "keyramp.backends",
    "StoreSpec": "keyramp.backends",
    "registered": "keyramp.backends",
    "spec_for": "keyramp.backends",
    "Cell": "keyramp.profile",
    "Profile": "keyramp.profile",
    "load_profile": "keyramp.profile",
    "parse_profile": "keyramp.profile",
    "KeyrampError": "keyramp._errors",
    "Launch": "keyramp.forecast",
    "forecast_cell": "keyramp.forecast",
    "RunFailed": "keyramp._errors",
    "UsageError": "keyramp._errors",
    "RunObserver": "keyramp.results._observer",
    "RunOptions": "keyramp.run._runner",
    "RunOutcome": "keyramp.run._runner",
    "run_profile": "keyramp.run._runner",
    # everything `keyramp run` does: profiles, master/workers, metrics exporter, scenario report
    "run_profiles": "keyramp.run._api",
    "RunsOutcome": "keyramp.run._api",
    "MasterOptions": "keyramp.run._master",
    "RunTarget": "keyramp.targets",
    "TargetOptions": "keyramp.targets",
    # Python workloads (docs/workloads.md): the decorator is light, the user classes are Locust users.
    "op": "keyramp.pyworkload._ops",
    "DatastoreUser": "keyramp.run._pyuser",
    "FirestoreUser": "keyramp.run._pyuser",
    "BigtableUser": "keyramp.run._pyuser",
    # a run's recorded data, Parquet or CSV runs, finished or still running (docs/run-format.md)
    "read_intervals": "keyramp.results._read",
    "read_keys": "keyramp.results._read",
    "read_timeseries": "keyramp.results._read",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY, __all__)


if TYPE_CHECKING:
    from keyramp._errors import KeyrampError, RunFailed, UsageError
    from keyramp.backends import Backend, QuerySpec, StoreSpec, Target, registered, spec_for
    from keyramp.forecast import Launch, forecast_cell
    from keyramp.profile import Cell, Profile, load_profile, parse_profile
    from keyramp.pyworkload._ops import op
    from keyramp.results._observer import RunObserver
    from keyramp.results._read import read_intervals, read_keys, read_timeseries
    from keyramp.run._api import RunsOutcome, run_profiles
    from keyramp.run._master import MasterOptions
    from keyramp.run._pyuser import BigtableUser, DatastoreUser, FirestoreUser
    from keyramp.run._runner import RunOptions, RunOutcome, run_profile
    from keyramp.targets import RunTarget, TargetOptions
