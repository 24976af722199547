"""The differential suite's machinery: designs as a user writes them, the fast forecast through the path
``keyramp forecast RUN`` takes, the per-operation reference model on the same launch, and the tolerance.

A ``Design`` is one cell's key design and workload (a template, a counter, field promotion, an app's own
ids …); ``DesignRuns`` writes it as a finished one-cell run (an app's as a Python workload with the keys
it recorded). ``fast`` asks ``reforecast`` with ``--launch FILE`` (and ``--params FILE`` for one point
of the box, or the box ÷ k), ``reference`` replays the same launch through ``keyramp.storemodel`` at
1/k: ``launch_stream`` from the cell's own key code, or ``recorded_stream`` from what the app wrote.
``Verdicts`` holds one against the other (docs/keyspace-model.md, "Differential suite").
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final

import numpy as np
from _designs import DesignRuns

from keyramp.backends import spec_for
from keyramp.backends._params import StoreParams
from keyramp.core._types import INDEX_FIELD_SEP
from keyramp.forecast._launch import Launch, parse_launch
from keyramp.forecast._reference import launch_stream, recorded_stream
from keyramp.forecast._reforecast import reforecast
from keyramp.keyspace import load_keys
from keyramp.profile._files import toml_value
from keyramp.storemodel import MIN_BURST, ReferenceOutcome, StoreModel, StoreOp, reference_run

__all__ = ["ABS_TOL", "REL_TOL", "App", "Design", "LaunchPlan", "Reference", "Verdicts", "box_of", "fast",
           "judge", "reference", "verdict"]

#: Operations the reference offers per run (≈ 0.3 s of stream and ``StoreModel.offer`` on a quiet core) …
REF_OPS: Final = 6000
#: … at most this many (a key design whose units need a finer scale, below).
MAX_OPS: Final = 24_000
#: The coarsest scale per model kind. At 1/k a window holds k times fewer operations: a tablet's bucket floor
#: (``MIN_BURST``) and the split trigger's noise margin (2 σ of the window's count) grow with k, and a design
#: splits sooner than it would. Measured: a 10× jump on uuids reads 0.29 at k = 400 and 0.44–0.45 at every
#: k from 200 to 25; 1,000 tenants × minutes 0.10 at 400, 0.24–0.26 from 200 to 25 (docs/keyspace-model.md).
K_MAX: Final = {"ranges": 200.0, "nodes": 2000.0}
#: Share of the operations a unit's burst (``MIN_BURST`` writes admitted at any scale) may stand for.
BURST_SHARE: Final = 0.03
#: The tolerance on the throttled share at the mid point: |fast − reference| ≤ max(ABS_TOL, REL_TOL × the
#: larger), derived from the reference's own spread over seeds and scales (docs/keyspace-model.md).
ABS_TOL: Final = 0.07
REL_TOL: Final = 0.25
#: ... and on the worst 10-s step, for an ok / at_risk call made by the peak alone.
PEAK_TOL: Final = 0.15
OK_MAX, PEAK_OK_MAX, HOTSPOT_MIN = 0.05, 0.25, 0.30
_ORDER = ("ok", "at_risk", "hotspot")


@dataclass(frozen=True)
class App:
    """A Python workload's own ids, as it recorded them: ``pattern`` of the keys it creates (``uuid``;
    ``orders``: one growing id; ``tenants``: a prefix per tenant, ``skewed`` or not), its other ops (reads,
    ``updates`` of the keys it made last, ``bumps`` of one counter document) and an indexed field of its
    writes (``time``: a timestamp; ``status``: one of four values)."""

    pattern: str
    tenants: int = 1
    skewed: bool = False
    reads: float = 0.2
    updates: float = 0.0
    bumps: float = 0.0
    index: str | None = None

    #: Sampled accesses of the cell (every operation of a 10-s cell at 300 ops/s).
    ACCESSES: ClassVar[int] = 3000

    def accesses(self, backend: str, n: int = ACCESSES, seconds: float = 10.0) -> list[tuple[Any, ...]]:
        """``(t, op, key, kind, index entries)`` of a 10-s cell, every operation sampled."""
        rng = np.random.default_rng([len(self.pattern), self.tenants, int(self.skewed), int(100 * self.reads)])
        t = np.sort(rng.uniform(0.0, seconds, n))
        weights = np.array([1.0 - self.reads - self.updates - self.bumps, self.reads, self.updates, self.bumps])
        which = rng.choice(4, size=n, p=weights / weights.sum())
        made = [self._key(i, rng) for i in range(64)]  # records from before the cell
        out = []
        for i in range(n):
            op, kind = (("add", "insert"), ("look", "read"), ("edit", "write"), ("bump", "transform"))[int(which[i])]
            if kind == "insert":
                made.append(self._key(len(made), rng))
                key = made[-1]
            elif kind == "transform":
                key = "counters/visits"
            else:
                key = made[int(rng.integers(0, len(made)))] if kind == "read" else made[-1 - int(rng.integers(0, 8))]
            entries: tuple[str, ...] = ()
            if self.index and kind in ("insert", "write") and backend != "bigtable":
                name, value = (("added_at", f"{int(1.7e12 + 1000 * t[i]):020d}") if self.index == "time"
                               else ("status", f"s{rng.integers(0, 4)}"))
                entries = (f"{name}{INDEX_FIELD_SEP}{value}\x00{key}",)
            out.append((float(t[i]), op, key, kind, entries))
        return out

    def _key(self, i: int, rng: np.random.Generator) -> str:
        if self.pattern == "uuid":
            return f"{int(rng.integers(0, 2**62)):016x}{int(rng.integers(0, 2**62)):016x}"
        if self.pattern == "orders":
            return f"order-{i:012d}"
        pick = int(min(self.tenants - 1, rng.zipf(1.3) - 1)) if self.skewed else int(rng.integers(0, self.tenants))
        return f"t{pick:04d}-{i:012d}"


@dataclass(frozen=True)
class Design:
    """One cell as a user writes it. ``workload``: ``[workload]`` fields; ``app``: a Python workload's own ids."""

    family: str
    backend: str
    strategy: str
    ops: tuple[tuple[str, float], ...] = (("insert", 1.0),)
    params: tuple[tuple[str, Any], ...] = ()
    workload: tuple[tuple[str, Any], ...] = ()
    app: App | None = None

    def run(self, runs: DesignRuns) -> Any:
        """The finished one-cell run of this design (written once per ``runs``)."""
        if self.app is None:
            return runs.run(self.backend, self.strategy, params=dict(self.params) or None, ops=dict(self.ops),
                            workload=dict(self.workload) or None)
        accesses = self.app.accesses(self.backend)
        counts = Counter(a[1] for a in accesses)
        return runs.recorded(self.backend, f"{self.backend}-{self.app!r}", accesses, counts=dict(counts),
                             record_count=64)


@dataclass(frozen=True)
class LaunchPlan:
    """A ``[launch]``: ``constant`` (0 → rate at once on a new range), ``ramp`` (500/50/5 up to ``rate``) or
    ``jump`` (rate/10 for half the launch, then rate); Bigtable's ``nodes``."""

    kind: str
    rate: float
    minutes: int
    nodes: int | None = None

    def table(self, k: float = 1.0) -> dict[str, Any]:
        """The ``[launch]`` table, its rates ÷ ``k`` (the same launch for a store 1/k the size)."""
        r = self.rate / k
        shape: dict[str, Any] = {
            "constant": {"kind": "constant", "rate": r},
            "ramp": {"kind": "ramp_500_50_5", "ceiling": r, "start_ops": min(r, 500.0 / k)},
            "jump": {"kind": "step", "steps": [r / 10, r], "step": f"{self.minutes * 30}s"},
        }[self.kind]
        return {**shape, "duration": f"{self.minutes}m", **({"nodes": self.nodes} if self.nodes else {})}

    def launch(self, backend: str) -> Launch:
        return Launch.from_resolved(parse_launch(self.table(), src="launch", backends=[backend]))

    def file(self, root: Path, k: float = 1.0) -> Path:
        path = root / f"launch-{self.kind}-{self.rate:g}-{self.minutes}-{self.nodes or 0}-{k:g}.toml"
        if not path.exists():
            path.write_text("[launch]\n" + "".join(f"{n} = {toml_value(v)}\n" for n, v in self.table(k).items()),
                            encoding="utf-8")
        return path


def box_of(backend: str) -> StoreParams:
    """The store's own parameter box (Bigtable: its default storage)."""
    tablets = spec_for(backend).tablets
    assert tablets is not None
    return tablets.box(None)


def params_file(root: Path, box: StoreParams, point: Mapping[str, float] | None = None, k: float = 1.0) -> Path:
    """A calibration file (``--params``) for ``box``: every range the one value of ``point``, or the box with
    every capacity and per-key limit ÷ ``k`` (a store 1/k the size)."""
    ranges = {}
    for name, r in box.ranges.items():
        div = k if name.endswith(("_ops_per_s", "_rows_per_s")) else 1.0
        lo, mid, hi = (point[name],) * 3 if point is not None else (r.low, r.mid, r.high)
        ranges[name] = {"low": lo / div, "mid": mid / div, "high": hi / div, "source": "differential suite"}
    doc = json.dumps({"schema": 1, "stores": {box.store: ranges}}, sort_keys=True)
    path = root / f"params-{abs(hash(doc)):x}.json"
    path.write_text(doc, encoding="utf-8")
    return path


def fast(runs: DesignRuns, d: Design, plan: LaunchPlan, *, point: Mapping[str, float] | None = None,
         k: float = 1.0) -> dict[str, Any]:
    """The fast forecast as ``keyramp forecast RUN --launch FILE [--params FILE] --json`` makes it: over the
    store's box, at one ``point`` of it, or over the box ÷ ``k`` for the launch ÷ ``k``."""
    params = None if point is None and k == 1.0 else params_file(runs.root, box_of(d.backend), point, k)
    out = reforecast(d.run(runs), launch_file=plan.file(runs.root, k), params=params)
    (doc,) = (fc.to_json() for fc in out.values())
    return doc


@dataclass(frozen=True)
class Reference:
    """The reference's answer at scale ``k``, and the share of its operations that the units' buckets (their
    first ``MIN_BURST`` writes, admitted at any scale) may admit and the launch would not (``_overadmitted``):
    the scale's own error on per-key limits. Kept per ``runs`` (the suite asks again for the same design)."""

    outcome: ReferenceOutcome
    k: float
    burst_share: float
    retry: float = 0.0
    #: how far the last halving of k moved the share (``reference(converge=True)``): the reference's own doubt
    spread: float = 0.0

    @property
    def bias(self) -> float:
        """How far below the launch's share the reference may read when its bursts stand for more than
        ``BURST_SHARE``: each burst operation might have been refused, and sent again."""
        return 0.0 if self.burst_share <= BURST_SHARE else self.burst_share / (1.0 - self.retry)


def _stream(runs: DesignRuns, d: Design, launch: Launch, k: float, seed: int) -> Iterator[tuple[float, StoreOp]]:
    run = d.run(runs)
    if d.app is None:
        return launch_stream(settings=run.manifest.settings, backend=d.backend, strategy=run.manifest.cells[0].strategy,
                             rate=launch.rate, duration_s=launch.duration_s, k=k, seed=seed)
    s = next(iter(load_keys(run).values()))
    index = {int(i): list(v) for i, v in (s.index or {}).items()}
    return recorded_stream(t=s.t, op=[_BUILTIN[kind] for kind in s.kinds.tolist()], key=s.key, backend=d.backend,
                           rate=launch.rate, duration_s=launch.duration_s, k=k, seed=seed, index=index)


#: A recorded access's kind as the built-in op that does the same (what ``recorded_stream`` replays).
_BUILTIN = {b"insert": "insert", b"read": "read", b"write": "update", b"transform": "increment", b"delete": "delete",
            b"upsert": "update", b"query": "query"}


def _overadmitted(count: int, k: float, sustained: float) -> float:
    """Writes of a unit written ``count`` times at 1/``k`` that the reference may admit and the launch would
    not, at most: its bucket (``MIN_BURST`` + 1 writes) admits as many stream writes at any scale, the
    launch's the same number of its k times more writes; both also take the limit's ``sustained`` writes
    over the launch (÷ k at 1/k). A unit written once at 1/k that stands for one real write (a new key) is
    counted as if it stood for k (a hot key, thinned): an upper bound."""
    bucket = MIN_BURST + 1.0
    return max(0.0, min(count, bucket + sustained / k) - min(count, (bucket + sustained) / k))


def k_max(box: StoreParams, point: Mapping[str, float]) -> float:
    """``K_MAX`` at ``point``: a point whose tablets or nodes serve less than the mid point's needs a finer scale."""
    name = "tablet_ops_per_s" if box.kind == "ranges" else "node_write_rows_per_s"
    return K_MAX[str(box.kind)] * min(1.0, float(point[name]) / box.ranges[name].mid)


def reference(runs: DesignRuns, d: Design, plan: LaunchPlan, *, point: Mapping[str, float] | None = None,
              k: float | None = None, seed: int = 0, max_ops: int = MAX_OPS, converge: bool = False) -> Reference:
    """The per-operation model on the same launch at 1/``k``, at ``point`` (default: the box's mid point) with
    its re-offer share, in the fast model's steps. Default ``k``: ``REF_OPS`` operations, at most ``k_max``,
    and finer (up to ``max_ops``) when the writes the units' buckets may admit at 1/k and the launch would not
    (``_overadmitted``) would stand for more than ``BURST_SHARE`` of the operations. ``converge``: halve k
    (another seed each time) until two runs lie within ``ABS_TOL`` / 2 or ``max_ops`` is reached; ``spread``
    is the last step."""
    launch = plan.launch(d.backend)
    box = box_of(d.backend)
    assert box.kind is not None
    point = dict(point or box.mid())
    total = launch.total_ops()
    if d.app is not None:  # a recorded access is replayed by consecutive operations: past 8 a run, they make an
        max_ops = min(max_ops, 8 * App.ACCESSES)  # append point of their own that no split rule can tell apart

    def once(scale: float, seed: int) -> Reference:
        model = StoreModel(point, kind=str(box.kind), nodes=plan.nodes or 1, scale=scale, seed=seed)
        written: Counter[bytes] = Counter()

        def counted() -> Iterator[tuple[float, StoreOp]]:
            for t, op in _stream(runs, d, launch, scale, seed):
                if op.kind != "read":
                    written.update(op.units)
                yield t, op

        out = reference_run(counted(), model, retry=float(point.get("retry_reoffer", 0.0)),
                            step_s=max(10.0, launch.duration_s / 480.0), duration_s=launch.duration_s, seed=seed)
        limit = float(point.get("key_write_ops_per_s", 0.0))
        burst = sum(_overadmitted(c, scale, limit * launch.duration_s) for c in written.values()) if limit else 0.0
        burst /= max(out.operations, 1)
        return Reference(outcome=out, k=scale, burst_share=burst, retry=float(point.get("retry_reoffer", 0.0)))

    memo = (repr(d), plan, tuple(sorted(point.items())), k, seed, max_ops, converge)
    if memo not in runs.memo:
        runs.memo[memo] = once(k, seed) if k is not None else _settled(once, total, k_max(box, point), seed,
                                                                      max_ops=max_ops, converge=converge)
    return runs.memo[memo]


def _settled(once: Callable[[float, int], Reference], total: float, coarsest: float, seed: int, *, max_ops: int,
             converge: bool) -> Reference:
    """``reference``'s default scale, made finer for the units' bursts and, with ``converge``, until it settles."""
    ref = once(max(1.0, min(total / REF_OPS, coarsest)), seed)
    if ref.burst_share > BURST_SHARE and ref.k > 1.0:
        finer = max(1.0, total / max_ops, ref.k * BURST_SHARE / ref.burst_share)
        ref = once(finer, seed) if finer < ref.k else ref
    while converge and ref.k > max(1.0, total / max_ops):
        finer = once(max(1.0, ref.k / 2, total / max_ops), seed + 1)
        step = abs(finer.outcome.throttled_fraction - ref.outcome.throttled_fraction)
        ref = dataclasses.replace(finer, spread=step)
        if step <= ABS_TOL / 2:
            break
    return ref


def verdict(share: float, peak: float) -> str:
    """The band's rule at one point (``forecast._band.verdict_of``), restated."""
    if share >= HOTSPOT_MIN:
        return "hotspot"
    return "ok" if share <= OK_MAX and peak <= PEAK_OK_MAX else "at_risk"


def tolerance(a: float, b: float) -> float:
    return max(ABS_TOL, REL_TOL * max(a, b))


@dataclass(frozen=True)
class Verdicts:
    """Fast vs reference at one point: shares, worst steps, verdicts; ``problems`` is empty when they agree."""

    fast_share: float
    ref_share: float
    fast_peak: float
    ref_peak: float
    fast_verdict: str
    ref_verdict: str
    k: float = 1.0
    by_cause: Mapping[str, int] = field(default_factory=dict)
    #: the reference may read this much low (``Reference.bias``): then only the share is judged, in
    #: [reference − tolerance, reference + bias + tolerance]
    bias: float = 0.0
    #: the reference's own doubt (``Reference.spread``), added to the tolerance
    spread: float = 0.0

    @property
    def problems(self) -> list[str]:
        out = []
        tol = tolerance(self.fast_share, self.ref_share + self.bias) + self.spread
        if not self.ref_share - tol <= self.fast_share <= self.ref_share + self.bias + tol:
            out.append(f"share: fast {self.fast_share:.3f} vs reference {self.ref_share:.3f}"
                       + (f" + {self.bias:.3f}" if self.bias else "") + f" (tolerance {tol:.3f})")
        if not self.bias and self.fast_verdict != self.ref_verdict and not self._near_threshold(tol):
            out.append(f"verdict: fast {self.fast_verdict} vs reference {self.ref_verdict}")
        return out

    def _near_threshold(self, tol: float) -> bool:
        """Adjacent verdicts pass only where a figure lies within its tolerance of the threshold between them."""
        a, b = sorted((_ORDER.index(self.fast_verdict), _ORDER.index(self.ref_verdict)))
        if b - a != 1:
            return False
        shares = (self.fast_share, self.ref_share)
        if b == 2:
            return any(abs(s - HOTSPOT_MIN) <= tol for s in shares)
        return any(abs(s - OK_MAX) <= tol for s in shares) or any(
            abs(p - PEAK_OK_MAX) <= PEAK_TOL for p in (self.fast_peak, self.ref_peak))

    def __str__(self) -> str:
        causes = {c: n for c, n in self.by_cause.items() if n}
        bias = (f", may read {self.bias:.3f} low" if self.bias else "") + (
            f", ±{self.spread:.3f} at k/2" if self.spread else "")
        return (f"fast {self.fast_verdict} {self.fast_share:.3f} (peak {self.fast_peak:.2f}) | reference "
                f"{self.ref_verdict} {self.ref_share:.3f} (peak {self.ref_peak:.2f}, k={self.k:.0f}{bias}, "
                f"refused {causes})")


def judge(doc: Mapping[str, Any], ref: Reference) -> Verdicts:
    """The fast forecast's mid point against the reference's."""
    out = ref.outcome
    return Verdicts(fast_share=float(doc["throttled_fraction"]["mid"]), ref_share=out.throttled_fraction,
                    fast_peak=float(doc["peak_throttled_fraction"]["mid"]), ref_peak=out.peak_throttled_fraction,
                    fast_verdict=str(doc["verdicts"]["mid"]),
                    ref_verdict=verdict(out.throttled_fraction, out.peak_throttled_fraction), k=ref.k,
                    by_cause=out.by_cause, bias=ref.bias, spread=ref.spread)
