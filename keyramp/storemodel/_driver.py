"""The offline reference run: a launch's stream of operations through a ``StoreModel``, with retries.

Each operation is offered at its time; a throttled one is sent again with probability
``retry`` (the box's ``retry_reoffer``) after a backoff, as often as it keeps being throttled
(geometric attempts: in steady state a tablet at demand d and capacity C sees d / (1 − a·p)
requests, the fast model's figure). The backoff is what Google's clients do on
RESOURCE_EXHAUSTED / ABORTED: exponential from 0.1 s by 1.3 per attempt, capped at 60 s,
with full jitter (a uniform draw below the bound), on the model's clock (÷ ``time_scale``).
The fast model puts every retry in its next 10-s step instead: the steady state is the same,
the timing of a retry storm is not.

Figures per step of ``step_s`` (the fast model's ``Outcome``, same definitions): operations
and requests per second, the share of the step's requests throttled, tablets at its end.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from keyramp.storemodel._model import StoreModel
from keyramp.storemodel._types import StoreOp

__all__ = ["BACKOFF_INITIAL_S", "BACKOFF_MAX_S", "BACKOFF_MULTIPLIER", "THROTTLED_STEP", "ReferenceOutcome",
           "reference_run"]

BACKOFF_INITIAL_S: Final = 0.1
BACKOFF_MULTIPLIER: Final = 1.3
BACKOFF_MAX_S: Final = 60.0
#: A step counts as throttled above this share (adapt_s), as in the fast model.
THROTTLED_STEP: Final = 0.01


@dataclass(frozen=True, kw_only=True)
class ReferenceOutcome:
    """What the reference model says of one launch stream (every figure modelled)."""

    step_s: float
    t: tuple[float, ...]  # end of each step, launch seconds
    offered: tuple[float, ...]  # operations/s (first attempts)
    attempts: tuple[float, ...]  # requests/s (first attempts and retries)
    throttled: tuple[float, ...]  # share of the step's requests throttled
    tablets: tuple[int, ...]  # tablets over all spaces at the end of each step
    operations: int
    requests: int
    throttled_requests: int
    #: operations throttled on their last attempt (not sent again)
    failed: int
    by_cause: Mapping[str, int] = field(default_factory=dict)

    @property
    def throttled_fraction(self) -> float:
        """Throttled requests ÷ requests over the launch (without retries: ÷ operations)."""
        return self.throttled_requests / self.requests if self.requests else 0.0

    @property
    def peak_throttled_fraction(self) -> float:
        return max(self.throttled, default=0.0)

    @property
    def adapt_s(self) -> float | None:
        """From the first throttled step to the end of the last; 0 if none; None if still throttled at the end."""
        hot = [i for i, share in enumerate(self.throttled) if share > THROTTLED_STEP]
        if not hot:
            return 0.0
        if hot[-1] == len(self.t) - 1:
            return None
        return self.t[hot[-1]] - self.t[hot[0]] + self.step_s

    @property
    def served(self) -> tuple[float, ...]:
        """Requests/s served per step."""
        return tuple(a * (1.0 - s) for a, s in zip(self.attempts, self.throttled, strict=True))

    def to_json(self) -> dict[str, Any]:
        return {"modelled": True, "step_s": self.step_s, "t": list(self.t), "offered": list(self.offered),
                "attempts": list(self.attempts), "throttled": list(self.throttled), "tablets": list(self.tablets),
                "operations": self.operations, "requests": self.requests,
                "throttled_requests": self.throttled_requests, "failed": self.failed, "by_cause": dict(self.by_cause),
                "throttled_fraction": self.throttled_fraction, "peak_throttled_fraction": self.peak_throttled_fraction,
                "adapt_s": self.adapt_s}


class _Steps:
    """Per-step tallies, grown as time advances."""

    def __init__(self, step_s: float, model: StoreModel) -> None:
        self.step_s, self.model = step_s, model
        self.ops: list[int] = []
        self.reqs: list[int] = []
        self.thr: list[int] = []
        self.tablets: list[int] = []

    def at(self, t: float) -> int:
        step = int(t // self.step_s)
        while len(self.ops) <= step:
            if self.ops:
                self.tablets[-1] = self.model.tablets()
            self.ops.append(0)
            self.reqs.append(0)
            self.thr.append(0)
            self.tablets.append(0)
        return step

    def outcome(self, steps: int, **totals: Any) -> ReferenceOutcome:
        self.at((steps - 1) * self.step_s)
        self.tablets[-1] = self.model.tablets()
        n, s = steps, self.step_s
        return ReferenceOutcome(
            step_s=s, t=tuple((i + 1) * s for i in range(n)), offered=tuple(o / s for o in self.ops[:n]),
            attempts=tuple(r / s for r in self.reqs[:n]),
            throttled=tuple(th / r if r else 0.0 for th, r in zip(self.thr[:n], self.reqs[:n], strict=True)),
            tablets=tuple(self.tablets[:n]), **totals)


def reference_run(stream: Iterable[tuple[float, StoreOp]], model: StoreModel, *, retry: float = 0.0,
                  step_s: float = 10.0, duration_s: float | None = None, seed: int = 0) -> ReferenceOutcome:
    """Offer ``stream`` (``(t, op)`` in time order, launch seconds) to ``model``; retries as the module says.

    ``duration_s``: the launch's length (steps up to it, retries after it dropped); default: the
    stream's last time."""
    if not 0.0 <= retry < 1.0:
        raise ValueError(f"retry: a share in [0, 1), got {retry!r}")
    if step_s <= 0:
        raise ValueError(f"step_s: must be > 0, got {step_s!r}")
    rng = random.Random(seed)
    steps = _Steps(step_s, model)
    pending: list[tuple[float, int, int, StoreOp]] = []  # (t, seq, attempt, op): retries
    seq = operations = requests = throttled = failed = 0
    by_cause = {"key": 0, "range": 0, "node": 0}
    horizon = math.inf if duration_s is None else duration_s
    last = 0.0
    it = iter(stream)
    nxt = next(it, None)
    while nxt is not None or pending:
        if pending and (nxt is None or pending[0][0] < nxt[0]):
            t, _, attempt, op = heapq.heappop(pending)
            if t >= horizon:
                failed += 1
                continue
        else:
            assert nxt is not None
            (t, op), attempt = nxt, 1
            nxt = next(it, None)
            if t >= horizon:
                continue
            operations += 1
            steps.ops[steps.at(t)] += 1
        step = steps.at(t)
        last = max(last, t)
        requests += 1
        steps.reqs[step] += 1
        decision = model.offer(op, t)
        if decision.admitted:
            continue
        throttled += 1
        steps.thr[step] += 1
        by_cause[decision.cause or "range"] += 1
        if retry > 0 and rng.random() < retry:
            bound = min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * BACKOFF_MULTIPLIER ** (attempt - 1))
            seq += 1
            heapq.heappush(pending, (t + rng.uniform(0.0, bound) / model.time_scale, seq, attempt + 1, op))
        else:
            failed += 1
    end = duration_s if duration_s is not None else last
    n = max(1, math.ceil(end / step_s - 1e-9))
    return steps.outcome(n, operations=operations, requests=requests, throttled_requests=throttled, failed=failed,
                         by_cause=by_cause)
