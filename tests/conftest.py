"""Session fixtures: the official emulators, started lazily on free ports, always stopped.

``datastore_emulator`` / ``firestore_emulator`` / ``firestore_datastore_emulator`` /
``bigtable_emulator`` return a ``RunningEmulator``; ``target_factory(backend, **fields)``
builds a ``Target`` on the right emulator with a unique namespace; ``backend_factory``
also runs ``prepare`` and closes the backend after the test.

The suite's time budget (README, "Developing keyramp") is guarded at the end of every run:
a "time budget" section names the slowest modules and tests, and any test over
``SLOW_TEST_S`` that is not marked ``slow``. It reports and never fails: CI shares its
cores, so a test's wall time is the machine's as much as the code's.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from keyramp.backends import BACKENDS, EMULATOR_FOR, Backend, Target
from keyramp.targets._emulators import EmulatorManager, RunningEmulator, sdk_root

TEST_PROJECT = "keyramp-test"
#: JVM options of the tests' Java emulators (``pytest_configure``; a ``JDK_JAVA_OPTIONS`` already set wins).
_TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


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
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's collection is the order the controller hands out
        _heavy_modules_first(items)


def _heavy_modules_first(items: list[pytest.Item]) -> None:
    """Under xdist (``--dist loadfile`` hands out whole modules, in this order): modules with a
    ``slow`` or ``browser`` test first, then those with an ``emulator`` test, then the rest, so
    the short modules fill the workers' tails. (xdist's own order puts modules with few tests
    last, which here are the long end-to-end ones: a worker ran alone for minutes at the end.)"""
    rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        heavy = 0 if item.get_closest_marker("slow") or item.get_closest_marker("browser") else (
            1 if item.get_closest_marker("emulator") else 2)
        rank[module] = min(rank.get(module, 2), heavy)
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])  # stable: a module's tests keep their order


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
    # Every `keyramp run` a test starts records the SDK version in its manifest; without this,
    # each would ask `gcloud info` again (about a second of CPU, on a machine already short of it).
    os.environ.setdefault("KEYRAMP_CLOUD_SDK_ROOT", str(sdk_root()))
    # The Java emulators the tests start (session fixtures, private ones, those a `keyramp run`
    # starts) JIT-compile with C1 only and collect with one GC thread: about 40 % less CPU at
    # start-up and under load on a 2-core machine, and no test depends on C2's steady state.
    os.environ.setdefault("JDK_JAVA_OPTIONS", _TEST_JVM_OPTIONS)
    start = EmulatorManager._start

    def guarded(self: EmulatorManager, kinds: Any, *, consistency: float | None) -> Any:
        item = config.stash.get(_RUNNING, None)
        real_sdk = self._sdk_root is None  # tests of the manager itself pass a fake SDK
        if real_sdk and item is not None and item.get_closest_marker("emulator") is None:
            pytest.fail(f"{item.nodeid} starts an emulator but is not marked @pytest.mark.emulator", pytrace=False)
        return start(self, kinds, consistency=consistency)

    EmulatorManager._start = guarded  # type: ignore[method-assign]
    if getattr(config.option, "numprocesses", None):  # the xdist controller
        config.option.loadscopereorder = False  # the order below, not xdist's by test count
    config.pluginmanager.register(_TimeBudget(), "keyramp-time-budget")
    _share_compiled_templates()


def _share_compiled_templates() -> None:
    """Every web app the tests create (one per results directory, ~100 of them) shares one
    in-memory Jinja bytecode cache: compiling the templates afresh cost ~2 s CPU per app,
    most of a page test's time. Jinja keys each entry by template name and checks the
    source's checksum, so a page is rendered from exactly the code it would compile."""
    import jinja2
    from flask import Flask

    class SharedCode(jinja2.BytecodeCache):
        def __init__(self) -> None:
            self.code: dict[str, bytes] = {}

        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            if (code := self.code.get(bucket.key)) is not None:
                bucket.bytecode_from_string(code)

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            self.code[bucket.key] = bucket.bytecode_to_string()

    Flask.jinja_options = {**Flask.jinja_options, "bytecode_cache": SharedCode()}


# -- The time budget: reported, never enforced ------------------------------------------------------
#: A test whose own body (its call, not a shared fixture's set-up) takes longer than this
#: should be marked ``slow``, or share its run with its module's other tests.
SLOW_TEST_S = 30.0
#: How many modules and tests the report names.
_SHOW = 8


class _TimeBudget:
    """Adds up each test's time (a module fixture's set-up counts for its first test) and
    prints the "time budget" section at the end of the run. Under pytest-xdist it runs in the
    controller, which sees every worker's reports (their ``keywords`` carry the markers) but
    collects nothing itself."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.calls: dict[str, float] = {}
        self.marked_slow: set[str] = set()
        self.started = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.spent[report.nodeid] += report.duration
        if report.when == "call":
            self.calls[report.nodeid] = report.duration
        if "slow" in report.keywords:
            self.marked_slow.add(report.nodeid)

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if len(self.spent) < 2:
            return  # a single test: nothing to budget
        by_module: dict[str, float] = defaultdict(float)
        for nodeid, seconds in self.spent.items():
            by_module[nodeid.split("::", 1)[0]] += seconds
        write = terminalreporter.write_line
        terminalreporter.section("time budget")
        workers = getattr(config.option, "numprocesses", None) or 0
        wall = time.monotonic() - self.started
        write(f"{len(self.spent)} tests, {sum(self.spent.values()) / 60:.1f} min in tests, {wall / 60:.1f} min wall"
              + (f" on {workers} xdist workers" if workers else "")
              + " (all of .ci/run must stay under 1,000 s on a 2-core machine with one core busy: README)")
        for title, seconds in (("slowest modules", by_module), ("slowest tests", self.spent)):
            write(f"{title}:")
            for name, s in _top(seconds):
                write(f"  {s:6.1f} s  {name}")
        for name, s in self.calls.items():
            if s > SLOW_TEST_S and name not in self.marked_slow:
                write(f"{name} took {s:.0f} s and is not marked slow: mark it, or share its run through a "
                      "module fixture", yellow=True)


def _top(seconds: dict[str, float], n: int = _SHOW) -> list[tuple[str, float]]:
    return sorted(seconds.items(), key=lambda kv: -kv[1])[:n]
