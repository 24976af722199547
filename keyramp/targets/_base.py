"""The target seam: where a run's load goes, behind one small interface.

The runner and the distributed master call every target the same way; what differs —
starting or reusing emulators and resetting them between cells, or the cloud opt-in,
plan, caps and clean-up — stays behind it:

* :meth:`RunTarget.open` once per run, before the first cell (start/attach emulators;
  print the cloud budget and load credentials); returns what the manifest records;
* :meth:`RunTarget.address` the per-cell address (a ``backends.Target``);
* :meth:`RunTarget.before_cell` (reset the emulator / refuse a non-empty namespace), which
  also says how the cell must warm up;
* :meth:`RunTarget.measuring` when a cell's measured phase starts, :meth:`RunTarget.measured`
  when it ended (a store model in front of the emulators: docs/fidelity.md);
* :meth:`RunTarget.check` once a second during the measured phase (an emulator or a store
  proxy that died, a cloud cap passed);
* :meth:`RunTarget.after_cell` (clean-up, for the manifest) and :meth:`RunTarget.close`.

A distributed worker never opens a target: it receives the cell's address in its frozen
plan and calls :meth:`RunTarget.check_host` for its own host.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from keyramp.backends import Backend, Target
    from keyramp.profile import Cell, Profile

__all__ = ["RunTarget", "Warmup"]


@dataclass(frozen=True, kw_only=True)
class Warmup:
    """How a cell warms up on this target: at least ``minimum_s`` of unmeasured operations
    (``None`` = the profile's ``warmup`` alone), then, with ``settle``, until latency stops
    improving (a fresh JVM emulator keeps JIT-compiling after its first requests)."""

    settle: bool = False
    minimum_s: float | None = None

    def seconds(self, profile_warmup_s: float) -> float:
        """The fixed part of the warm-up: the profile's ``warmup``, raised to ``minimum_s`` (a
        profile without warm-up gets none: it asked to measure from the first operation)."""
        if profile_warmup_s > 0 and self.minimum_s is not None:
            return max(profile_warmup_s, self.minimum_s)
        return profile_warmup_s


class RunTarget(ABC):
    """Where one run's load goes. Subclasses are registered by ``profile.target`` name."""

    #: The profile's ``target`` value this class serves.
    kind: ClassVar[str]

    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    @classmethod
    def check_host(cls, environ: Mapping[str, str]) -> None:
        """On a worker host: refuse (``UsageError``) an environment this target cannot run from."""

    @abstractmethod
    def open(self, *, say: Callable[[str], None], note: Callable[[str], None],
             namespaces: Mapping[str, str]) -> dict[str, Any]:
        """Make the target ready for the run's cells; returns entries for the manifest.
        ``say`` what the user must see (a cloud budget), ``note`` what ``--quiet`` hides."""

    @abstractmethod
    def address(self, cell: Cell, base: Target) -> Target:
        """Where ``cell``'s operations go: ``base`` (namespace, project, timeout; no endpoint)
        pointed at this target."""

    @abstractmethod
    def before_cell(self, cell: Cell, backend_class: type[Backend], address: Target,
                    phase: Callable[[str], None]) -> Warmup:
        """Before the cell's store is prepared: make its namespace empty and ours."""

    def measuring(self, cell: Cell) -> None:
        """The cell's measured phase starts now (a store model in front of the store starts its clock)."""

    def measured(self, cell: Cell) -> dict[str, Any] | None:
        """What the target itself saw of the cell's measured phase (a store proxy's counts), or None.
        Called once the phase ended, also after a failure: never raises."""
        return None

    def check(self, cell: Cell, *, ops_last_second: int) -> str | None:
        """Once a second in the measured phase, with the operations completed in the second
        that just closed (all workers): a one-line reason to abort, else None."""
        return None

    def after_cell(self, backend_class: type[Backend], address: Target, *,
                   failed: bool) -> dict[str, Any] | None:
        """After the cell (also after a failure: then never raise, record instead)."""
        return None

    def close(self) -> None:
        """After the run, whatever happened: stop what :meth:`open` started."""
