"""Rate limits the model enforces, as the Generic Cell Rate Algorithm (a token bucket in time form).

A resource of ``rate`` (ops/s) keeps one number, ``tat``: the time its queue of admitted work
ends. An operation of cost c arriving at t is admitted when the queue ahead of it is at most
``tolerance`` seconds long (``max(tat, t) - t <= tolerance``), and then extends it by c / rate.
So a resource never serves more than ``rate`` in the long run, and a steady demand above it is
served at exactly ``rate`` (the bucket holds ``rate × tolerance`` of burst); demand below it,
however bursty within ``tolerance``, is served whole.

The tolerance is the model's load window (10 s of model time: the fast model's step, within
which it serves ``min(load, capacity)`` whatever the burst) and at least ``MIN_BURST`` operations:
a resource scaled down by K sees K times fewer operations, and a bucket of less than a few
operations would throttle Poisson arrivals far below the rate (a unit written at 0.01/s at
K = 100 would refuse half its writes at half its limit).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = ["MIN_BURST", "KeyLimits", "RateLimit", "tolerance"]

#: The fewest operations a limit's bucket holds (see the module doc).
MIN_BURST: Final = 10.0


def tolerance(rate: float, window_s: float) -> float:
    """Seconds of queued work a resource of ``rate`` accepts: ``window_s``, at least ``MIN_BURST`` ops."""
    return max(window_s, MIN_BURST / rate)


class RateLimit:
    """One resource's limit: a node, a group of tablets on one node, the cluster."""

    __slots__ = ("rate", "tat", "tol")

    def __init__(self, rate: float, window_s: float) -> None:
        self.rate = rate
        self.tol = tolerance(rate, window_s)
        self.tat = 0.0

    def ok(self, now: float) -> bool:
        return self.tat - now <= self.tol

    def take(self, now: float, cost: float) -> None:
        self.tat = (self.tat if self.tat > now else now) + cost / self.rate


class KeyLimits:
    """The per-key write limit of every unit (document, entity, entity group, row), one ``tat`` each.

    A unit whose queue has drained (``tat <= now``) is the same as one never written, so it is
    forgotten on the next sweep: memory follows the units written within the last window, not
    every unit ever written.
    """

    __slots__ = ("_sweep_every", "next_sweep", "period", "tat", "tol")

    def __init__(self, rate: float, window_s: float) -> None:
        self.period = 1.0 / rate  # seconds of the unit's time one write takes
        self.tol = tolerance(rate, window_s)
        self.tat: dict[bytes, float] = {}
        self._sweep_every = max(window_s, self.tol)
        self.next_sweep = 0.0

    def ok(self, units: Iterable[bytes], now: float) -> bool:
        tat, limit = self.tat, now + self.tol
        return all(tat.get(u, now) <= limit for u in units)

    def take(self, units: Iterable[bytes], now: float) -> None:
        tat, period = self.tat, self.period
        for u in units:
            t = tat.get(u, now)
            tat[u] = (t if t > now else now) + period

    def sweep(self, now: float) -> None:
        """Forget the units whose queue has drained (called at most once per window)."""
        self.tat = {u: t for u, t in self.tat.items() if t > now}
        self.next_sweep = now + self._sweep_every

    def __len__(self) -> int:
        return len(self.tat)
