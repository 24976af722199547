"""``keyramp lint``: check a profile against the rules in best-practices.md.

Lint reads only the *plan* (the validated ``Profile``): key strategy traits, planned rates from the
schedule, op mix, sizes. It never talks to a store. Severity follows the planned rate:
a hotspotting key at 10 inserts/s is a warning, at ≥ 500/s (Google's "new key range"
number) an error. A rule applies to the stores whose guidance it is (``StoreSpec.rules``):
500/50/5 is Datastore's and Firestore's, not Bigtable's. The profile's ``[acknowledge]`` turns
a rule's findings into *acknowledged* ones, with its reason: reported, never failing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Final

from keyramp.backends import spec_for
from keyramp.keys import (
    ANTI_PATTERN,
    KeyStrategy,
    TemplateStrategy,
    fix_strategies,
    hottest_share,
    key_problem,
    make_strategy,
    parse_shape,
    rule_role,
)
from keyramp.profile._lint_schedule import SCHEDULE_RULE, schedule_shape
from keyramp.profile._model import Profile
from keyramp.profile._schedules import Schedule

__all__ = ["SEVERITIES", "Finding", "FindingGroup", "group_findings", "lint_profile"]

SEVERITIES: Final = ("error", "warning", "info", "acknowledged")
#: Google: start a new key range at ≤ 500 ops/s, +50 % every 5 minutes (BP-RAMP-1).
RAMP_START: Final = 500.0
RAMP_GROWTH: Final = 1.5
RAMP_STEP_S: Final = 300.0
HIGH_RATE: Final = 500.0  # entity writes/s at which a hotspot is an error, not a warning
MIB: Final = 1 << 20

#: Up to this many append points a template's ranges are worth a per-range rate (BP-KEY-3).
_FEW_APPEND_POINTS: Final = 100
_UPDATES: Final = ("update", "transaction", "increment")
#: Indexes whose keys lint validates: small, digit-count boundaries, and large.
_SAMPLE_INDEXES: Final = (0, 1, 8, 9, 98, 99, 12_345, 999_999, 10**9 - 1, 10**10, 2**40)


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # error | warning | info | acknowledged (the profile's [acknowledge] names its rule)
    message: str  # one line: why, and what to do instead
    cell: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Intent:
    """What the profile plans to do, in numbers the rules need."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.backends = profile.backends
        self.params = profile.keys.params
        self.workload = profile.workload
        self.ops = profile.workload.ops
        self.seed = profile.seed
        self.launch = profile.launch
        self.shape = parse_shape(self.workload.document or {})
        # Every cell shares the profile's schedule.
        self.schedule: Schedule = profile.cells[0].schedule
        self.horizon = profile.cells[0].horizon_s
        self.open = self.schedule.open_model
        self.peak = self.schedule.peak(self.horizon) if self.open else None
        batch = self.workload.batch_size
        # Entities created per op, and commits (requests) that create them.
        # A Python workload's ops that create keys count as single inserts.
        user_inserts = sum(self.ops.get(name, 0.0) for name in self.workload.insert_ops)
        self.insert_per_op = self.ops.get("insert", 0.0) + self.ops.get("batch_write", 0.0) * batch + user_inserts
        self.commit_per_op = self.ops.get("insert", 0.0) + self.ops.get("batch_write", 0.0) + user_inserts
        self.update_per_op = sum(self.ops.get(op, 0.0) for op in _UPDATES)

    def rate(self, per_op: float) -> float | None:
        return None if self.peak is None else self.peak * per_op

    def cells(self) -> Iterable[tuple[str, str, str]]:
        return ((c.backend, c.strategy, c.id) for c in self.profile.cells)


def _by_rate(rate: float | None) -> str:
    return "error" if rate is not None and rate >= HIGH_RATE else "warning"


def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 10_000 else f"{x:.4g}"


def _rate_text(rate: float | None, unit: str = "inserts/s") -> str:
    return "an unknown rate (closed model)" if rate is None else f"{_num(rate)} {unit}"


# -- per-cell rules (backend × strategy) ------------------------------------------------------


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _cell_rules(plan: _Intent, backend: str, strategy: str, cell: str) -> list[Finding]:
    """Rules that depend on the store come from its spec: which BP rules apply (``rules``),
    its features (``lacks``), its hotspot advice."""
    out: list[Finding] = []
    store = spec_for(backend)
    cls = make_strategy(strategy, seed=plan.seed, params=plan.params, backend=backend)
    # What the design is comes from its declared traits (keys/): a template's from its format.
    tpl = cls.plan if isinstance(cls, TemplateStrategy) else None
    traits = cls.traits
    inserts = plan.rate(plan.insert_per_op)
    writing = plan.insert_per_op > 0

    def add(rule: str, severity: str, message: str) -> None:
        out.append(Finding(rule, severity, message, cell))

    points = cls.append_points() or 0
    if "BP-KEY-3" in store.rules and writing and 1 < points <= _FEW_APPEND_POINTS:
        per_point = None if inserts is None else inserts / points
        prepends = tpl is not None and tpl.prepends
        add("BP-KEY-3", "error" if per_point is not None and per_point >= HIGH_RATE else "info",
            f"{strategy} has {points} {'prepend' if prepends else 'append'} points: each new key "
            f"lands at the {'start' if prepends else 'end'} of one of {points} ranges, "
            f"{_rate_text(per_point)} each")
    if traits.monotonic:
        fix = _either(fix_strategies(store.hotspot_fix, readable="BP-KEY-8" in store.rules,
                                     python=bool(plan.workload.user)))
        if writing:
            add("BP-KEY-1", _by_rate(inserts),
                f"{strategy} keys are monotonic: at {_rate_text(inserts)} every insert lands next to the previous "
                f"one, on one tablet (hotspot); use {fix} keys")
        else:
            add("BP-KEY-1", "info",
                f"{strategy} keys are monotonic; no inserts are measured, but the preload still writes one hot range")
    # A Python workload chooses its keys (self.keys.new()): the profile refuses server_allocated there.
    if (store.has("server_allocated_keys") and not plan.workload.user and not cls.server_allocated
            and not cls.traits.spreads):
        add("BP-KEY-2", "info",
            "prefer server-allocated ids (allocate_ids / auto document ids): they scatter over the key space")
    if "BP-KEY-5" in store.rules and traits.time_first:
        add("BP-KEY-5", _by_rate(inserts) if writing else "warning",
            f"row key starts with a timestamp ({strategy}): all current writes hit one node; promote the id "
            f"you filter by first (field_promotion: machine_0042#<ts>)")
    if "BP-KEY-6" in store.rules and traits.has_time and (
            plan.workload.read_distribution == "latest" or "scan" in plan.ops):
        add("BP-KEY-6", "info",
            "newest rows are read first: a reverse timestamp (reverse_timestamp, Long.MAX_VALUE - ts) "
            "makes them sort first so a short scan finds them")
    if "BP-KEY-7" in store.rules and rule_role(cls, "BP-KEY-7") == ANTI_PATTERN:
        fix = _either(fix_strategies(("BP-KEY-7",)))
        if traits.sequential_id:
            add("BP-KEY-7", "warning",
                f"sequential numeric ids ({strategy}) on {store.title} concentrate traffic; reverse them ({fix})")
        else:
            add("BP-KEY-7", "info",
                f"{strategy} keys as written scatter what belongs together; reverse them ({fix}) unless most data "
                "sits in a few of them")
    if "BP-KEY-8" in store.rules and not cls.traits.readable:
        add("BP-KEY-8", "warning",
            f"{strategy} row keys make Key Visualizer unreadable and Google no longer recommends hashed keys; "
            f"use short readable delimited keys (field_promotion, reversed_id)")
    if traits.moving and traits.time_first:
        add("BP-SHARD-1", _by_rate(inserts) if writing else "warning",
            "shards inside a time bucket: every current write still goes to the newest bucket; shard by a "
            f"stable id or hash prefix instead ({_either(fix_strategies(('BP-KEY-3',)))})")
    out.extend(_key_hygiene(cls, backend, strategy, cell))
    return out


def _key_hygiene(keys: KeyStrategy, backend: str, strategy: str, cell: str) -> list[Finding]:
    """BP-KEY-10: params that produce keys the store rejects (found by sampling keys)."""
    reserved = spec_for(backend).keys.reserved
    if reserved is not None:
        for name, value in keys.params.items():
            if isinstance(value, str) and reserved.fullmatch(value):
                return [Finding("BP-KEY-10", "error", f"param {name} = {value!r} matches the reserved pattern "
                                f"{reserved.pattern}; choose another value", cell)]
    for index in _SAMPLE_INDEXES:
        problem = key_problem(keys.key(index), backend)
        if problem:
            return [Finding("BP-KEY-10", "error",
                            f"{strategy} makes invalid {backend} keys ({problem}); change keys.params", cell)]
    return []


# -- profile-wide rules -------------------------------------------------------------------------


def _on_cells(plan: _Intent, backend: str, rule: str, severity: str, message: str) -> list[Finding]:
    """A finding about one store, on each cell of that store: ``group_findings`` says it once with
    their ids, so a run's lint line names the cells it is about."""
    cells = [cell for b, _, cell in plan.cells() if b == backend]
    return [Finding(rule, severity, message, cell) for cell in cells] or [Finding(rule, severity, message)]


def _steepest(sched: Schedule, horizon: float) -> tuple[float, float, float, float] | None:
    """Where ``sched`` most exceeds rate(t) ≤ max(500, 1.5 × rate(t − 5 min)): (ratio, t, rate, allowed)."""
    points = set(sched.change_points(horizon))
    points |= {max(0.0, p - 1e-6) for p in list(points)}
    points |= {horizon * i / 400 for i in range(401)}
    worst: tuple[float, float, float, float] | None = None
    for t in sorted(points):
        rate = sched.rate(t)
        before = sched.rate(t - RAMP_STEP_S) if t >= RAMP_STEP_S else 0.0
        allowed = max(RAMP_START, RAMP_GROWTH * before)
        ratio = rate / allowed
        if ratio > 1 + 1e-9 and (worst is None or ratio > worst[0]):
            worst = (ratio, t, rate, allowed)
    return worst


def _why(t: float, rate: float, allowed: float) -> str:
    if t < RAMP_STEP_S:
        return f"{_num(rate)} ops/s at t={t:g}s on a new key range (above 500 ops/s)"
    return (
        f"{_num(rate)} ops/s at t={t:g}s, more than +50 % over the {_num(allowed / RAMP_GROWTH)} ops/s of 5 min earlier"
    )


def _ramp_finding(plan: _Intent, severity: str, message: str) -> list[Finding]:
    """BP-RAMP-1 for the profile when it applies to all its stores, else on the cells of those it
    applies to (none: Bigtable has no 500/50/5)."""
    subject = [b for b in plan.backends if "BP-RAMP-1" in spec_for(b).rules]
    if len(subject) == len(plan.backends):
        return [Finding("BP-RAMP-1", severity, message)]
    return [f for b in subject for f in _on_cells(plan, b, "BP-RAMP-1", severity, message)]


def _ramp(plan: _Intent) -> list[Finding]:
    """BP-RAMP-1: rate(t) ≤ max(500, 1.5 × rate(t − 5 min)) for a schedule that inserts."""
    if plan.insert_per_op <= 0:
        return []
    if not plan.open:
        return _ramp_finding(plan, "info",
                             "closed-model (users) schedule: the rate is not planned, so 500/50/5 cannot be checked")
    worst = _steepest(plan.schedule, plan.horizon)
    if worst is None:
        return []
    ratio, t, rate, allowed = worst
    severity = "error" if ratio > RAMP_GROWTH else "warning"
    return _ramp_finding(plan, severity, f"{_why(t, rate, allowed)}: start at ≤ 500 ops/s and grow ≤ 50 % every "
                                         "5 minutes (kind = \"ramp_500_50_5\")")


def _launch_ramp(plan: _Intent) -> list[Finding]:
    """BP-RAMP-1 on the ``[launch]``: information only (the forecast puts a number on it)."""
    launch = plan.launch
    if launch is None or plan.insert_per_op <= 0:
        return []
    worst = _steepest(launch.schedule, launch.duration_s)
    if worst is None:
        return []
    _, t, rate, allowed = worst
    return _ramp_finding(plan, "info", f"[launch]: {_why(t, rate, allowed)}, faster than 500/50/5: the launch "
                                       "forecast shows what that costs (modelled)")


def _acknowledged(findings: list[Finding], reasons: Mapping[str, str]) -> list[Finding]:
    """The errors and warnings of each rule the profile acknowledges, as acknowledged: what they would
    have been and the profile's reason follow the message (information stays information)."""
    return [replace(f, severity="acknowledged", message=f"{f.message} ({f.severity} acknowledged: {reasons[f.rule]})")
            if f.rule in reasons and f.severity in ("error", "warning") else f for f in findings]


#: The rule each store states its per-key write limit in (its spec lists the ones that apply to it).
_KEY_RULES: Final = ("BP-RATE-1", "BP-RATE-3", "BP-KEY-9")
#: What to do instead, per rule.
_KEY_FIX: Final = {
    "BP-RATE-1": "spread writes over more {unit}s or batch them",
    "BP-RATE-3": "spread its writes over shards (a distributed counter: BP-SHARD-1) or add up in memory",
    "BP-KEY-9": "write a new row per value (memusage#<timestamp>) or add up in memory and flush (BP-RATE-4)",
}


def _hottest_key(plan: _Intent, peak: float, groups_limit: bool) -> tuple[float, str]:
    """The writes/s on the hottest unit at ``peak`` ops/s, and how they get there."""
    wl = plan.workload
    group = wl.entity_group_size
    records = max(1, wl.record_count)
    dist, dparams = wl.read_distribution, wl.distribution_params
    parts: list[tuple[float, str]] = []
    if groups_limit and group > 1:
        # Consecutive inserts share the current group: every insert commit hits it.
        parts.append((peak * plan.commit_per_op, f"inserts fill one group of {group} at a time"))
        groups = -(-records // group)
        # A lower bound for the hottest group: its hottest entity, or an even share.
        hot = max(hottest_share(dist, records, dparams), 1.0 / groups)
        parts.append((peak * plan.update_per_op * hot, f"updates over {groups} groups ({dist})"))
    else:
        hot = hottest_share(dist, records, dparams)
        parts.append((peak * plan.update_per_op * hot,
                      f"updates of the hottest of {records:,} records ({dist})"))
    return max(parts)


def _key_rates(plan: _Intent) -> list[Finding]:
    """Writes that concentrate on one key (BP-RATE-1 Datastore: ≈ 1 write/s per entity group, per entity in
    Datastore mode; BP-RATE-3 Firestore: ≈ 1 sustained write/s per document; BP-KEY-9 Bigtable: one row
    never splits), held against the store's per-key limit (``key_write_ops_per_s`` in its spec's box): above
    its high end an error, above its low end a warning. A Python workload's keys are its own: the launch
    forecast reads them from what it wrote. Held at the schedule's peak and at the ``[launch]`` peak (a row
    that takes the emulator's 200 writes/s may not take the launch's 10,000)."""
    out: list[Finding] = []
    launch = None if plan.launch is None else plan.launch.peak
    peaks = [(p, w) for p, w in ((plan.peak, ""), (launch, " at the [launch] peak")) if p is not None]
    if not peaks or plan.workload.user:
        return out
    for backend in plan.backends:
        store = spec_for(backend)
        rule = next((r for r in _KEY_RULES if r in store.rules), None)
        limit = None if store.tablets is None else store.tablets.box().ranges.get("key_write_ops_per_s")
        if rule is None or limit is None:
            continue
        unit = limit.unit.rpartition("per ")[2] or "key"
        (rate, how), when = max((_hottest_key(plan, p, store.has("entity_groups")), w) for p, w in peaks)
        if rate <= limit.low:
            continue
        severity = "error" if rate > limit.high else "warning"
        out += _on_cells(plan, backend, rule, severity,
                         f"{backend}: ~{_num(rate)} writes/s on one {unit}{when} ({how}), which sustains about "
                         f"{_num(limit.low)}–{_num(limit.high)} writes/s (key_write_ops_per_s): expect contention and "
                         f"throttling; {_KEY_FIX[rule].format(unit=unit)}")
    return out


def _indexed_value(plan: _Intent) -> list[Finding]:
    """BP-RATE-2 (Firestore) and BP-KEY-3 (Datastore): a monotonic indexed ``created``, or a
    document shape's indexed timestamps."""
    if plan.workload.indexed_value == "monotonic":
        names = ["created"]
        exempt, prefix = 'indexed_value = "unindexed"', 'indexed_value = "prefixed"'
    else:
        names = plan.shape.monotonic_indexed()
        exempt, prefix = "indexed = false", "a composite index led by a high-cardinality property"
    writes = plan.rate(plan.insert_per_op + plan.ops.get("update", 0.0))
    out: list[Finding] = []
    for name in names:
        for backend in plan.backends:
            rules = spec_for(backend).rules
            if "BP-RATE-2" in rules:
                severity = "error" if writes is None or writes > 500 else "info"
                out += _on_cells(plan, backend, "BP-RATE-2", severity,
                                 f"{backend}: indexed monotonic '{name}' caps the collection at ~500 writes/s "
                                 f"(planned {_rate_text(writes, 'writes/s')}); exempt it from indexing "
                                 f"({exempt}) or prefix it ({prefix})")
            elif "BP-KEY-3" in rules:
                severity = "warning" if writes is None or writes > 500 else "info"
                out += _on_cells(plan, backend, "BP-KEY-3", severity,
                                 f"{backend}: indexed monotonic '{name}' makes its index range a hotspot; prefix "
                                 f"it with a high-cardinality id ({prefix}) or exclude it ({exempt})")
    return out


def _sizes(plan: _Intent) -> list[Finding]:
    """BP-SIZE-1/3 (Bigtable cells) and BP-IDX-1 (index fan-out)."""
    out: list[Finding] = []
    size = plan.workload.value_size
    fields = plan.workload.indexed_fields
    for backend in plan.backends:
        rules = spec_for(backend).rules
        if "BP-SIZE-1" in rules and size > 100 * MIB:
            out += _on_cells(plan, backend, "BP-SIZE-1", "error",
                             f"{backend}: value_size {size / MIB:.3g} MiB exceeds 100 MiB per row; split the value "
                             "over rows")
        elif "BP-SIZE-1" in rules and size > 10 * MIB:
            out += _on_cells(plan, backend, "BP-SIZE-1", "warning",
                             f"{backend}: value_size {size / MIB:.3g} MiB exceeds the recommended 10 MiB per cell; "
                             f"split it over cells or rows")
        if "BP-SIZE-3" in rules and fields >= 10:
            out += _on_cells(plan, backend, "BP-SIZE-3", "warning" if fields >= 100 else "info",
                             f"{backend}: {fields} tiny cells per row cost more than one packed cell; pack small "
                             f"values into one cell")
    if fields >= 20 and any(spec_for(b).has("secondary_indexes") for b in plan.backends):
        out.append(Finding("BP-IDX-1", "info",
                           f"{fields} indexed properties per entity: index fan-out drives write latency; exclude "
                           f"properties that are never queried"))
    entries = plan.shape.index_entries()
    if entries >= 40 and any(spec_for(b).has("secondary_indexes") for b in plan.backends):
        out.append(Finding("BP-IDX-1", "info",
                           f"workload.document: ~{entries} single-field index entries per write: index fan-out drives "
                           f"write latency; set indexed = false on properties that are never queried"))
    row = plan.shape.size_bytes() if plan.shape else 0
    for backend in plan.backends:
        if "BP-SIZE-1" in spec_for(backend).rules and row > 10 * MIB:
            out += _on_cells(plan, backend, "BP-SIZE-1", "error" if row > 100 * MIB else "warning",
                             f"{backend}: a workload.document row is ~{row / MIB:.3g} MiB (recommended ≤ 10 MiB a "
                             f"cell, ≤ 100 MiB a row); split it over rows")
    return out


_ORDER = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class FindingGroup:
    """Identical findings (rule, severity, message) of several cells, said once."""

    rule: str
    severity: str
    message: str
    cells: tuple[str, ...] = ()

    def line(self) -> str:
        """``BP-KEY-1 on 3 cells (c00-…, c03-…, c06-…): message``, ``BP-KEY-1 [c00-…]: …``, or
        ``BP-RAMP-1: …`` for a profile-wide finding."""
        if len(self.cells) > 1:
            where = f" on {len(self.cells)} cells ({', '.join(self.cells)})"
        else:
            where = "".join(f" [{c}]" for c in self.cells)
        return f"{self.rule}{where}: {self.message}"


def group_findings(findings: Iterable[Finding]) -> list[FindingGroup]:
    """Findings with the same rule, severity and message merged across cells, in first-seen order."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for f in findings:
        cells = groups.setdefault((f.rule, f.severity, f.message), [])
        if f.cell and f.cell not in cells:
            cells.append(f.cell)
    return [FindingGroup(rule, severity, message, tuple(cells)) for (rule, severity, message), cells in groups.items()]


def lint_profile(profile: Profile) -> list[Finding]:
    """Findings for a validated profile, errors first."""
    plan = _Intent(profile)
    findings: list[Finding] = []
    findings += _ramp(plan)
    findings += _launch_ramp(plan)
    findings += _key_rates(plan)
    findings += _indexed_value(plan)
    findings += _sizes(plan)
    shape = schedule_shape(plan.schedule, duration_s=profile.cells[0].duration_s,
                           time_scale=profile.cells[0].time_scale)
    if shape is not None:
        findings.append(Finding(SCHEDULE_RULE, "warning", shape))
    for backend, strategy, cell in plan.cells():
        findings += _cell_rules(plan, backend, strategy, cell)
    findings = _acknowledged(findings, profile.acknowledge)
    return sorted(findings, key=lambda f: _ORDER.get(f.severity, 9))
