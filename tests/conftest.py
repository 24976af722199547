"""Session fixtures: the official emulators, started lazily on free ports, always stopped.

``datastore_emulator`` / ``firestore_emulator`` / ``firestore_datastore_emulator`` /
``bigtable_emulator`` return a ``RunningEmulator``; ``target_factory(backend, **fields)``
builds a ``Target`` on the right emulator with a unique namespace; ``backend_factory``
also runs ``prepare`` and closes the backend after the test.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from keyramp.backends import BACKENDS, EMULATOR_FOR, Backend, Target
from keyramp.targets._emulators import EmulatorManager, RunningEmulator

TEST_PROJECT = "keyramp-test"


@pytest.fixture(scope="session")
def emulator_manager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorManager]:
    manager = EmulatorManager(state_dir=tmp_path_factory.mktemp("emulator-state"))
    try:
        yield manager
    finally:
        manager.down()  # safety net: whatever a fixture left behind


def _emulator(manager: EmulatorManager, kind: str) -> Iterator[RunningEmulator]:
    try:
        yield manager.up([kind])[kind]
    finally:
        manager.down([kind])


@pytest.fixture(scope="session")
def datastore_emulator(emulator_manager: EmulatorManager) -> Iterator[RunningEmulator]:
    yield from _emulator(emulator_manager, "datastore")


@pytest.fixture(scope="session")
def firestore_emulator(emulator_manager: EmulatorManager) -> Iterator[RunningEmulator]:
    yield from _emulator(emulator_manager, "firestore")


@pytest.fixture(scope="session")
def firestore_datastore_emulator(emulator_manager: EmulatorManager) -> Iterator[RunningEmulator]:
    yield from _emulator(emulator_manager, "firestore-datastore")


@pytest.fixture(scope="session")
def bigtable_emulator(emulator_manager: EmulatorManager) -> Iterator[RunningEmulator]:
    yield from _emulator(emulator_manager, "bigtable")


def emulator_fixture_name(kind: str) -> str:
    return f"{kind.replace('-', '_')}_emulator"


@pytest.fixture
def target_factory(request: pytest.FixtureRequest) -> Callable[..., Target]:
    """``target_factory("bigtable", timeout_s=2)`` -> a Target on a running emulator, unique namespace."""

    def make(backend: str, **fields: Any) -> Target:
        emulator: RunningEmulator = request.getfixturevalue(emulator_fixture_name(EMULATOR_FOR[backend]))
        fields.setdefault("namespace", f"kr_{uuid.uuid4().hex[:12]}")
        fields.setdefault("project", TEST_PROJECT)
        fields.setdefault("endpoint", emulator.endpoint)
        return Target(backend=backend, **fields)

    return make


@pytest.fixture
def backend_factory(target_factory: Callable[..., Target]) -> Iterator[Callable[..., Backend]]:
    """``backend_factory("datastore", **target_fields)`` -> a prepared backend, closed after the test."""
    made: list[Backend] = []

    def make(backend: str, **fields: Any) -> Backend:
        target = target_factory(backend, **fields)
        cls = BACKENDS[backend]
        cls.prepare(target)
        instance = cls(target)
        made.append(instance)
        return instance

    yield make
    for instance in made:
        instance.close()


#: Fixtures that start (or reach) an official emulator: a test using one must be marked
#: ``emulator`` so that ``pytest -m "not emulator"`` runs on a machine without gcloud.
_EMULATOR_FIXTURES = frozenset({"emulator_manager", "datastore_emulator", "firestore_emulator",
                                "firestore_datastore_emulator", "bigtable_emulator", "private_emulator"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a test that needs an emulator but is not marked ``emulator`` (markers are strict)."""
    unmarked = [
        item.nodeid
        for item in items
        if _EMULATOR_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("emulator") is None
    ]
    if unmarked:
        raise pytest.UsageError(f"tests use an emulator fixture without @pytest.mark.emulator: {', '.join(unmarked)}")


#: The test running now (setup, call and teardown), for the guard below.
_RUNNING = pytest.StashKey[pytest.Item]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    item.config.stash[_RUNNING] = item
    try:
        return (yield)
    finally:
        del item.config.stash[_RUNNING]


def pytest_configure(config: pytest.Config) -> None:
    """Also refuse, at run time, an unmarked test whose own fixture or body starts a real
    emulator (the name check above only knows the shared fixtures)."""
    start = EmulatorManager._start

    def guarded(self: EmulatorManager, kinds: Any, *, consistency: float | None) -> Any:
        item = config.stash.get(_RUNNING, None)
        real_sdk = self._sdk_root is None  # tests of the manager itself pass a fake SDK
        if real_sdk and item is not None and item.get_closest_marker("emulator") is None:
            pytest.fail(f"{item.nodeid} starts an emulator but is not marked @pytest.mark.emulator", pytrace=False)
        return start(self, kinds, consistency=consistency)

    EmulatorManager._start = guarded  # type: ignore[method-assign]
