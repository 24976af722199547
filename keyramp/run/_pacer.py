"""Open-model arrival pacing: one shared stream of intended start times per process.

Every operation gets an *intended* start time from the schedule, independent of how
fast earlier operations finished; latency is then measured from that time, so a
stalled store shows up as latency instead of silently lowering the request rate
(coordinated omission). Slots older than ``drop_after_s`` are not executed but
counted as dropped (k6's "dropped iterations"): users could not keep up.

All users of a process share one ``Pacer``; gevent runs them on one thread, so taking
a slot needs no lock. With N worker processes each gets ``share = 1/N`` of the rate:
``Pacing`` is that share of a cell's schedule, the same on the master and on a worker.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from keyramp.profile import Cell, Schedule

__all__ = ["Pacer", "Pacing"]

#: Below this rate (ops/s) we re-read the schedule at least every second of slack.
_MIN_RATE = 1e-3


class Pacer:
    """Hands out intended start times (``time.perf_counter()`` seconds)."""

    def __init__(
        self,
        *,
        rate: Callable[[float], float],
        start: float,
        duration_s: float,
        time_scale: float = 1.0,
        share: float = 1.0,
        drop_after_s: float = 1.0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._rate = rate
        self.start = start
        self.end = start + duration_s
        self._scale = time_scale
        self._share = share
        self._drop_after = drop_after_s
        self._clock = clock
        self._next = start
        # Slots are seg_start + k / rate within a constant-rate segment: no float drift.
        self._seg_start = start
        self._seg_rate = -1.0
        self._k = 0
        self.issued = 0
        self.dropped = 0

    def target_rate(self, wall_t: float) -> float:
        """This process's target ops/s at ``wall_t`` seconds after start."""
        return self._rate(wall_t * self._scale) * self._share

    def _rate_at_next(self) -> float:
        rate = self.target_rate(self._next - self.start)
        if rate != self._seg_rate:
            self._seg_start, self._seg_rate, self._k = self._next, rate, 0
        return rate

    def _advance(self) -> float:
        """Return the current slot and move to the next one."""
        slot = self._next
        rate = self._rate_at_next()
        if rate <= _MIN_RATE:
            # Idle period: jump a second ahead and look again; no slot is issued here.
            self._next = slot + 1.0
            return -1.0
        self._k += 1
        self._next = self._seg_start + self._k / rate
        return slot

    def next_slot(self) -> float | None:
        """The next intended start time, or ``None`` once the phase is over.

        Slots already more than ``drop_after_s`` in the past are skipped and counted.
        """
        now = self._clock()
        cutoff = now - self._drop_after
        while True:
            if self._next >= self.end:
                return None
            if self._next < cutoff:
                # Skip in bulk: a piecewise-constant rate makes this exact within a step.
                rate = self._rate_at_next()
                if rate > _MIN_RATE:
                    n = max(1, int((cutoff - self._next) * rate))
                    self._k += n
                    self._next = self._seg_start + self._k / rate
                    self.dropped += n
                else:
                    self._next += 1.0
                continue
            slot = self._advance()
            if slot >= 0:
                self.issued += 1
                return slot


@dataclass(frozen=True, kw_only=True)
class Pacing:
    """One load process's share of a cell's schedule over the measured phase."""

    schedule: Schedule
    duration_s: float
    time_scale: float
    #: Slots older than this are dropped, not executed (``Pacer``).
    drop_after_s: float
    #: This process's share of the rate (1/N on each of N workers).
    share: float = 1.0

    @classmethod
    def of(cls, cell: Cell, *, share: float = 1.0) -> Pacing:
        return cls(schedule=cell.schedule, duration_s=cell.duration_s, time_scale=cell.time_scale,
                   drop_after_s=cell.settings.schedule.drop_after_s, share=share)

    def pacer(self, start: float) -> Pacer | None:
        """The phase's pacer from ``start`` (a ``perf_counter`` instant); None for a closed model."""
        if not self.schedule.open_model:
            return None
        return Pacer(rate=self.schedule.rate, start=start, duration_s=self.duration_s, time_scale=self.time_scale,
                     share=self.share, drop_after_s=self.drop_after_s)
