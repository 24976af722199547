"""One cell from set-up to summary: address, store preparation, preload, then either a
scenario probe or the phases (``_phases``) with the users here or on workers.

``CellRun.execute`` returns the cell's summary (a ``CellSummary``); when the cell fails after
its measured phase began, ``partial`` holds the summary of what was recorded.
"""

from __future__ import annotations

import csv
import socket
import time
from typing import TYPE_CHECKING, Any

import gevent
from locust.env import Environment
from locust.event import Events
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV, StatsCSVFileWriter

from keyramp.backends import spec_for
from keyramp.probes import run_probe
from keyramp.profile import Cell, Profile, cell_namespace
from keyramp.results import CellStoreModel, CellSummary, LoadCpu, Observers, ProbeResult, TeeSink
from keyramp.run._coverage import load_generated
from keyramp.run._exceptions import WorkloadFailed
from keyramp.run._local import LocalLoad
from keyramp.run._locust_stats import LocustStatsSink
from keyramp.run._master import Master, WorkerLoad
from keyramp.run._pacer import Pacing
from keyramp.run._phases import CellLoad, CellPhases, StopFlag
from keyramp.run._recorder import Recorder
from keyramp.run._share import CellShare, key_sample_share
from keyramp.workload import CellWorkload

if TYPE_CHECKING:
    from keyramp.results import RunDirectory
    from keyramp.targets import RunTarget

__all__ = ["CellRun"]


class _LocustCsv:
    """Locust's own CSV files for a cell (``locust/<cell>_stats.csv``, history, failures),
    written from the stats the recorder feeds once a second."""

    def __init__(self, env: Environment, base: str) -> None:
        self.env, self.base = env, base
        # Locust's default history (the Aggregated row per second): per-op seconds are in keyramp's time series
        self.writer = StatsCSVFileWriter(env, PERCENTILES_TO_REPORT, base, full_history=False)
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        self.env.stats.reset_all()
        self._greenlet = gevent.spawn(self.writer.stats_writer)

    def finish(self) -> None:
        """The final files (the periodic writer is stopped mid-interval)."""
        if self._greenlet is not None:
            self._greenlet.kill()
        final = StatsCSV(self.env, PERCENTILES_TO_REPORT)
        self.writer.close_files()
        if self._greenlet is None:
            return
        for suffix, method in (("_stats.csv", final.requests_csv), ("_failures.csv", final.failures_csv),
                               ("_exceptions.csv", final.exceptions_csv)):
            with open(self.base + suffix, "w", newline="") as fh:
                method(csv.writer(fh))


class CellRun:
    """Sets up one cell and runs it; ``execute`` returns its summary."""

    def __init__(self, *, cell: Cell, profile: Profile, run: RunDirectory, target: RunTarget, timeout_s: float,
                 stop: StopFlag, observers: Observers, master: Master | None = None) -> None:
        self.cell = cell
        self.profile = profile
        self.run = run
        self.target = target
        self.stop = stop
        self.observers = observers
        self.master = master
        self.workload = CellWorkload(backend=cell.backend, strategy=cell.strategy, settings=profile)
        base = self.workload.target(project=profile.project, endpoint=None,
                                    namespace=cell_namespace(cell, run.run_id[-4:]), timeout_s=timeout_s)
        #: Where the cell's operations go (``RunTarget.address``).
        self.address = target.address(cell, base)
        self.backend_class = spec_for(cell.backend).driver(profile.driver)
        #: The driver the cell's users run (a Python workload's ops use the official client).
        self.users_backend = spec_for(cell.backend).driver(self.workload.users_driver(profile.driver))
        #: Set when the measured phase starts (a probe cell has none, and no key samples).
        self.measured = False
        #: The summary of what was recorded when the cell failed after its measured phase began.
        self.partial: CellSummary | None = None
        #: Per-worker figures of a distributed cell, for the manifest.
        self.worker_meta: list[dict[str, Any]] | None = None
        self.warmup_used_s = 0.0
        #: Records the warm-up inserted (``CellLoad.warmup_inserts``; None when not reported).
        self.warmup_inserts: int | None = None

    def _phase(self, text: str) -> None:
        self.observers.cell_phase(self.cell, text)

    def _recorder(self, extra_sinks: list[Any]) -> Recorder:
        sink = TeeSink([self.run, *extra_sinks, *self.observers.cell_sinks(self.cell)])
        return Recorder(cell=self.cell.id, ops=self.workload.ops, sink=sink,
                        key_samples_per_s=self.profile.workload.key_samples_per_s,
                        capture_exceptions=bool(self.workload.user_spec), kinds=self.workload.sample_kinds(),
                        decode=self.workload.capture(self.address.namespace))

    def _preload(self) -> None:
        batches = self.workload.preload_batches()
        if not batches:
            return
        backend = self.backend_class(self.address)
        try:
            pool = [gevent.spawn(self.workload.preload, backend, b) for b in batches[:1]]
            gevent.joinall(pool, raise_error=True)  # first batch alone: fail fast on a bad store
            for start in range(1, len(batches), 8):
                group = [gevent.spawn(self.workload.preload, backend, b) for b in batches[start:start + 8]]
                gevent.joinall(group, raise_error=True)
                if self.stop.event.is_set():
                    raise self.stop.interrupted()
        finally:
            backend.close()

    def execute(self) -> CellSummary:
        cell = self.cell
        warmup = self.target.before_cell(cell, self.backend_class, self.address, self._phase)
        self.backend_class.prepare(self.address)
        if self.stop.event.is_set():
            raise self.stop.interrupted()
        self._phase("preloading")
        self._preload()
        if self.profile.workload.probe != "none":
            return self._probe(self.profile.workload.probe)
        load, recorder = self._load()
        locust_csv = _LocustCsv(load.environment, str(self.run.path / "locust" / cell.id))
        phases = CellPhases(cell=cell, load=load, target=self.target, warmup=warmup, stop=self.stop,
                            observers=self.observers, on_start=lambda: self._on_start(locust_csv))
        try:
            phases.run()
        finally:
            self.warmup_used_s = phases.warmup_used_s
            locust_csv.finish()
            self.worker_meta = load.worker_meta()
            self.warmup_inserts = load.warmup_inserts()  # they extend the key range the cell ran against
            if phases.measured:
                self.partial = self._summary(recorder, users=phases.users, duration=phases.duration_s,
                                             load_cpu=load.load_cpu())
                stats = self.target.measured(cell)  # a store model's counts (docs/fidelity.md), at the wire edge
                if stats is not None:
                    self.partial.store_model = CellStoreModel.from_stats(stats)
                generated = self.partial.total.count if self.partial.total is not None else 0
                self.partial.load_generated = load_generated(cell, generated, self.worker_meta)
        assert self.partial is not None
        return self.partial

    def _on_start(self, locust_csv: _LocustCsv) -> None:
        self.target.measuring(self.cell)
        self.run.begin_cell(self.cell.id)
        self.measured = True
        locust_csv.start()

    def _load(self) -> tuple[CellLoad, Recorder]:
        """Where the users run: here, or on the master's workers. Either way the recorder
        that writes the run directory also feeds the Locust environment's statistics."""
        cell, pacing = self.cell, Pacing.of(self.cell)
        env = self.master.env if self.master is not None else Environment(
            events=Events(), host=f"emulator://{self.address.endpoint}")
        # A workload's own exceptions also go to the Locust runner's exceptions table (its CSV).
        stats = LocustStatsSink(env.stats, request_type=cell.backend)
        recorder = self._recorder([stats])
        if self.master is None:
            load = LocalLoad(env, workload=self.workload, backend_class=self.users_backend, target=self.address,
                             recorder=recorder, pacing=pacing)
            stats.runner = load.runner  # the local runner exists once its load does
            return load, recorder
        stats.runner, stats.node = self.master.runner, "workers"
        # The workers pace; the master's pacer only tells each merged second's target rate.
        return WorkerLoad(self.master, plan=self._worker_plan, recorder=recorder, pacer=pacing.pacer(0.0),
                          duration_s=cell.duration_s, stop=self.stop, say=self._phase), recorder

    def _worker_plan(self, index: int, workers: int, warmup_interval: float | None) -> CellShare:
        cell = self.cell
        return CellShare(
            token=f"{self.run.run_id}/{cell.id}", cell_id=cell.id, backend=cell.backend, strategy=cell.strategy,
            duration_s=cell.duration_s, time_scale=cell.time_scale, resolved=self.profile.resolved,
            address=self.address, target_kind=self.target.kind, worker_index=index, workers=workers,
            key_samples_per_s=key_sample_share(self.profile.workload.key_samples_per_s, workers),
            warmup_interval=warmup_interval, allocated=tuple(self.workload.allocated))

    def _probe(self, name: str) -> CellSummary:
        """A scenario probe (consistency, contention, …) instead of the Locust phase."""
        self._phase(f"probe {name}")
        recorder = self._recorder([])
        started = time.perf_counter()
        settings = self.profile
        result = run_probe(
            name, backend_class=self.backend_class, target=self.address, params=settings.workload.probe_params,
            budget_s=self.cell.duration_s, seed=settings.seed, consistency=settings.emulator.consistency,
        )
        if self.stop.event.is_set():
            raise self.stop.interrupted()
        recorder.begin(started)
        recorder.tick(time.perf_counter(), target_ops_per_s=None)
        summary = self._summary(recorder, users=0, duration=time.perf_counter() - started)
        # probes sit below results and return a mapping: read through the model at this edge
        summary.probe = ProbeResult.from_json(result, where="probe")
        return summary

    def _identify(self, summary: CellSummary) -> CellSummary:
        """``summary`` with what ran: the backend, key strategy, schedule and distribution, the warm-up
        and the namespace (a document writes its fields in declaration order, whenever they are set)."""
        cell = self.cell
        summary.backend, summary.strategy = cell.backend, cell.strategy
        summary.schedule, summary.schedule_description = cell.schedule.name, cell.schedule.describe()
        summary.distribution = self.workload.distribution
        summary.warmup_s, summary.namespace = self.warmup_used_s, self.address.namespace
        return summary

    def failed_summary(self, failed: WorkloadFailed) -> CellSummary:
        """A cell stopped before its measured phase by its workload's own exception: what it
        raised (``warmup_failure``), and that nothing was measured."""
        return self._identify(CellSummary(
            status="failed", reason="workload error",
            operations={},  # nothing was measured
            warmup_failure=failed.failure.example.warmup_failure(failed.failure.ops)))

    def _summary(self, recorder: Recorder, *, users: int, duration: float,
                 load_cpu: LoadCpu | None = None) -> CellSummary:
        summary = self._identify(recorder.summary(duration_s=duration))
        summary.duration_s, summary.time_scale, summary.users = round(duration, 3), self.cell.time_scale, users
        if self.warmup_inserts is not None:
            summary.warmup_inserts = self.warmup_inserts
        if load_cpu is not None:
            load_cpu.store_local = self._store_local()
            summary.load_cpu = load_cpu
        return summary

    def _store_local(self) -> bool:
        """The store shares the load machine: an emulator on this host, and every load process here
        (``keyramp.results._generator``: a saturated machine then limits the store's figures too)."""
        if self.target.kind != "emulator":
            return False
        here = socket.gethostname()
        host = (self.address.endpoint or "").rsplit(":", 1)[0].strip("[]")
        if host not in ("127.0.0.1", "localhost", "::1", here) and not host.startswith("127."):
            return False
        return all(w.get("host") in (None, here) for w in self.worker_meta or [])

