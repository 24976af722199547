"""The cloud target before any network call: explicit opt-in and the plan, testable offline.

``target = "cloud"`` sends a profile's load to a real Google Cloud project.

* :func:`check_opt_in` — the refusals (``--allow-cloud PROJECT`` missing or naming another
  project, an emulator variable set, an opt-in on an emulator profile);
* :func:`run_budget` / :func:`render_budget` — peak ops/s, planned operations and duration per
  cell and in total, and what will be written and deleted; :func:`preflight` also refuses
  a plan above the caps (``[cloud] max_ops_per_s``, ``max_duration``).

What happens at run time (caps, credentials, clean-up) is ``_cloud_target.CloudTarget``
(see docs/cloud.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from keyramp.backends import EMULATOR_FOR, Target, spec_for
from keyramp.core import UsageError, format_duration
from keyramp.profile import cell_namespace
from keyramp.targets._base import Warmup
from keyramp.targets._emulator_target import FIRST_WARMUP_S, cell_warmup
from keyramp.targets._emulators import endpoints_from_env

if TYPE_CHECKING:
    from keyramp.profile import Profile

__all__ = [
    "BudgetCosts",
    "Caps",
    "CellBudget",
    "RunBudget",
    "check_opt_in",
    "emulator_variables",
    "format_count",
    "preflight",
    "print_budgets",
    "render_budget",
    "run_budget",
]



@dataclass(frozen=True, kw_only=True)
class Caps:
    """Hard limits of a cloud run: achieved ops/s in any second, and the run's wall time."""

    max_ops_per_s: float
    max_duration_s: float

    @classmethod
    def of(cls, profile: Profile, *, max_ops_per_s: float | None = None,
           max_duration_s: float | None = None) -> Caps:
        """The profile's ``[cloud]`` caps, each replaced by a command-line value when given."""
        cloud = profile.cloud
        for name, value in (("--max-ops-per-s", max_ops_per_s), ("--max-duration", max_duration_s)):
            if value is not None and not 0 < value < float("inf"):
                raise UsageError(f"{name}: must be a positive number, got {value!r}")
        return cls(max_ops_per_s=float(max_ops_per_s or cloud.max_ops_per_s),
                   max_duration_s=float(max_duration_s or cloud.max_duration_s))


@dataclass(frozen=True, kw_only=True)
class CellBudget:
    cell_id: str
    backend: str
    schedule: str
    open_model: bool
    #: Highest target rate (real ops/s: ``time_scale`` stretches schedule time, not rates).
    peak_ops_per_s: float | None
    #: Operations of the measured phase: the rate integrated over the cell's *wall* time.
    total_ops: float | None
    duration_s: float
    warmup_s: float
    warmup_ops: float | None
    preload_records: int
    time_scale: float
    namespace: str
    writes_under: str
    #: The emulator this cell is the first on: it warms ``warmup_s`` (a cold JVM's minimum
    #: included), then until its latency settles (``targets._emulator_target.cell_warmup``).
    settles_on: str | None = None

    @property
    def wall_s(self) -> float:
        return self.duration_s + self.warmup_s


@dataclass(frozen=True, kw_only=True)
class RunBudget:
    profile: str
    project: str
    caps: Caps
    cells: tuple[CellBudget, ...]
    cleanup: bool
    database: str
    instance: str
    #: The profile's target: an emulator plan shows the numbers only (no caps, no clean-up).
    target: str = "cloud"

    @property
    def peak_ops_per_s(self) -> float | None:
        """Cells run one after the other: the run's peak is the highest cell peak (None: closed model)."""
        peaks = [c.peak_ops_per_s for c in self.cells]
        known = [p for p in peaks if p is not None]
        return max(known) if len(known) == len(peaks) else None

    @property
    def total_ops(self) -> float | None:
        """Measured + warm-up operations of every cell (None when a closed-model cell is unbounded)."""
        total: float = 0
        for c in self.cells:
            if c.total_ops is None:
                return None
            total += c.total_ops + (c.warmup_ops or 0.0)
        return total

    @property
    def duration_s(self) -> float:
        return sum(c.wall_s for c in self.cells)

    @property
    def preload_records(self) -> int:
        return sum(c.preload_records for c in self.cells)

    def violations(self) -> list[str]:
        """One line per cap the plan exceeds (empty: within the caps)."""
        found = []
        for cell in self.cells:
            if cell.peak_ops_per_s is not None and cell.peak_ops_per_s > self.caps.max_ops_per_s:
                found.append(f"{cell.cell_id} peaks at {format_count(cell.peak_ops_per_s)} ops/s > max_ops_per_s "
                             f"{format_count(self.caps.max_ops_per_s)}")
        if self.duration_s > self.caps.max_duration_s:
            found.append(f"the run lasts {format_duration(self.duration_s)} > max_duration "
                         f"{format_duration(self.caps.max_duration_s)}")
        return found


def format_count(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:,.3g}"


# -- refusals ---------------------------------------------------------------------------------
def emulator_variables(environ: Mapping[str, str]) -> list[str]:
    """Set ``*_EMULATOR_HOST`` variables: each would silently redirect a client to an emulator.
    Even an empty one: the Datastore client tests ``is not None`` and would use ``http://``."""
    return sorted(k for k in environ if k.endswith("_EMULATOR_HOST"))


def check_opt_in(profile: Profile, *, allow_cloud: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """Refuse a confused or unsafe command line (``UsageError``, one line); True for a cloud run."""
    env = os.environ if environ is None else environ
    name, target, project = profile.name, profile.target, profile.project
    if target != "cloud":
        if allow_cloud is not None:
            raise UsageError(f"{name}: --allow-cloud given but the profile targets the emulators "
                             f"(target = {target!r}); drop the flag or set target = 'cloud'")
        return False
    if allow_cloud is None:
        raise UsageError(f"{name}: target = 'cloud' runs only with --allow-cloud {project} "
                         f"(the profile's project, typed out as a deliberate opt-in)")
    if allow_cloud != project:
        raise UsageError(f"{name}: --allow-cloud names project {allow_cloud!r} but the profile targets "
                         f"{project!r}; refusing")
    found = emulator_variables(env)
    if found:
        raise UsageError(f"{name}: cloud run refused: {found[0]}={env[found[0]]} is set, so the clients would "
                         f"talk to an emulator, not to {project}; unset {', '.join(found)}")
    return True


# -- plan ---------------------------------------------------------------------------------------
def _writes_under(backend: str, namespace: str, *, project: str, instance: str, database: str) -> str:
    """Where the cell's data lives, in the store's own words (its spec's ``cloud`` part)."""
    spec = spec_for(backend)
    if spec.cloud is None:  # an emulator-only store: the plan still shows the namespace
        return f"{spec.title} namespace {namespace}"
    return spec.cloud.location(namespace, project=project, instance=instance, database=database)


def run_budget(profile: Profile, caps: Caps | None = None, *,
               namespaces: Mapping[str, str] | None = None) -> RunBudget:
    """The plan of ``profile`` from its data alone (no network): per cell and in total.

    ``namespaces`` maps cell id -> the namespace the runner derived (a placeholder before
    the run id exists).
    """
    cloud = profile.cloud
    caps = caps or Caps.of(profile)
    profile_warmup_s = profile.schedule.warmup_s
    on_emulators = profile.target == "emulator"
    # the run starts every emulator no *_EMULATOR_HOST names (one already up is reused: no cold JVM)
    started = set(EMULATOR_FOR.values()) - set(endpoints_from_env(os.environ))
    warmed: set[str] = set()
    cells = []
    for cell in profile.cells:
        warmup = cell_warmup(cell.backend, warmed=warmed, started=started) if on_emulators else Warmup()
        warmup_s = warmup.seconds(profile_warmup_s)
        sched = cell.schedule
        namespace = (namespaces or {}).get(cell.id) or cell_namespace(cell, "<run>")  # run id not known yet
        if sched.open_model:
            peak: float | None = sched.peak(cell.horizon_s)
            # ∫ rate(t · s) dt over the wall duration D equals (1/s) ∫ rate(u) du over the
            # schedule horizon D · s: time_scale compresses the ramp, so fewer operations.
            total: float | None = sched.total_ops(cell.horizon_s) / cell.time_scale
            warm: float | None = sched.rate(0.0) * warmup_s
        else:
            peak = total = warm = None
        cells.append(CellBudget(
            cell_id=cell.id, backend=cell.backend, schedule=sched.describe(), open_model=sched.open_model,
            peak_ops_per_s=peak, total_ops=total, duration_s=cell.duration_s, warmup_s=warmup_s,
            warmup_ops=warm, preload_records=profile.workload.record_count, time_scale=cell.time_scale,
            namespace=namespace,
            # an emulator run uses the client's default instance (cloud.instance is for target = 'cloud')
            writes_under=_writes_under(cell.backend, namespace, project=profile.project,
                                       instance=cloud.instance or Target.instance, database=cloud.database),
            settles_on=EMULATOR_FOR[cell.backend] if warmup.settle and warmup_s > 0 else None,
        ))
    return RunBudget(profile=profile.name, project=profile.project, caps=caps, cells=tuple(cells),
                     cleanup=cloud.cleanup, database=cloud.database, instance=cloud.instance,
                     target=profile.target)


def render_budget(plan: RunBudget) -> str:
    """The plan as printed before a cloud run (and by ``keyramp run --plan``)."""
    caps = plan.caps
    cloud = plan.target == "cloud"
    lines = [
        f"cloud budget: {plan.profile} → project {plan.project}" if cloud else
        f"plan: {plan.profile} → the emulators (caps and clean-up apply to target = 'cloud' only)",
    ]
    if cloud:
        lines.append(
            f"caps: {format_count(caps.max_ops_per_s)} ops/s in any second, {format_duration(caps.max_duration_s)} "
            f"for the whole run (the run aborts when either is exceeded)"
        )
    for c in plan.cells:
        if c.open_model:
            rate = f"peak {format_count(c.peak_ops_per_s or 0)} ops/s"
            ops = (f"{format_count(c.total_ops or 0)} operations + {'≥ ' if c.settles_on else ''}"
                   f"{format_count(c.warmup_ops or 0)} warm-up")
        elif cloud:
            bound = caps.max_ops_per_s * c.wall_s
            rate = f"peak unbounded (closed model), capped at {format_count(caps.max_ops_per_s)} ops/s"
            ops = f"operations unbounded, capped at {format_count(bound)}"
        else:
            rate, ops = "peak unbounded (closed model)", "operations unbounded"
        warm = (f"≥ {format_duration(c.warmup_s)} warm-up (the first cell on the {c.settles_on} emulator: at least "
                f"{format_duration(FIRST_WARMUP_S)} on a freshly started JVM, then until its latency settles)"
                if c.settles_on else f"{format_duration(c.warmup_s)} warm-up")
        lines.append(f"  {c.cell_id}: {c.schedule}; {rate}; {ops}; {format_duration(c.duration_s)} + {warm}"
                     + (f" (time_scale {c.time_scale:g}: {format_duration(c.duration_s * c.time_scale)} of schedule)"
                        if c.time_scale != 1 else ""))
        lines.append(f"      preload {format_count(c.preload_records)} records (batch writes, not paced); "
                     f"writes under {c.writes_under}")
    peak, total = plan.peak_ops_per_s, plan.total_ops
    at_least = "≥ " if any(c.settles_on for c in plan.cells) else ""
    total_text = (f"{at_least}{format_count(total)} operations" if total is not None else
                  f"operations unbounded, capped at {format_count(caps.max_ops_per_s * plan.duration_s)}" if cloud else
                  "operations unbounded")
    lines.append(f"total: peak {'unbounded' if peak is None else format_count(peak) + ' ops/s'}; {total_text}"
                 f" + {format_count(plan.preload_records)} preloaded records; "
                 f"{at_least}{format_duration(plan.duration_s)}")
    if not cloud:
        pass
    elif plan.cleanup:
        lines.append("afterwards: each cell's data is deleted and the delete verified "
                     f"({', '.join(c.namespace for c in plan.cells)})")
    else:
        lines.append("afterwards: nothing is deleted ([cloud] cleanup = false): delete "
                     f"{', '.join(c.namespace for c in plan.cells)} yourself")
    if any(c.time_scale != 1 for c in plan.cells):
        lines.append("note: time_scale ≠ 1 compresses the ramp; the service sees the planned ops/s but not the "
                     "minutes it needs to split tablets (BP-RAMP-1)")
    for problem in plan.violations() if cloud else []:
        lines.append(f"REFUSED: {problem}")
    return "\n".join(lines)


def preflight(profile: Profile, *, allow_cloud: str | None, environ: Mapping[str, str] | None = None,
              max_ops_per_s: float | None = None, max_duration_s: float | None = None,
              namespaces: Mapping[str, str] | None = None) -> RunBudget | None:
    """Every check before a cloud run that needs no network; the plan, or None for an emulator run."""
    if not check_opt_in(profile, allow_cloud=allow_cloud, environ=environ):
        return None
    plan = run_budget(profile, Caps.of(profile, max_ops_per_s=max_ops_per_s, max_duration_s=max_duration_s),
                      namespaces=namespaces)
    problems = plan.violations()
    if problems:
        raise UsageError(f"{profile.name}: plan exceeds the cloud caps: {'; '.join(problems)} "
                         f"(lower the schedule or raise [cloud] caps)")
    return plan


#: Prices a cloud budget (``forecast._run_cost.budget_costs``: this layer cannot import it): the text.
BudgetCosts = Callable[["Profile", RunBudget], str]


def print_budgets(profiles: Iterable[Profile], *, allow_cloud: str | None, out: TextIO,
                  environ: Mapping[str, str] | None = None, max_ops_per_s: float | None = None,
                  max_duration_s: float | None = None, costs: BudgetCosts | None = None) -> int:
    """``keyramp run --plan``: print each plan (a cloud budget with its ``costs``), then apply every
    offline check; no network call.

    Returns 0; a refusal raises ``UsageError`` (exit 2) after the plan was printed, so the
    user sees both what was planned and why it would not run.
    """
    for profile in profiles:
        caps = Caps.of(profile, max_ops_per_s=max_ops_per_s, max_duration_s=max_duration_s)
        plan = run_budget(profile, caps)
        print(render_budget(plan), file=out)
        if costs is not None and profile.target == "cloud":
            print(costs(profile, plan), file=out)
        out.flush()
        if profile.target == "cloud" or allow_cloud is not None:
            preflight(profile, allow_cloud=allow_cloud, environ=environ, max_ops_per_s=max_ops_per_s,
                      max_duration_s=max_duration_s)
    return 0
