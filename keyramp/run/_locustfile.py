"""Plain-Locust entry point: what ``locustfiles/*.py`` use so ``locust -f`` works too.

``locust -f locustfiles/bigtable.py`` then gets a Locust user class that drives one
backend through keyramp's workload (key strategy, op mix, records) in Locust's usual
closed model, with Locust's own web UI and statistics. The profile comes from
``$KEYRAMP_PROFILE`` (a TOML file with one cell on this backend: one strategy) or a small
default; the emulator from the standard env var (``DATASTORE_EMULATOR_HOST`` …) or from
``keyramp emulators up``. ``keyramp run`` adds the open-model pacer, phases and run directory.
"""

from __future__ import annotations

import locust  # noqa: F401  (monkey-patches the standard library before anything imports ssl)

# isort: split
import os
import sys
import time
import uuid
from typing import Any

import gevent
from locust import events

from keyramp.backends import EMULATOR_FOR, spec_for
from keyramp.core import EmulatorError, UsageError
from keyramp.profile import Profile, load_profile, parse_profile
from keyramp.run._gevent import ensure_gevent_grpc
from keyramp.run._locust_stats import LocustStatsSink
from keyramp.run._plain import plain_cell
from keyramp.run._recorder import Recorder
from keyramp.run._user import CellContext, KeyrampUser, user_class_for
from keyramp.targets import EmulatorManager, endpoints_from_env
from keyramp.workload import CellWorkload

__all__ = ["emulator_endpoint", "make_user", "plain_context", "prepare"]

_DEFAULT_PROFILE: dict[str, Any] = {
    "name": "locustfile",
    "workload": {"ops": {"insert": 0.5, "read": 0.4, "update": 0.1}, "record_count": 1000},
    "keys": {"strategy": "hashed_prefix"},
}


def emulator_endpoint(backend: str) -> str:
    """The emulator serving ``backend``: its standard variable, else one ``keyramp emulators up`` started."""
    kind = EMULATOR_FOR[backend]
    found = endpoints_from_env(os.environ).get(kind)
    if found:
        return found
    for emulator in EmulatorManager().status():
        if emulator.kind == kind and emulator.alive():
            return emulator.endpoint
    raise EmulatorError(
        f"no {kind} emulator: run `keyramp emulators up {kind}` (or set its *_EMULATOR_HOST variable) first"
    )


def plain_context(backend: str, profile: Profile) -> CellContext:
    """A closed-model cell context for plain Locust: ``profile``'s one cell on ``backend``
    (``plain_cell``), a fresh namespace on the running emulator. Nothing is created yet (see
    ``prepare``)."""
    ensure_gevent_grpc()
    workload = CellWorkload(backend=backend, strategy=plain_cell(profile, backend).strategy, settings=profile)
    target = workload.target(project=profile.project, endpoint=emulator_endpoint(backend),
                             namespace=f"locust_{uuid.uuid4().hex[:8]}")
    return CellContext(workload=workload, backend_class=spec_for(backend).driver(profile.driver), target=target,
                       open_model=False)


def prepare(context: CellContext) -> None:
    """Create the cell's table (Bigtable) and preload ``record_count`` records."""
    context.backend_class.prepare(context.target)
    loader = context.backend_class(context.target)
    try:
        for batch in context.workload.preload_batches():
            context.workload.preload(loader, batch)
    finally:
        loader.close()


def make_user(backend: str) -> type[KeyrampUser]:
    """A Locust user class for ``backend``; the store is prepared and preloaded on test start.

    Operations are recorded once, by a ``Recorder`` whose closed seconds feed Locust's own
    statistics (web UI, ``--csv``): the same request path as ``keyramp run``, closed model.
    """
    path = os.environ.get("KEYRAMP_PROFILE")
    try:
        profile = load_profile(path) if path else parse_profile({**_DEFAULT_PROFILE, "backend": backend})
        context = plain_context(backend, profile)
    except UsageError as exc:  # at import of the locustfile: one line, exit 2, before any load
        sys.stderr.write(f"keyramp: $KEYRAMP_PROFILE: {exc}\n")
        raise SystemExit(2) from None
    workload = context.workload
    ticker: list[gevent.Greenlet] = []

    @events.test_start.add_listener
    def _prepare(environment: Any, **_: Any) -> None:
        prepare(context)
        recorder = Recorder(cell=backend, ops=workload.ops, key_samples_per_s=0,
                            sink=LocustStatsSink(environment.stats, request_type=backend))
        context.recorder = recorder
        recorder.begin(time.perf_counter())
        context.phase_started.set()
        ticker.append(gevent.spawn(_tick, recorder))

    @events.test_stop.add_listener
    def _stop(environment: Any, **_: Any) -> None:
        for greenlet in ticker:
            greenlet.kill()
        if context.recorder is not None:
            context.recorder.tick(time.perf_counter(), target_ops_per_s=None)  # what finished since the last second

    return user_class_for(context)


def _tick(recorder: Recorder) -> None:
    """Close one interval a second: Locust's statistics grow once a second, like its own."""
    while True:
        gevent.sleep(1.0)
        recorder.tick(time.perf_counter(), target_ops_per_s=None)
