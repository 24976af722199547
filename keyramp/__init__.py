"""keyramp: load-testing harness for Google's NoSQL stores.

The public API is what this module exports (``__all__``); everything under a package's
private modules (``_name.py``) may change. Names whose module imports Locust — which
monkey-patches the standard library for gevent — load on first use, so ``import keyramp``
stays light (``keyramp --help``, ``keyramp lint``). Each name is declared once, below: the
``if TYPE_CHECKING:`` block is both what mypy reads and what ``__all__`` and the lazy
look-up derive from (``keyramp.core._lazy``). The Python-workload user classes
(``keyramp.DatastoreUser`` …) are the ones the registered stores declare (``StoreSpec.user``).
"""

from __future__ import annotations

import os as _os
from typing import TYPE_CHECKING, Any

from keyramp.core import __version__

# gRPC's C core re-arms its event engine in a forked child. gevent's subprocess forks with
# Python code running before exec, so an emulator started by a process that already has
# channels (the second profile of one `keyramp run`) aborted in the child with
# "Epoll1Poller … epoll_wait error: Bad file descriptor" (exit -6). keyramp never forks
# processes that use gRPC (workers are exec'd), so fork support only does harm here.
# Read when gRPC initialises: it must be set before the first channel exists.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

if TYPE_CHECKING:
    from keyramp.backends import Backend, QuerySpec, StoreSpec, Target, registered, spec_for
    from keyramp.core import KeyrampError, RunFailed, UsageError
    from keyramp.forecast import Launch, forecast_cell
    from keyramp.profile import Cell, Profile, load_profile, parse_profile

    # Python workloads (docs/workloads.md): the decorator is light; the store user classes (Locust
    # users) come from the stores' specs, below.
    from keyramp.pyworkload import op

    # a run's recorded data, Parquet or CSV runs, finished or still running (docs/run-format.md)
    from keyramp.results import RunObserver, read_intervals, read_keys, read_timeseries

    # everything `keyramp run` does: profiles, master/workers, metrics exporter, scenario report
    from keyramp.run import MasterOptions, RunOptions, RunOutcome, RunsOutcome, run_profile, run_profiles
    from keyramp.targets import RunTarget, TargetOptions


def _user_names() -> tuple[str, ...]:
    from keyramp.backends import STORES  # deferred: start-up cost (the store packages, on first look-up)

    return tuple(STORES.users())


def _user_class(name: str) -> Any:
    from keyramp.run import user_class  # deferred: start-up cost (Locust)

    return user_class(name)


if not TYPE_CHECKING:
    from keyramp.core import More, lazy_exports

    __getattr__, __dir__ = lazy_exports(globals(), More(names=_user_names, resolve=_user_class))
