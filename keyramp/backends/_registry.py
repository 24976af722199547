"""The store registry: every ``StoreSpec`` keyramp knows, found once, by name.

Built-in stores are the sub-packages of ``keyramp.backends`` that export ``SPECS`` (a new
store is one new package). A test or an embedding program adds a store for a while with
``with registered(spec): ...``; leaving the block restores the registry, so nothing leaks
into the next test. (A ``ContextVar`` would not do: Locust users run in greenlets and
probes in threads, which start with an empty context and would not see the store.)
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from keyramp.backends._params import StoreParams, load_params_file
from keyramp.backends._spec import EmulatorSpec, StoreSpec, WorkloadUserSpec
from keyramp.core import UsageError

if TYPE_CHECKING:
    from keyramp.backends._base import Backend

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "EMULATOR_FOR",
    "STORES",
    "StoreRegistry",
    "emulator_specs",
    "registered",
    "spec_for",
    "store_names",
]

#: The profile's ``backend`` when it names none.
DEFAULT_BACKEND = "datastore"


class StoreRegistry:
    """Built-in specs (discovered on first use, then fixed) plus temporarily registered ones."""

    def __init__(self, package: str = "keyramp.backends") -> None:
        self._package = package
        #: Specs added by ``registered`` blocks still open, innermost last (replaced, never mutated).
        self._extra: tuple[StoreSpec, ...] = ()

    @cached_property
    def _builtin(self) -> tuple[StoreSpec, ...]:
        root = importlib.import_module(self._package)
        found: list[StoreSpec] = []
        for info in sorted(pkgutil.iter_modules(root.__path__), key=lambda m: m.name):
            if info.ispkg:
                found.extend(getattr(importlib.import_module(f"{self._package}.{info.name}"), "SPECS", ()))
        return tuple(sorted(found, key=lambda s: s.name))

    def specs(self) -> tuple[StoreSpec, ...]:
        return self._builtin + self._extra

    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.specs())

    def get(self, name: str) -> StoreSpec:
        for spec in self.specs():
            if spec.name == name:
                return spec
        raise UsageError(f"unknown backend '{name}' (one of: {', '.join(self.names())})")

    def __contains__(self, name: object) -> bool:
        return any(s.name == name for s in self.specs())

    def tablet_boxes(self, calibration: Path | None = None) -> dict[str, StoreParams]:
        """Every store's tablet-model parameter boxes by calibration name (``firestore``,
        ``bigtable-ssd``, …): its spec's, with the fitted ranges of a ``calibration`` file
        (``keyramp calibrate`` writes one) over them; ``UsageError`` for a bad file."""
        boxes: dict[str, StoreParams] = {}
        for spec in self.specs():
            if spec.tablets is not None:
                boxes.update(spec.tablets.keyed(spec.name))
        return boxes if calibration is None else load_params_file(calibration, boxes)

    def users(self) -> dict[str, tuple[WorkloadUserSpec, frozenset[str]]]:
        """Python-workload user class name -> its declaration and the stores it serves (every spec
        carrying it); two different declarations under one name are a spec error."""
        found: dict[str, tuple[WorkloadUserSpec, frozenset[str]]] = {}
        for spec in self.specs():
            if spec.user is None:
                continue
            known, served = found.get(spec.user.name, (spec.user, frozenset()))
            if known != spec.user:
                raise ValueError(f"{spec.name}: user class {spec.user.name!r} is declared differently by "
                                 f"{', '.join(sorted(served))}")
            found[spec.user.name] = (known, served | {spec.name})
        return found

    @contextlib.contextmanager
    def registered(self, *specs: StoreSpec) -> Iterator[None]:
        """Make ``specs`` known inside the block; the registry is restored on exit."""
        for spec in specs:
            if spec.name in self or sum(s.name == spec.name for s in specs) > 1:
                raise ValueError(f"store {spec.name!r} is already registered")
        before = self._extra
        self._extra = before + specs
        try:
            yield
        finally:
            self._extra = before


STORES = StoreRegistry()


def spec_for(name: str) -> StoreSpec:
    """The spec of store ``name``; ``UsageError`` (one line) for an unknown one."""
    return STORES.get(name)


def store_names() -> tuple[str, ...]:
    return STORES.names()


def registered(*specs: StoreSpec) -> contextlib.AbstractContextManager[None]:
    return STORES.registered(*specs)


def emulator_specs() -> dict[str, EmulatorSpec]:
    """Emulator kind -> how to run it, for every store that has an official emulator."""
    return {s.emulator.kind: s.emulator for s in STORES.specs() if s.emulator is not None}


class _Drivers(Mapping[str, "type[Backend]"]):
    """``BACKENDS[name]``: the store's default driver class (a live view of the registry)."""

    def __getitem__(self, name: str) -> type[Backend]:
        if name not in STORES:
            raise KeyError(name)
        return STORES.get(name).driver()

    def __iter__(self) -> Iterator[str]:
        return iter(STORES.names())

    def __len__(self) -> int:
        return len(STORES.specs())


class _EmulatorKinds(Mapping[str, str]):
    """``EMULATOR_FOR[name]``: which emulator serves the store (stores without one are absent)."""

    def __getitem__(self, name: str) -> str:
        spec = STORES.get(name) if name in STORES else None
        if spec is None or spec.emulator is None:
            raise KeyError(name)
        return spec.emulator.kind

    def __iter__(self) -> Iterator[str]:
        return iter(s.name for s in STORES.specs() if s.emulator is not None)

    def __len__(self) -> int:
        return sum(1 for s in STORES.specs() if s.emulator is not None)


BACKENDS: Mapping[str, type[Backend]] = _Drivers()
EMULATOR_FOR: Mapping[str, str] = _EmulatorKinds()
