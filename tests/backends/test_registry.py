"""The store registry: built-in stores found from their packages, temporary registration, live views."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from _memory import MemoryStore, memory_spec

import keyramp
from keyramp.backends import BACKENDS, EMULATOR_FOR, STORES, registered, spec_for, store_names
from keyramp.backends._registry import StoreRegistry
from keyramp.core._errors import UsageError
from keyramp.keys import STRATEGIES
from keyramp.targets._emulators import EMULATORS, endpoints_from_env

_PACKAGE = Path(keyramp.__file__).parent / "backends"


def test_builtin_stores_are_the_packages_that_declare_specs() -> None:
    packages = {p.name for p in _PACKAGE.iterdir() if (p / "_spec.py").exists()}
    owners = {spec.name: type(spec.drivers["client"]) for spec in STORES.specs()}
    assert packages == {"bigtable", "datastore", "firestore"}
    assert set(store_names()) == {"bigtable", "datastore", "firestore", "firestore-datastore"}
    assert all(owner is str for owner in owners.values())  # drivers load lazily, by path


def test_each_builtin_driver_is_named_after_its_store() -> None:
    for spec in STORES.specs():
        assert spec.driver().name == spec.name, spec.name
        assert BACKENDS[spec.name] is spec.driver()


def test_registered_store_is_visible_inside_the_block_only() -> None:
    spec = memory_spec(MemoryStore())
    with registered(spec):
        assert spec_for("memory") is spec and "memory" in BACKENDS and "memory" in store_names()
        assert "memory" not in EMULATOR_FOR and "memory" not in EMULATORS  # no emulator process
        assert STRATEGIES["sequential"].backends >= {"memory"}
        assert "memory" not in STRATEGIES["server_allocated"].backends  # it lacks an allocator
    assert "memory" not in store_names() and "memory" not in BACKENDS
    with pytest.raises(UsageError, match=re.escape("unknown backend 'memory' (one of: bigtable, datastore")):
        spec_for("memory")


def test_registration_is_undone_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), registered(memory_spec(MemoryStore())):
        raise RuntimeError("boom")
    assert "memory" not in STORES


def test_a_known_name_cannot_be_registered_twice() -> None:
    with pytest.raises(ValueError, match="already registered"), registered(dataclasses.replace(spec_for("bigtable"))):
        pass
    spec = memory_spec(MemoryStore())
    with pytest.raises(ValueError, match="already registered"), registered(spec, spec):
        pass


def test_a_fresh_registry_discovers_the_same_stores() -> None:
    # No state is shared between registries: a second one finds the packages again.
    assert StoreRegistry().names() == STORES.names()


def test_emulator_views_follow_the_specs() -> None:
    assert dict(EMULATOR_FOR) == {s.name: s.emulator.kind for s in STORES.specs() if s.emulator}
    env = {spec.env_var: f"127.0.0.1:{spec.compose_port}" for spec in EMULATORS.values()}
    assert endpoints_from_env(env) == {kind: f"127.0.0.1:{spec.compose_port}" for kind, spec in EMULATORS.items()}
