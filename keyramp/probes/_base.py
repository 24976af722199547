"""What every probe gets: the cell's store, a time budget, its parameters; small timing helpers.

A probe is a plain function ``probe(ctx) -> dict`` that measures one effect directly
(no Locust): its dict goes into the cell summary under ``probe``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from keyramp.backends import Backend, StoreSpec, Target, spec_for

__all__ = ["ProbeContext", "best_ms", "error_text"]


@dataclass(kw_only=True)
class ProbeContext:
    backend_class: type[Backend]
    target: Target
    params: Mapping[str, Any]
    budget_s: float = 30.0
    seed: int = 1
    #: The legacy Datastore emulator's ``--consistency`` (what the consistency probe expects).
    consistency: float = 1.0
    started: float = field(default_factory=time.perf_counter)
    _made: list[Backend] = field(default_factory=list, repr=False)

    @property
    def backend_name(self) -> str:
        return self.target.backend

    @property
    def store(self) -> StoreSpec:
        """What the cell's store can do (its spec)."""
        return spec_for(self.target.backend)

    def backend(self, **target_fields: Any) -> Backend:
        """A new client (own channel); ``target_fields`` override the cell's Target."""
        target = dataclasses.replace(self.target, **target_fields) if target_fields else self.target
        instance = self.backend_class(target)
        self._made.append(instance)
        return instance

    def remaining_s(self) -> float:
        return self.budget_s - (time.perf_counter() - self.started)

    def close(self) -> None:
        for instance in self._made:
            try:
                instance.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        self._made.clear()


def best_ms(fn: Callable[[], object], repeat: int) -> float:
    """Best (minimum) wall time of ``fn`` in ms over ``repeat`` calls, after one warm-up call.

    The minimum, not the median: on a shared 2-core machine other processes only ever add
    time, so the fastest run is the least noisy estimate of what the store itself costs.
    """
    fn()
    samples = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000.0)
    return round(min(samples), 3)


def error_text(exc: BaseException) -> dict[str, str]:
    """The error class the recorder would log plus the store's own first message line."""
    from keyramp.backends import classify  # deferred: start-up cost (grpc; the profile check loads probes)

    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return {"class": classify(exc), "type": type(exc).__name__, "message": message[:300]}


def percentile_ms(values: Iterable[float], q: float) -> float | None:
    data = sorted(values)
    if not data:
        return None
    return round(data[min(len(data) - 1, int(q * len(data)))] * 1000.0, 3)
