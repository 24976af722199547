"""Did the load generator keep up? One rule, read from a cell's summary, for every consumer.

Latency is measured from each operation's intended start, so when the generator falls
behind (too little CPU, an overloaded machine) its own queue shows up as latency. That is
not the store's latency: such a cell is *generator-limited*. ``run`` writes the verdict
into the cell summary (``generator_limited`` and ``generator``); thresholds turn its
latency checks "inconclusive"; ``compare`` discounts the late operations the rule blames
on the generator; the table, the UI and the scenario report mark the cell.

The signals, all in the summary: the share of operations that started late (> 10 ms after
their intended time) and of the schedule that was dropped; the load processes' CPU over
the measured phase (psutil, every worker) and their machine's busy share; users busy by
Little's law (ops/s × mean service time ÷ users). Lateness is the generator's when a load
process was CPU-bound (a Python process does its work on about one core), when its machine
was saturated (its greenlets waited for a core, which also inflates service times), or when
its users were mostly idle; otherwise every user was busy because the store held them up,
and the lateness is the store's (part of what a regression looks like). Users busy is an
average over the phase (Little's law): a store that stalls every user at once for short
moments while they are mostly idle also looks like a starved generator — the reason names
the signal that decided, so a reader can tell. A CPU-bound load
process limits any cell, late or not (every latency then includes waiting for its CPU; a
closed model's throughput is the generator's ceiling, not the store's).

When the store is an emulator on the load machine (``load_cpu.store_local``), a saturated
machine limits the cell whatever else the figures say (*machine-limited*): the generator's
queue and the emulator's slowness are then both the machine's, and neither says anything
about the real store. The threshold, ``MACHINE_LIMIT``, is measured (docs/ci.md,
``bench/bench_machine_limit.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from keyramp.results._error_classes import errors_text
from keyramp.results._summary import CellLike, CellSummary, GeneratorVerdict, OpStats, as_cell
from keyramp.results._values import num

__all__ = [
    "BUSY_LIMIT",
    "CPU_LIMIT",
    "DROP_LIMIT",
    "GENERATOR_LIMITED",
    "LATE_LIMIT",
    "LIMIT_WORDS",
    "MACHINE_LIMIT",
    "MACHINE_LIMITED",
    "busy_users",
    "check_generator",
    "error_gaps",
    "generator_late",
    "generator_limited",
    "generator_reason",
    "limit_reason",
    "limit_text",
    "limit_word",
    "littles_rate",
    "load_cpu",
    "machine_busy",
    "machine_limited",
    "starved_reason",
    "store_local",
]

#: More than this share of operations late: the generator was behind its schedule.
LATE_LIMIT: Final = 0.10
#: More than this share of the scheduled operations dropped (never started): behind too.
DROP_LIMIT: Final = 0.01
#: A load process using this much of a core is CPU-bound (Python runs its work on ~1 core).
CPU_LIMIT: Final = 0.9
#: Users busier than this (Little's law) mean the store, not the machine, made operations late.
BUSY_LIMIT: Final = 0.8
#: A load machine this busy (all cores, every process) starves its load processes: their
#: greenlets wait for a core, which inflates service times too (users then look busy); with
#: the emulator on it, the store's latency is the machine's as well. Measured on the 2-core
#: development box (docs/ci.md, bench/bench_machine_limit.py): below 85 % busy a light profile's
#: service time stayed within x1.1 of unloaded and <= 5 % of operations started late; from 87 %
#: it was x1.2-1.3 with 7-10 % late, from 97 % x2-9 (the old 95 % let the reported 90 % pass).
MACHINE_LIMIT: Final = 0.85

#: The one word for each state of a limited cell, in every view (README "Honest latency"): the
#: load generator could not keep up with its schedule (a CPU-bound load process, or late starts
#: while its users were idle) ...
GENERATOR_LIMITED: Final = "generator-limited"
#: ... or the emulator shared a saturated test machine, so neither latency nor throughput is the store's.
MACHINE_LIMITED: Final = "machine-limited"
#: word -> what it means, for legends and footnotes.
LIMIT_WORDS: Final = {
    GENERATOR_LIMITED: "the load generator could not keep up: its latency includes the generator's own queue",
    MACHINE_LIMITED: "the emulator shared a saturated test machine: neither its latency nor its throughput is "
                     "the store's",
}


def busy_users(cell: CellLike) -> float | None:
    """Mean share of a cell's users busy by Little's law: Σ ops/s × mean service s ÷ users."""
    c = as_cell(cell)
    if c.users is None or c.users <= 0:
        return None
    busy = 0.0
    for stats in c.operations.values():
        rate = num(stats.ops_per_s)
        if rate == 0:
            continue  # an operation that never completed holds no user
        mean = num(stats.service_ms.mean) if stats.service_ms is not None else None
        if rate is None or mean is None:
            return None
        busy += rate * mean / 1000.0
    return busy / c.users


def load_cpu(cell: CellLike) -> tuple[float | None, float | None]:
    """(cores all load processes used together, cores of the busiest one) over the measured phase."""
    cpu = as_cell(cell).load_cpu
    return (None, None) if cpu is None else (num(cpu.cores), num(cpu.max_process_cores))


def machine_busy(cell: CellLike) -> float | None:
    """Busy share of the load machine's cores (the busiest, with workers) over the measured phase."""
    cpu = as_cell(cell).load_cpu
    return None if cpu is None else num(cpu.machine_busy)


def store_local(cell: CellLike) -> bool | None:
    """Whether the store (an emulator) ran on the load machine; None: not recorded (older runs)."""
    cpu = as_cell(cell).load_cpu
    return None if cpu is None else cpu.store_local


def machine_limited(cell: CellLike) -> bool:
    """The cell's recorded verdict, or the rule now: the emulator shared a saturated load machine."""
    c = as_cell(cell)
    if c.generator is not None and c.generator.machine_limited is not None:
        return c.generator.machine_limited
    machine = machine_busy(c)
    return bool(store_local(c)) and machine is not None and machine >= MACHINE_LIMIT


def starved_reason(cell: CellLike, *, latency: bool = False) -> str | None:
    """Why every figure of this cell includes waiting for a CPU ("load process was CPU-bound (…)",
    "load machine was saturated (…)"), or None when neither. For its latency (``latency=True``) a
    saturated machine counts only with the emulator on it (machine-limited); elsewhere the late
    starts tell how much of it was the generator's (``generator_late``)."""
    c = as_cell(cell)
    _, busiest = load_cpu(c)
    machine = machine_busy(c)
    if machine is not None and machine >= MACHINE_LIMIT and (not latency or machine_limited(c)):
        where = " with the emulator on it" if store_local(c) else ""
        return f"load machine was saturated ({machine:.0%} of its cores busy{where})"
    if busiest is not None and busiest >= CPU_LIMIT:
        return f"load process was CPU-bound ({busiest:.2f} of a core)"
    return None


def littles_rate(cell: CellLike) -> float | None:
    """Operations per second the cell's users would complete if every one were always busy
    (Little's law: users ÷ mean service time); None without the figures."""
    c = as_cell(cell)
    busy = busy_users(c)
    rate = sum(num(stats.ops_per_s) or 0.0 for stats in c.operations.values())
    return rate / busy if busy and rate > 0 else None


def _open_model(cell: CellSummary) -> bool:
    return any((num(p.target) or 0.0) > 0 for p in cell.target_ops_per_s)


def _late_fraction(stats: OpStats | None) -> float:
    if stats is None:
        return 0.0
    count, late = num(stats.count) or 0.0, num(stats.late) or 0.0
    return late / count if count > 0 else 0.0


def _dropped_fraction(cell: CellSummary) -> float:
    if cell.total is None:
        return 0.0
    count, dropped = num(cell.total.count) or 0.0, num(cell.total.dropped) or 0.0
    return dropped / (count + dropped) if count + dropped > 0 else 0.0


def generator_late(cell: CellLike, stats: OpStats | Mapping[str, Any] | None = None, *,
                   busy_limit: float = BUSY_LIMIT, cpu_limit: float = CPU_LIMIT) -> float:
    """Share of ``stats``' operations (default: the cell's total) that started late because the
    generator fell behind: all its late ones when a load process was CPU-bound or the users were
    mostly idle; none when every user was busy (the store held them up)."""
    c = as_cell(cell)
    if stats is not None and not isinstance(stats, OpStats):
        stats = OpStats.from_json(dict(stats), where="operation")
    late = _late_fraction(c.total if stats is None else stats)
    if late <= 0:
        return 0.0
    _, busiest = load_cpu(c)
    machine = machine_busy(c)
    if (busiest is not None and busiest >= cpu_limit) or (machine is not None and machine >= MACHINE_LIMIT):
        return late
    busy = busy_users(c)
    return 0.0 if busy is None or busy >= busy_limit else late


#: A second that achieved less than this share of its target is a throughput gap.
GAP_SHARE: Final = 0.5
#: Errors in at least this share of the gaps (and of the operations overall) are the store's stall.
ERROR_GAPS: Final = 0.5
ERROR_SHARE: Final = 0.01


def error_gaps(cell: CellLike) -> tuple[int, int]:
    """(seconds below ``GAP_SHARE`` of their target, those of them in which operations failed), from
    the cell's per-second timeline (open-model schedules; summaries before issue 39 record no errors)."""
    points = [p for p in as_cell(cell).target_ops_per_s if (num(p.target) or 0.0) > 0]
    gaps = [p for p in points if (num(p.achieved) or 0.0) < GAP_SHARE * (num(p.target) or 0.0)]
    return len(gaps), sum(1 for p in gaps if (p.errors or 0) > 0)


def _store_stalled(cell: CellSummary) -> str | None:
    """Why the store's errors, not the generator, explain a cell's lost schedule — the throughput gaps
    were the seconds operations failed — or None when they do not."""
    gaps, with_errors = error_gaps(cell)
    total = cell.total
    rate = num(total.error_rate) if total is not None else None
    if not gaps or with_errors < ERROR_GAPS * gaps or rate is None or rate < ERROR_SHARE:
        return None
    return (f"the store's errors coincide with the throughput gaps ({with_errors} of the {gaps} seconds below half "
            f"the schedule had failed operations; {errors_text(total)} of all operations): the store stalled the "
            "schedule, not the load generator")


def _verdict(cell: CellSummary, limited: bool, reason: str, *, by_machine: bool = False,
             store_errors: bool = False) -> GeneratorVerdict:
    """The verdict and the figures it rests on, as ``summary.json`` records them (4 decimals)."""
    cores, busiest = load_cpu(cell)

    def r4(value: float | None) -> float | None:
        return None if value is None else round(value, 4)

    return GeneratorVerdict(limited=limited, reason=reason, late_fraction=r4(_late_fraction(cell.total)),
                            dropped_fraction=r4(_dropped_fraction(cell)), users_busy=r4(busy_users(cell)),
                            cpu_cores=r4(cores), max_process_cores=r4(busiest), machine_busy=r4(machine_busy(cell)),
                            machine_limited=by_machine, store_local=store_local(cell),
                            store_errors=store_errors or None)


def check_generator(cell: CellLike) -> GeneratorVerdict:
    """Whether the generator limited this cell (see the module docstring), and why: the verdict
    ``summary.json`` records (``generator``); ``limited`` and ``reason`` are always set."""
    c = as_cell(cell)
    late, dropped = _late_fraction(c.total), _dropped_fraction(c)
    busy = busy_users(c)
    _, busiest = load_cpu(c)
    machine = machine_busy(c)
    local = store_local(c)
    open_model = _open_model(c)
    lag = f"{late:.0%} of operations started late, {dropped:.1%} of the schedule dropped"
    cpu_text = "load CPU not measured" if busiest is None else f"busiest load process {busiest:.2f} of a core"
    if local and machine is not None and machine >= MACHINE_LIMIT:
        # Checked first: it holds whatever the lateness says, and it is the cause a CPU-bound
        # load process on such a machine would otherwise be blamed for.
        return _verdict(c, True, f"the test machine was saturated ({machine:.0%} of its cores busy) with the "
                                 f"emulator on it, so the generator's queue and the emulator's slowness are both "
                                 f"the machine's, not the store's ({cpu_text})", by_machine=True)
    if busiest is not None and busiest >= CPU_LIMIT:
        # Every operation's latency includes waiting for the generator's CPU, late or not.
        what = lag if open_model else "closed model: the throughput is the generator's ceiling"
        return _verdict(c, True, f"the busiest load process used {busiest:.2f} of a core (CPU-bound); {what}")
    if not open_model:
        return _verdict(c, False, f"closed model; {cpu_text}")
    if late <= LATE_LIMIT and dropped <= DROP_LIMIT:
        return _verdict(c, False, f"kept up: {lag}; {cpu_text}")
    if machine is not None and machine >= MACHINE_LIMIT:
        return _verdict(c, True, f"{lag}; the load machine was saturated ({machine:.0%} of its "
                                 f"cores busy: the generator waited for CPU; {cpu_text})")
    if stalled := _store_stalled(c):
        return _verdict(c, False, f"{lag}, but {stalled}", store_errors=True)
    if busy is not None and busy < BUSY_LIMIT:
        return _verdict(c, True, f"{lag} while users were {busy:.0%} busy: the machine starved "
                                 f"the load process ({cpu_text})")
    busy_text = "users busy unknown" if busy is None else f"users {busy:.0%} busy"
    answered = errors_text(c.total)
    return _verdict(c, False, f"{lag}, but {busy_text}: the store held the users up "
                              "(schedule.max_users caps concurrency)"
                              + (f"; it answered {answered} of the operations with errors" if answered else ""))


def generator_reason(cell: CellLike) -> str:
    """The cell's recorded reason, or the rule's reason now (summaries from before the flag)."""
    c = as_cell(cell)
    if c.generator is not None and c.generator.reason:
        return c.generator.reason
    return check_generator(c).reason or ""


def limit_word(cell: CellLike) -> str | None:
    """``MACHINE_LIMITED``, ``GENERATOR_LIMITED`` or None (kept up): the word every view uses for this
    cell (a view leaves out cells without a measured phase: probes, cells that failed before it)."""
    c = as_cell(cell)
    if not generator_limited(c):
        return None
    return MACHINE_LIMITED if machine_limited(c) else GENERATOR_LIMITED


def limit_reason(cell: CellLike) -> str:
    """Why the cell is limited, without the word (summaries before issue 39 began their reason with it)."""
    reason = generator_reason(cell)
    for word in LIMIT_WORDS:
        if reason.startswith(f"{word}: "):
            return reason[len(word) + 2:]
    return reason


def limit_text(cell: CellLike) -> str:
    """``machine-limited: <why>`` — the word and the reason, as one line ("" for a cell that kept up)."""
    word = limit_word(cell)
    return f"{word}: {limit_reason(cell)}" if word else ""


def generator_limited(cell: CellLike) -> bool:
    """The cell's recorded verdict, or the rule applied now (summaries from before the flag)."""
    c = as_cell(cell)
    return c.generator_limited if c.generator_limited is not None else bool(check_generator(c).limited)
