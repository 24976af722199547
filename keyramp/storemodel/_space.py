"""One ordered key space as tablets: sorted split keys, each tablet's load, and its splits.

A space starts as one tablet (the records that exist before the model starts sit in it, as
docs/keyspace-model.md says). Tablet ``i`` holds the keys ``bounds[i-1] <= key < bounds[i]``:
the tablet of a key is one ``bisect``. Each tablet keeps

* its load over a sliding window of ``buckets`` buckets (``window_s`` in all; every access
  counts, admitted or not: retries load a tablet as much as first attempts);
* its queue of admitted work (``tat``, see ``_limits``): it serves up to ``capacity``;
* the keys of its last ``RING`` accesses, in time order, where a split cuts it.

At each bucket boundary a tablet looks at its last full window: above ``threshold`` it is
"over" since the start of that window (never before the tablet existed), and stays over until
a window falls clearly below it, by ``NOISE_Z`` Poisson deviations of the trigger's count (at
1/K scale a window holds K times fewer operations, and a dip of noise must not restart the
clock; at full scale the margin is 3 % of Firestore's trigger). Over for ``delay`` seconds, it
splits into ``fanout`` pieces at the quantiles of its recent keys (weighted by cost). A split
that would leave 99 % of the most recent 1/(2·fanout) of those accesses on one piece (one hot key, one
append point: its next keys land past every cut) is not made, as in the fast model: the tablet
is looked at again on a clock shared by all such tablets, every ``RELOOK`` split delays.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from operator import itemgetter
from typing import Final

from keyramp.storemodel._limits import RateLimit, tolerance

__all__ = ["RING", "Groups", "Rules", "Space", "Tablet"]

#: Recent accesses a tablet keeps for its split keys.
RING: Final = 256
#: A split whose largest piece keeps this share of the recent load is not made (the fast model's rule).
USEFUL: Final = 0.99
#: Split delays between looks at a tablet that could not be split usefully (the fast model's).
RELOOK: Final = 4
MAX_TABLETS: Final = 1 << 16
#: An over tablet stays over until its window falls this many Poisson deviations below the trigger.
NOISE_Z: Final = 2.0
_KEY = itemgetter(0)


@dataclass(frozen=True, kw_only=True)
class Rules:
    """What every tablet of one space obeys, on the model's clock (rates ÷ scale, times ÷ time_scale)."""

    capacity: float  # cost/s a tablet serves
    threshold: float  # cost/s over which a tablet is "over"
    delay: float  # seconds over before it splits
    fanout: int
    bucket_s: float
    buckets: int
    placement: float = 0.0  # seconds the pieces of a split stay on their parent's node (0: no nodes)

    @property
    def window_s(self) -> float:
        return self.bucket_s * self.buckets

    @property
    def tol(self) -> float:
        return tolerance(self.capacity, self.window_s)

    @property
    def over_count(self) -> float:
        """Cost in a window above which a tablet is over."""
        return self.threshold * self.window_s

    @property
    def stay_count(self) -> float:
        """Cost in a window below which an over tablet is over no more: the trigger less Poisson noise
        (``NOISE_Z`` standard deviations), so that a model scaled down by K, with K times fewer
        operations per window, does not restart the clock on every random dip."""
        return self.over_count - NOISE_Z * math.sqrt(self.over_count)

    @property
    def relook(self) -> float:
        return RELOOK * max(self.delay, 1e-9)


class Groups:
    """Node limits of split pieces that still share their parent's node (Bigtable)."""

    __slots__ = ("limits", "rate", "window_s")

    def __init__(self, rate: float, window_s: float) -> None:
        self.rate, self.window_s = rate, window_s
        self.limits: list[RateLimit] = []

    def new(self) -> int:
        self.limits.append(RateLimit(self.rate, self.window_s))
        return len(self.limits) - 1


class Tablet:
    """One contiguous key range: from ``lo`` to the next tablet's ``lo``."""

    __slots__ = ("bucket", "created", "group", "lo", "n", "over_since", "pin_until", "ring", "tat", "win", "wsum")

    def __init__(self, lo: bytes, *, now: float, bucket: int, buckets: int) -> None:
        self.lo = lo
        self.tat = 0.0
        self.win = [0.0] * buckets
        self.wsum = 0.0
        self.bucket = bucket
        self.over_since: float | None = None
        self.created = now
        self.ring: list[tuple[bytes, float]] = []
        self.n = 0
        self.group = -1  # node group while pinned to its parent's node (Bigtable), else -1
        self.pin_until = 0.0

    def load(self, window_s: float) -> float:
        """Cost/s over the window (the current, partial bucket included)."""
        return self.wsum / window_s

    def roll(self, bucket: int, r: Rules) -> bool:
        """Move to ``bucket``, looking at every full window on the way: whether a split is due."""
        due, k, window = False, self.bucket, r.window_s
        over, stay = r.over_count, r.stay_count
        for _ in range(min(bucket - k, r.buckets + 1)):
            k += 1
            at = k * r.bucket_s  # the boundary: the window [at - window, at) is complete
            if self.wsum > over or (self.over_since is not None and self.wsum >= stay):
                if self.over_since is None:
                    self.over_since = max(at - window, self.created)
                due = due or at - self.over_since >= r.delay - 1e-9
            else:
                self.over_since = None
            slot = k % r.buckets
            self.wsum = max(0.0, self.wsum - self.win[slot])
            self.win[slot] = 0.0
        if bucket - self.bucket > r.buckets:
            self.win = [0.0] * r.buckets
            self.wsum = 0.0
        self.bucket = bucket
        return due

    def recent(self) -> list[tuple[bytes, float]]:
        """The last ``RING`` accesses (key, cost), oldest first."""
        if self.n <= RING:
            return list(self.ring)
        cut = self.n % RING
        return self.ring[cut:] + self.ring[:cut]


class Space:
    """The tablets of one key space."""

    __slots__ = ("bounds", "groups", "inv_load", "mu", "name", "rules", "splits", "tablets", "tol")

    def __init__(self, name: str, rules: Rules, *, now: float, bucket: int, mu: float,
                 groups: Groups | None = None) -> None:
        self.name = name
        self.rules = rules
        self.tol = rules.tol  # the queue a tablet accepts, seconds
        self.inv_load = 1.0 / (rules.window_s * rules.capacity)  # window cost -> utilisation
        self.mu = mu  # the store's own service rate (unscaled), for queueing waits
        self.bounds: list[bytes] = []
        self.tablets = [Tablet(b"", now=now, bucket=bucket, buckets=rules.buckets)]
        self.groups = groups
        self.splits = 0

    def note(self, key: bytes, cost: float, now: float, bucket: int) -> Tablet:
        """The tablet holding ``key``, with this access counted in its load (after a split it made due)."""
        i = bisect_right(self.bounds, key)
        t = self.tablets[i]
        if bucket != t.bucket and t.roll(bucket, self.rules) and len(self.tablets) < MAX_TABLETS \
                and self._split(i, t, now):
            i = bisect_right(self.bounds, key)
            t = self.tablets[i]
        t.win[bucket % self.rules.buckets] += cost
        t.wsum += cost
        if t.n < RING:
            t.ring.append((key, cost))
        else:
            t.ring[t.n % RING] = (key, cost)
        t.n += 1
        return t

    def _split(self, i: int, t: Tablet, now: float) -> bool:
        """Split tablet ``i`` at the quantiles of its recent keys; False (and a later look) if useless."""
        recent = t.recent()
        cuts = _cuts(recent, t.lo, self.rules.fanout)
        if not cuts or not _useful(recent, cuts, self.rules.fanout):
            period = self.rules.relook
            t.over_since = math.ceil(now / period) * period
            return False
        pieces = self._pieces(t, recent, cuts, now)
        self.bounds[i:i] = cuts
        self.tablets[i:i + 1] = pieces
        self.splits += 1
        return True

    def _pieces(self, t: Tablet, recent: list[tuple[bytes, float]], cuts: list[bytes], now: float,
                ) -> list[Tablet]:
        """The pieces: each with its share of the parent's recent load, window and queue."""
        r = self.rules
        parts: list[list[tuple[bytes, float]]] = [[] for _ in range(len(cuts) + 1)]
        for entry in recent:
            parts[bisect_right(cuts, entry[0])].append(entry)
        total = sum(c for _, c in recent) or 1.0
        pinned = self.groups is not None and r.placement > 0
        group = (t.group if t.group >= 0 and t.pin_until > now else self.groups.new()) if pinned else -1  # type: ignore[union-attr]
        backlog = max(0.0, t.tat - now)
        pieces = []
        for lo, part in zip([t.lo, *cuts], parts, strict=True):
            share = sum(c for _, c in part) / total
            p = Tablet(lo, now=now, bucket=t.bucket, buckets=r.buckets)
            p.win = [w * share for w in t.win]
            p.wsum = t.wsum * share
            p.tat = now + backlog * share
            p.ring, p.n = part, len(part)
            if pinned:
                p.group, p.pin_until = group, now + r.placement
            pieces.append(p)
        return pieces


def _cuts(recent: list[tuple[bytes, float]], lo: bytes, fanout: int) -> list[bytes]:
    """Split keys at the cost-weighted quantiles j/fanout of the recent keys (distinct, above ``lo``)."""
    order = sorted(recent, key=_KEY)
    total = sum(c for _, c in order)
    cuts: list[bytes] = []
    acc, j = 0.0, 1
    for key, cost in order:
        while j < fanout and acc >= total * j / fanout:
            if key > lo and (not cuts or key > cuts[-1]):
                cuts.append(key)
            j += 1
        acc += cost
    return cuts


def _useful(recent: list[tuple[bytes, float]], cuts: list[bytes], fanout: int) -> bool:
    """Whether the cuts spread what comes next: no piece keeps ``USEFUL`` of the most recent half of the
    accesses (one hot key, an append point at fan-out 2) and, where the newest key is the tablet's highest or
    lowest recent one (an append or prepend point), none keeps it of the newest 1/(2·``fanout``).

    Cut in 3 or 4 at the quantiles of an append point's recent keys, the newest piece holds about the last
    1/fanout of them and every key to come: the last half spans two pieces, and a split that gives the append
    point nothing but a fresh queue would be made at every delay (1,216 and 1,240 ops/s served on a 1,000 ops/s
    tablet at fan-out 3 and 4). The newest 1/(2·fanout) alone would refuse spread keys that come in runs (a
    recorded key replayed by consecutive operations): their newest key is seldom the tablet's highest."""
    if _kept(recent, cuts, 2):
        return False
    newest = recent[-1][0] if recent else b""
    edge = all(newest >= key for key, _ in recent) or all(newest <= key for key, _ in recent)
    return not (edge and _kept(recent, cuts, 2 * fanout))


def _kept(recent: list[tuple[bytes, float]], cuts: list[bytes], part: int) -> bool:
    """Whether one piece keeps ``USEFUL`` of the most recent 1/``part`` of the accesses (or there are none)."""
    total = sum(c for _, c in recent)
    pieces = [0.0] * (len(cuts) + 1)
    seen = 0.0
    for key, cost in reversed(recent):
        pieces[bisect_right(cuts, key)] += cost
        seen += cost
        if seen >= total / part:
            break
    return seen <= 0 or max(pieces) >= USEFUL * seen
