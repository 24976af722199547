"""The emulator target: attach (environment / explicit endpoints), reuse (state file) or start
the official emulators; reset the store before each cell; notice an emulator that died.

A store with no emulator process (its spec's ``in_process`` part, e.g. a store declared by a
test) is local too: its spec names its endpoint and how to clear it; nothing is started."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from keyramp.backends import EMULATOR_FOR, spec_for
from keyramp.core import RunFailed, UsageError
from keyramp.targets._base import RunTarget, Warmup
from keyramp.targets._emulators import (
    EmulatorManager,
    RunningEmulator,
    default_state_dir,
    endpoints_from_env,
    log_tail,
    reset,
)
from keyramp.targets._proxy_process import upstream_of
from keyramp.targets._store_front import StoreFront

if TYPE_CHECKING:
    from keyramp.backends import Backend, Target
    from keyramp.profile import Cell, Profile

__all__ = ["FIRST_WARMUP_S", "EmulatorTarget", "cell_warmup"]

#: Warm-up of the first cell on an emulator this run started itself (a cold JVM) at least.
FIRST_WARMUP_S = 10.0


def cell_warmup(backend: str, *, warmed: set[str], started: Collection[str]) -> Warmup:
    """How a cell on ``backend`` warms up, cells taken in run order (the run and ``run --plan``).

    The first cell on each emulator settles (a JVM emulator keeps JIT-compiling well after its
    first requests), for at least ``FIRST_WARMUP_S`` on an emulator this run ``started`` (a
    cold JVM); later cells, and a store with no emulator process, warm up for the profile's
    ``warmup`` alone. Adds the cell's emulator to ``warmed``.
    """
    if spec_for(backend).in_process is not None:
        return Warmup()
    kind = EMULATOR_FOR[backend]
    first = kind not in warmed
    warmed.add(kind)
    return Warmup(settle=first, minimum_s=FIRST_WARMUP_S if first and kind in started else None)


class EmulatorTarget(RunTarget):
    kind: ClassVar[str] = "emulator"

    def __init__(self, profile: Profile, *, endpoints: Mapping[str, str] | None = None,
                 state_dir: Path | None = None) -> None:
        super().__init__(profile)
        #: Endpoints by emulator kind; ``None``: the ``*_EMULATOR_HOST`` variables, then reuse or start.
        self._given = dict(endpoints) if endpoints is not None else endpoints_from_env(os.environ)
        self._state_dir = state_dir
        for backend in dict.fromkeys(c.backend for c in profile.cells):
            spec = spec_for(backend)
            if spec.emulator is None and spec.in_process is None:
                raise UsageError(f"{profile.name}: {backend} has no local emulator; use target = 'cloud'")
        self.kinds = sorted({EMULATOR_FOR[c.backend] for c in profile.cells if c.backend in EMULATOR_FOR})
        self.endpoints: dict[str, str] = {}
        #: Kinds this run launched (cold JVMs), not attached or reused.
        self.started: list[str] = []
        #: Emulators this run launched or leases from the state file: their pid can be polled.
        self.owned: dict[str, RunningEmulator] = {}
        self._manager: EmulatorManager | None = None
        #: Kinds a cell has run on already (only the first cell on each emulator settles).
        self._warmed: set[str] = set()
        #: ``fidelity = "store"``: the store proxies in front of the emulators (docs/fidelity.md), and
        #: their endpoints by kind (where the cells' operations go).
        self.proxied: dict[str, str] = {}
        self.front = (StoreFront(profile, state_dir=state_dir or default_state_dir())
                      if profile.emulator.fidelity == "store" else None)

    def open(self, *, say: Callable[[str], None], note: Callable[[str], None],
             namespaces: Mapping[str, str]) -> dict[str, Any]:
        given = {}
        for kind, endpoint in self._given.items():  # a shared store proxy's variable: the emulator behind it
            upstream = upstream_of(self._state_dir or default_state_dir(), endpoint)
            if upstream is not None:
                note(f"{kind}: {endpoint} is a shared store proxy; this run uses the emulator behind it, {upstream}")
            given[kind] = upstream or endpoint
        missing = [k for k in self.kinds if k not in given]
        if missing:
            self._manager = EmulatorManager(state_dir=self._state_dir)
            # up() applies the consistency to the datastore emulator only.
            running = self._manager.up(missing, consistency=self.profile.emulator.consistency, for_run=True)
            # From up() itself: a recorded emulator it replaced (dead or unhealthy) is ours too.
            self.started = list(self._manager.last_started)
            reused = [k for k in missing if k not in self.started]
            note(f"emulators started: {', '.join(self.started) or 'none'} (reused: {', '.join(reused) or 'none'})")
            self.owned = dict(running)
            given.update({k: e.endpoint for k, e in running.items()})
        self.endpoints = given
        if self.front is None:
            return {}
        store_of = {EMULATOR_FOR[c.backend]: c.backend for c in self.profile.cells if c.backend in EMULATOR_FOR}
        self.proxied = self.front.open({k: given[k] for k in self.kinds}, store_of, note)
        return {"target": self.front.describe()}

    def address(self, cell: Cell, base: Target) -> Target:
        local = spec_for(cell.backend).in_process
        if local is not None:
            return replace(base, endpoint=local.endpoint)
        kind = EMULATOR_FOR[cell.backend]
        if self.front is not None:
            return replace(base, endpoint=self.proxied[kind])
        return replace(base, endpoint=self.endpoints[kind])

    def died(self, kind: str) -> str | None:
        """A one-line reason if the emulator of ``kind`` that we know the pid of, or the store
        proxy in front of it, has exited."""
        emu = self.owned.get(kind)
        if emu is not None and not emu.alive():
            return f"emulator {kind} exited (log tail: {log_tail(emu.log_path)})"
        return self.front.died(kind) if self.front is not None else None

    def before_cell(self, cell: Cell, backend_class: type[Backend], address: Target,
                    phase: Callable[[str], None]) -> Warmup:
        local = spec_for(cell.backend).in_process
        if local is not None:  # nothing to start or watch, and no JVM to warm: the profile's warm-up
            phase("resetting store")
            local.reset(address.endpoint or "", project=address.project, instance=address.instance, table=None,
                        timeout_s=30.0)
            return Warmup()
        kind = EMULATOR_FOR[cell.backend]
        died = self.died(kind)
        if died is not None:
            raise RunFailed(f"{cell.id}: {died}")
        phase("resetting store")
        reset(kind, self.endpoints[kind], project=address.project)  # at the emulator itself, never through a proxy
        if self.front is not None:
            self.front.before_cell(kind, cell, address)
        return cell_warmup(cell.backend, warmed=self._warmed, started=self.started)

    def measuring(self, cell: Cell) -> None:
        if self.front is not None and cell.backend in EMULATOR_FOR:
            self.front.measuring(EMULATOR_FOR[cell.backend], cell)

    def measured(self, cell: Cell) -> dict[str, Any] | None:
        if self.front is None or cell.backend not in EMULATOR_FOR:
            return None
        return self.front.measured(EMULATOR_FOR[cell.backend], cell)

    def check(self, cell: Cell, *, ops_last_second: int) -> str | None:
        kind = EMULATOR_FOR.get(cell.backend)
        return None if kind is None else self.died(kind)

    def close(self) -> None:
        try:
            if self.front is not None:
                self.front.close()
        finally:
            if self._manager is not None:
                self._manager.release()
