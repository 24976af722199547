"""The run page's background planner: a complete run with a ``[launch]`` and no plan is planned here, once.

One per app (``app.extensions["keyramp_planner"]``). The first view of such a run queues it and
returns at once; one daemon thread (alive while runs are queued) plans them one after another
(planning is CPU-bound: two at once on a 2-core box would only slow both), cell by cell, so
every view shows the plans so far and ``done`` of ``total``. When every cell is planned,
``plan.json`` is written atomically (the bytes ``keyramp plan RUN --json`` prints), so the next
view and the next server read it. A run is queued once per app, however many tabs and reloads
ask for it; a planning that fails says why (``status: "failed"``) and is not retried by this
server. ``close`` (``keyramp ui`` on exit) stops the thread between cells; a daemon, it never
holds the process up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from keyramp.core import fmt
from keyramp.forecast import Prices, load_prices, plan_run
from keyramp.results import CellLaunchPlan, LaunchPlan, Run, write_json_new
from keyramp.web._plans import PLAN_FILE, RunPlans, plan_command, planned_plans

__all__ = ["BackgroundPlanner", "PlanCell", "plan_one"]

#: Plans one cell of a run (``plan_one``); tests inject a blocking or failing one.
PlanCell = Callable[[Run, str, Prices], LaunchPlan]

_log = logging.getLogger(__name__)


def plan_one(run: Run, cell: str, prices: Prices) -> LaunchPlan:
    """One cell planned as ``keyramp plan RUN --cell CELL`` plans it (at the ``[launch]`` peak)."""
    return plan_run(run, cell=cell, prices=prices)


@dataclass(kw_only=True, eq=False)  # one job is one object: found in the queue by identity
class _Job:
    """One run's planning: written by the planner thread, read by views, both under the planner's lock."""

    run: Run
    cell_ids: tuple[str, ...]
    started: bool = False
    plans: list[LaunchPlan] = field(default_factory=list)
    done: int = 0
    #: What views show once the planning is over (planned, failed, or nothing to plan).
    result: RunPlans | None = None

    def snapshot(self, *, ahead: int = 0) -> RunPlans:
        """What views show now; ``ahead``: the runs to be planned before this one."""
        if self.result is not None:
            return self.result
        total = len(self.cell_ids)
        where = (f"{self.done} of {total} cells planned" if self.started or not ahead
                 else f"queued behind {fmt.plural(ahead, 'other run')}")
        return RunPlans(cells=_cells(self.plans), status="planning", target=_target(self.plans), done=self.done,
                        total=total, hint=f"being computed in the background ({where}); this page updates itself "
                                          "as the plans arrive")


def _cells(plans: list[LaunchPlan]) -> dict[str, CellLaunchPlan]:
    return LaunchPlan.merged(plans).cells if plans else {}


def _target(plans: list[LaunchPlan]) -> str | None:
    return fmt.ops_per_s(plans[0].target_ops_per_s) if plans else None


class BackgroundPlanner:
    """Plans runs in one daemon thread, each run once; ``plans(run)`` never waits for it."""

    def __init__(self, *, plan_cell: PlanCell = plan_one, prices: Callable[[], Prices] = load_prices) -> None:
        self._plan_cell = plan_cell
        self._prices = prices
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self._queue: deque[_Job] = deque()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._busy: _Job | None = None  # the job being planned

    def plans(self, run: Run) -> RunPlans:
        """The run's plans as far as they go; the first call queues its planning (no later one does)."""
        with self._lock:
            job = self._jobs.get(str(run.path))
            if job is None:
                job = self._jobs[str(run.path)] = _Job(run=run, cell_ids=_cell_ids(run))
                self._queue.append(job)
                if self._thread is None and not self._stop.is_set():  # the thread lives while there is work
                    self._thread = threading.Thread(target=self._work, name="keyramp-planner", daemon=True)
                    self._thread.start()
            queued = list(self._queue)
            ahead = queued.index(job) + (self._busy is not None) if job in queued else 0
            return job.snapshot(ahead=ahead)

    @property
    def running(self) -> bool:
        """Whether its thread is planning (it ends when nothing is queued)."""
        with self._lock:
            return self._thread is not None

    def close(self, *, timeout_s: float = 2.0) -> None:
        """Stop planning (between two cells; nothing half-planned is saved) and wait a little for the thread."""
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _work(self) -> None:
        while True:
            with self._lock:  # taken and left under the lock ``plans`` queues under: no job is ever stranded
                self._busy = None
                if self._stop.is_set() or not self._queue:
                    self._thread = None
                    return
                job = self._busy = self._queue.popleft()
            self._plan(job)

    def _plan(self, job: _Job) -> None:
        started, cell = time.perf_counter(), None
        with self._lock:
            job.started = True
        try:
            prices = self._prices()
            for cell in job.cell_ids:
                if self._stop.is_set():
                    return
                plan = self._plan_cell(job.run, cell, prices)
                with self._lock:
                    job.plans.append(plan)
                    job.done += 1
            result = _finish(job, time.perf_counter() - started)
        except Exception as exc:  # noqa: BLE001 - a background failure is shown on the page, never lost in a thread
            _log.warning("planning %s failed", job.run.path, exc_info=True)
            reason = f"{type(exc).__name__}: {exc}" + (f" (cell {cell})" if cell else "")
            with self._lock:
                result = RunPlans(cells=_cells(job.plans), status="failed", target=_target(job.plans),
                                  done=job.done, total=len(job.cell_ids), reason=reason,
                                  hint=f"planning failed ({reason}): {plan_command(job.run)}")
        with self._lock:
            job.result = result


def _cell_ids(run: Run) -> tuple[str, ...]:
    """The run's cells in ``keyramp plan``'s order (cells without a key stream plan to nothing)."""
    manifest = run.manifest
    return tuple(sorted(c.id for c in manifest.cells)) if manifest is not None else ()


def _finish(job: _Job, seconds: float) -> RunPlans:
    """The whole run's plan, saved as ``plan.json`` (when the directory is writable) and read back as views show it."""
    with_cells = [p for p in job.plans if p.cells]
    if not with_cells:
        return RunPlans(hint="no cell with a key stream to plan")
    whole = LaunchPlan.merged(with_cells)  # what ``keyramp plan RUN --json`` writes for the whole run
    try:
        if not write_json_new(Path(job.run.path) / PLAN_FILE, whole.to_json()):  # never over one written meanwhile
            _log.info("%s appeared while planning: kept, not replaced", Path(job.run.path) / PLAN_FILE)
    except OSError as exc:  # a read-only results directory: this server keeps it, the next one plans again
        _log.warning("%s not saved: %s", Path(job.run.path) / PLAN_FILE, exc)
    return planned_plans(job.run, whole, seconds=seconds)
