"""``keyramp run``: profile → emulators → Locust (as a library) → recorder → run directory.

Each cell runs in a fresh Locust ``Environment`` with its own user class: users are
spawned and connected first (client creation is not measured), then the measured
phase starts for all of them at once. A ticker closes a 1-second interval of the
recorder, checks the stop conditions (duration, Ctrl-C/SIGTERM, a store that stopped
answering) and updates the live status line. With ``RunOptions.master`` set, the
measured phase runs on Locust workers instead and the master merges their intervals
(``keyramp.run._distributed``); everything else here stays the same.
"""

from __future__ import annotations

import gc
import math
import os
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import locust  # noqa: F401  (monkey-patches the standard library for gevent)

from keyramp.run._gevent import ensure_gevent_grpc

ensure_gevent_grpc()  # before any gRPC channel exists; Locust has monkey-patched already

import gevent  # noqa: E402
from gevent.event import Event  # noqa: E402
from locust.env import Environment  # noqa: E402
from locust.event import Events  # noqa: E402
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV, StatsCSVFileWriter  # noqa: E402

from keyramp.targets._emulators import (  # noqa: E402
    EmulatorManager,
    RunningEmulator,
    _log_tail,
    endpoints_from_env,
    reset,
)
from keyramp._errors import KeyrampError, RunFailed, UsageError  # noqa: E402
from keyramp.run._pacer import Pacer  # noqa: E402
from keyramp.profile._profile import Cell, Profile, cell_namespace, slug  # noqa: E402
from keyramp.run._recorder import Recorder, TimeseriesRow  # noqa: E402
from keyramp.run._report import Console, LiveStatus, render_table  # noqa: E402
from keyramp.results._rundir import RunDirectory, base_manifest, utc_now  # noqa: E402
from keyramp.run._user import CellContext, user_class_for  # noqa: E402
from keyramp.run._workload import CellWorkload  # noqa: E402
from keyramp.backends import BACKENDS, EMULATOR_FOR  # noqa: E402

__all__ = ["Interrupted", "RunOptions", "RunOutcome", "SecondCheck", "drain", "dropped_since", "freeze_heap",
           "run_profile", "tick_phase", "warmup_interval"]

#: Consecutive seconds in which every operation failed as "unreachable" before a cell aborts.
_UNREACHABLE_ABORT_S = 5
_UNREACHABLE = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "CLIENT_ServiceUnavailable", "CLIENT_RetryError"})
#: Users (clients) must be created within this.
_USERS_READY_S = 60.0
#: Warm-up of the first cell on each emulator (see ``_CellRun._warm_up``): at least, at most,
#: the window it is judged in, and how close a window's median must come to the previous one.
_FIRST_WARMUP_S = 10.0
_MAX_WARMUP_S = 30.0
_SETTLE_WINDOW_S = 2.0
_SETTLED_RATIO = 1.1
#: How long in-flight operations may finish after the phase ends before users are stopped.
_DRAIN_S = 2.0


class Interrupted(KeyrampError):
    """Ctrl-C or SIGTERM: what was recorded is kept and the run is marked interrupted."""

    exit_code = 130


@dataclass(kw_only=True)
class RunOptions:
    out: Path = Path("results")
    strict: bool = False
    quiet: bool = False
    #: Emulator endpoints by emulator kind; ``None`` = attach from env, reuse or start.
    endpoints: Mapping[str, str] | None = None
    state_dir: Path | None = None
    timeout_s: float = 10.0
    #: A Locust master (``keyramp.run._distributed.Master``): cells run on its workers.
    master: Any = None
    #: ``--allow-cloud PROJECT``: the opt-in a ``target = "cloud"`` profile needs (docs/cloud.md).
    allow_cloud: str | None = None
    #: Command-line cap overrides: ``max_ops_per_s`` / ``max_duration_s`` (None = the profile's).
    cloud_caps: Mapping[str, float | None] = field(default_factory=dict)


@dataclass(kw_only=True)
class RunOutcome:
    run_id: str
    path: Path
    status: str
    reason: str | None
    summary: dict[str, Any]
    thresholds_passed: bool = True

    @property
    def exit_code(self) -> int:
        if self.status == "interrupted":
            return Interrupted.exit_code
        if self.status != "complete" or not self.thresholds_passed:
            return 1
        return 0


class _StopFlag:
    """Ctrl-C / SIGTERM set this; the ticker turns it into ``Interrupted``."""

    def __init__(self) -> None:
        self.event = Event()
        self.reason: str | None = None
        self._handlers: list[Any] = []

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._handlers.append(gevent.signal_handler(signum, self._on_signal, signum))

    def _on_signal(self, signum: int) -> None:
        self.reason = f"{signal.Signals(signum).name} received"
        self.event.set()

    def uninstall(self) -> None:
        for handler in self._handlers:
            handler.cancel()
        self._handlers.clear()


class _Emulators:
    """Endpoints per emulator kind: attach (env / explicit), reuse (state file), or start."""

    def __init__(self, profile: Profile, options: RunOptions, console: Console) -> None:
        self.kinds = sorted({EMULATOR_FOR[c.backend] for c in profile.cells})
        self.started: list[str] = []
        #: Emulators this run launched or reuses from the state file: their pid can be polled.
        self.owned: dict[str, RunningEmulator] = {}
        self.manager: EmulatorManager | None = None
        given = dict(options.endpoints or endpoints_from_env(os.environ))
        missing = [k for k in self.kinds if k not in given]
        if missing:
            self.manager = EmulatorManager(state_dir=options.state_dir)
            # up() applies the consistency to the datastore emulator only.
            running = self.manager.up(missing, consistency=float(profile.data["emulator"]["consistency"]))
            # From up() itself: a recorded emulator it replaced (dead or unhealthy) is ours too.
            self.started = list(self.manager.last_started)
            if not options.quiet:
                reused = [k for k in missing if k not in self.started]
                console.print(f"[dim]emulators started: {', '.join(self.started) or 'none'}"
                              f" (reused: {', '.join(reused) or 'none'})[/dim]")
            self.owned = dict(running)
            given.update({k: e.endpoint for k, e in running.items()})
        self.endpoints = given

    def died(self, kind: str) -> str | None:
        """A one-line reason if the emulator of ``kind`` that we know the pid of has exited."""
        emu = self.owned.get(kind)
        if emu is None or emu.alive():
            return None
        return f"emulator {kind} exited (log tail: {_log_tail(emu.log_path)})"

    def stop_started(self) -> None:
        if self.manager is not None and self.started:
            self.manager.down(self.started)


def _stop_runner(runner: Any, *, grace_s: float = _DRAIN_S + 3.0) -> None:
    """``runner.quit()``, bounded: a user stuck in a client call that swallows the kill
    (e.g. a Firestore transaction rolling back under a held lock) must not hold the run."""
    stopper = gevent.spawn(runner.quit)
    stopper.join(timeout=grace_s)
    if not stopper.dead:
        runner.user_greenlets.kill(block=False)
        stopper.kill(block=False)


def warmup_interval(cell: Cell, users: int) -> float:
    """Seconds between one user's warm-up operations: all users together run at about the
    schedule's starting rate (a closed model, or a zero rate, runs back to back)."""
    rate = cell.schedule.rate(0.0) if cell.schedule.open_model else 0.0
    return users / rate if rate > 0 else 0.001


def dropped_since(pacer: Pacer | None, recorder: Recorder) -> int:
    """Slots ``pacer`` dropped that no ``recorder.tick`` has been told of yet."""
    return max(0, pacer.dropped - recorder.dropped_total) if pacer else 0


class SecondCheck:
    """The stop conditions a measured phase checks once a second, on one process or merged
    from the workers: a cloud cap, a store that stopped answering, an owned emulator that
    exited. ``check`` returns a one-line reason to abort (without the cell id), else None."""

    def __init__(self, *, cloud: Any, emulator_died: Callable[[], str | None]) -> None:
        #: A ``keyramp.targets._cloud.CloudSession`` for target = "cloud", else None.
        self.cloud = cloud
        self.emulator_died = emulator_died
        self.bad_seconds = 0

    def check(self, total: TimeseriesRow) -> str | None:
        """``total``: the all-operations row of the second that just closed."""
        if self.cloud is not None:
            capped = self.cloud.check(ops_last_second=total.count)
            if capped is not None:
                return capped
        unreachable = sum(n for cls, n in total.error_classes.items() if cls in _UNREACHABLE)
        self.bad_seconds = self.bad_seconds + 1 if total.count and unreachable == total.count else 0
        died = self.emulator_died()  # an owned emulator that exited: no need to wait out the window
        if died is not None:
            return died
        if self.bad_seconds >= _UNREACHABLE_ABORT_S:
            return (f"store unreachable: every operation failed for {self.bad_seconds} s "
                    f"({', '.join(sorted(total.error_classes))})")
        return None


def tick_phase(ctx: CellContext, recorder: Recorder, *, start: float, duration_s: float,
               stop: Event) -> Iterator[tuple[float, list[TimeseriesRow]]]:
    """The measured phase's 1-second clock, in one process (single run or a worker).

    Closes one recorder interval per second, with the pacer's target rate and the slots it
    dropped since the last second, and yields ``(now, rows)``. Ends with the phase or as
    soon as ``stop`` is set (the caller tells which by ``stop.is_set()``).
    """
    end = start + duration_s
    next_tick = start + 1.0
    while True:
        now = time.perf_counter()
        if now >= end or stop.wait(timeout=max(0.0, min(next_tick, end) - now)):
            return
        now = time.perf_counter()
        if now < next_tick:
            continue
        pacer = ctx.pacer
        target = pacer.target_rate(next_tick - 1.0 - start) if pacer else None
        yield now, recorder.tick(now, target_ops_per_s=target, dropped=dropped_since(pacer, recorder))
        next_tick += 1.0


def freeze_heap() -> None:
    """Before a measured phase: move every object alive now (imports, clients, preload
    leftovers) out of the garbage collector's view, so the phase's collections scan only
    what the phase allocates. keyramp's process holds more long-lived objects than a
    plain Locust User's, and full collections over them showed up as CPU per operation:
    A/B on Datastore inserts, keyramp ÷ plain Locust ×0.90 → ×0.96 (bench/bench_overhead.py)."""
    gc.collect()
    gc.freeze()


def drain(ctx: CellContext) -> None:
    """Give in-flight operations a moment to finish so they are recorded, not killed."""
    deadline = time.perf_counter() + _DRAIN_S
    while ctx.in_flight and time.perf_counter() < deadline:
        gevent.sleep(0.005)


class _CellRun:
    """Runs one cell inside Locust and returns its summary dict."""

    def __init__(self, *, cell: Cell, profile: Profile, run: RunDirectory, endpoint: str, options: RunOptions,
                 stop: _StopFlag, status: LiveStatus, first_on_emulator: bool = False, fresh_emulator: bool = False,
                 emulator_died: Callable[[], str | None] = lambda: None, cloud: Any = None) -> None:
        self.cell = cell
        #: A ``keyramp.targets._cloud.CloudSession`` for target = "cloud", else None.
        self.cloud = cloud
        self.first_on_emulator = first_on_emulator
        #: The emulator was started by this run (a cold JVM), not attached or reused.
        self.fresh_emulator = fresh_emulator
        #: Unmeasured warm-up this cell actually ran (the first cell on an emulator runs until settled).
        self.warmup_used_s = 0.0
        self.emulator_died = emulator_died
        #: Per-worker figures of a distributed cell, for the manifest.
        self.worker_meta: list[dict[str, Any]] | None = None
        #: Offset of this cell's first row in keys.csv, set when the measured phase starts.
        self.keys_start: int | None = None
        self.profile = profile
        self.run = run
        self.options = options
        self.stop = stop
        self.status = status
        self.workload = CellWorkload(backend=cell.backend, strategy=cell.strategy, profile=profile.data)
        self.target = self.workload.target(
            project=profile.data["project"], endpoint=endpoint, namespace=cell_namespace(cell, run.run_id[-4:]),
            timeout_s=options.timeout_s,
        )
        if cloud is not None:
            self.target = cloud.target(self.target)  # the real service: no endpoint, [cloud] instance/database
        self.backend_class = BACKENDS[cell.backend]
        self.events = Events()
        self.recorder = Recorder(
            cell=cell.id,
            ops=self.workload.ops,
            sink=run,
            key_samples_per_s=int(profile.data["workload"]["key_samples_per_s"]),
            on_request=self.events.request.fire,
            request_type=cell.backend,
        )

    def _preload(self) -> None:
        batches = self.workload.preload_batches()
        if not batches:
            return
        backend = self.backend_class(self.target)
        try:
            pool = [gevent.spawn(self.workload.preload, backend, b) for b in batches[:1]]
            gevent.joinall(pool, raise_error=True)  # first batch alone: fail fast on a bad store
            for start in range(1, len(batches), 8):
                group = [gevent.spawn(self.workload.preload, backend, b) for b in batches[start:start + 8]]
                gevent.joinall(group, raise_error=True)
                if self.stop.event.is_set():
                    raise Interrupted(self.stop.reason or "interrupted")
        finally:
            backend.close()

    def _users(self, processes: int = 1) -> int:
        sched = self.cell.schedule
        if not sched.open_model:
            return int(sched.users)  # type: ignore[attr-defined]
        # The cap bounds one load process's greenlets and channels: it applies per process.
        cap = int(self.profile.data["schedule"]["max_users"]) * processes
        peak = sched.peak(self.cell.horizon_s)
        # Little's law with a generous 100 ms per op (a loaded client or a lock wait): enough
        # users in flight that the pacer, not the user count, sets the rate; never above the cap.
        return max(1, min(cap, max(4, math.ceil(peak * 0.1))))

    def execute(self) -> dict[str, Any]:
        cell = self.cell
        if self.cloud is not None:
            self.cloud.before_cell(self.backend_class, self.target)  # never write into data we did not create
        self.backend_class.prepare(self.target)
        if self.stop.event.is_set():
            raise Interrupted(self.stop.reason or "interrupted")
        self.status.phase(cell, "preloading")
        self._preload()
        probe = self.profile.data["workload"].get("probe", "none")
        if probe != "none":
            return self._probe(probe)
        if self.options.master is not None:
            return self.options.master.run_cell(self)
        ctx = CellContext(
            workload=self.workload,
            backend_class=self.backend_class,
            target=self.target,
            recorder=self.recorder,
            open_model=cell.schedule.open_model,
        )
        env = Environment(user_classes=[user_class_for(ctx)], events=self.events, host=f"emulator://{self.target.endpoint}")
        runner = env.create_local_runner()
        csv_base = str(self.run.path / "locust" / cell.id)
        csv_writer = StatsCSVFileWriter(env, PERCENTILES_TO_REPORT, csv_base, full_history=True)
        users = self._users()
        self.status.phase(cell, f"spawning {users} users")
        if self.warmup_seconds() > 0:
            # Before the spawn: a user that finds no warm-up interval waits for the phase.
            ctx.warmup_interval = warmup_interval(cell, users)
        # Locust warns above 100 users/s; 50 users connect within a second anyway.
        runner.start(users, spawn_rate=min(max(users, 1) * 10, 100))
        deadline = time.perf_counter() + _USERS_READY_S
        while ctx.users_ready < users:
            if ctx.user_errors:
                _stop_runner(runner)
                raise RunFailed(f"{cell.id}: could not create a client: {ctx.user_errors[0]}")
            if time.perf_counter() > deadline:
                _stop_runner(runner)
                raise RunFailed(f"{cell.id}: users did not start within {_USERS_READY_S:.0f} s "
                                f"({ctx.users_ready}/{users})")
            gevent.sleep(0.02)
        self._warm_up(ctx)
        env.stats.reset_all()
        freeze_heap()
        writer_greenlet = gevent.spawn(csv_writer.stats_writer)
        start = time.perf_counter()
        self.run.begin_cell(cell.id)
        self.keys_start = self.run.keys_offset()
        self.recorder.begin(start)
        if ctx.open_model:
            ctx.pacer = Pacer(
                rate=cell.schedule.rate,
                start=start,
                duration_s=cell.duration_s,
                time_scale=cell.time_scale,
                drop_after_s=float(self.profile.data["schedule"]["drop_after_s"]),
            )
        ctx.phase_started.set()
        reason: str | None = None
        try:
            reason = self._tick_until_end(ctx, start)
        finally:
            ctx.phase_ended.set()
            end = time.perf_counter()
            if reason is None:
                drain(ctx)
            _stop_runner(runner)
            gc.unfreeze()  # what this cell held (clients, users) may be collected again
            writer_greenlet.kill()
            self._final_tick(ctx, start)
            self._write_locust_csv(env, csv_base, csv_writer)
            duration = max(min(end, start + cell.duration_s) - start, 1e-9)
            summary = self._summary(users=ctx.users_ready, duration=duration)
            self.partial = summary
        if reason is not None:
            raise RunFailed(reason) if not self.stop.event.is_set() else Interrupted(reason)
        return summary

    def warmup_seconds(self) -> float:
        seconds = float(self.profile.data["schedule"]["warmup_s"])
        if seconds > 0 and self.fresh_emulator:
            seconds = max(seconds, _FIRST_WARMUP_S)  # a fresh JVM emulator: see _warm_up
        return seconds

    def _warm_up(self, ctx: CellContext) -> None:
        """Unmeasured operations at about the starting rate before the measured phase.

        The first cell on each emulator warms up until the store has settled: a JVM
        emulator keeps JIT-compiling well after its first requests, so whichever cell ran
        first looked several times slower than the rest (a key strategy blamed for the
        emulator's warm-up). After the profile's ``warmup`` (at least ``_FIRST_WARMUP_S``
        on an emulator this run started) it runs in windows of ``_SETTLE_WINDOW_S`` until a
        window's median latency is within ``_SETTLED_RATIO`` of the previous one, up to
        ``_MAX_WARMUP_S`` in all; the time used goes into the summary (``warmup_s``).
        """
        seconds = self.warmup_seconds()
        if seconds <= 0:
            return
        settle = self.first_on_emulator
        self.status.phase(self.cell, f"warming up {seconds:g}s" + (" + until settled" if settle else ""))
        started = time.perf_counter()
        try:
            if self.stop.event.wait(timeout=seconds):
                raise Interrupted(self.stop.reason or "interrupted")
            previous: float | None = None
            while settle and time.perf_counter() - started < _MAX_WARMUP_S:
                ctx.warmup_latencies.clear()
                if self.stop.event.wait(timeout=_SETTLE_WINDOW_S):
                    raise Interrupted(self.stop.reason or "interrupted")
                window = sorted(ctx.warmup_latencies)
                if not window:
                    break  # nothing succeeds: the measured phase will show why
                median = window[len(window) // 2]
                if previous is not None and median <= previous * _SETTLED_RATIO:
                    break
                previous = median
        finally:
            ctx.warmup_interval = None
            self.warmup_used_s = round(time.perf_counter() - started, 1)

    def _probe(self, name: str) -> dict[str, Any]:
        """A scenario probe (consistency, contention, …) instead of the Locust phase."""
        from keyramp.scenarios import run_probe

        self.status.phase(self.cell, f"probe {name}")
        started = time.perf_counter()
        data = self.profile.data
        result = run_probe(
            name, backend_class=self.backend_class, target=self.target, params=data["workload"]["probe_params"],
            budget_s=self.cell.duration_s, seed=int(data["seed"]),
            consistency=float(data["emulator"]["consistency"]),
        )
        if self.stop.event.is_set():
            raise Interrupted(self.stop.reason or "interrupted")
        self.recorder.begin(started)
        self.recorder.tick(time.perf_counter(), target_ops_per_s=None)
        summary = self._summary(users=0, duration=time.perf_counter() - started)
        summary["probe"] = result
        return summary

    def _tick_until_end(self, ctx: CellContext, start: float) -> str | None:
        checks = SecondCheck(cloud=self.cloud, emulator_died=self.emulator_died)
        for now, rows in tick_phase(ctx, self.recorder, start=start, duration_s=self.cell.duration_s,
                                    stop=self.stop.event):
            self.status.second(self.cell, rows[-1], now - start)
            reason = checks.check(rows[-1])
            if reason is not None:
                return f"{self.cell.id}: {reason}"
        return (self.stop.reason or "interrupted") if self.stop.event.is_set() else None

    def _final_tick(self, ctx: CellContext, start: float) -> None:
        pacer = ctx.pacer
        now = time.perf_counter()
        target = pacer.target_rate(max(0.0, now - 1.0 - start)) if pacer else None
        self.recorder.tick(now, target_ops_per_s=target, dropped=dropped_since(pacer, self.recorder))

    def _write_locust_csv(self, env: Environment, base: str, writer: StatsCSVFileWriter) -> None:
        """Final Locust CSVs (the periodic writer was stopped mid-interval)."""
        import csv

        final = StatsCSV(env, PERCENTILES_TO_REPORT)
        writer.close_files()
        for suffix, method in (("_stats.csv", final.requests_csv), ("_failures.csv", final.failures_csv),
                               ("_exceptions.csv", final.exceptions_csv)):
            with open(base + suffix, "w", newline="") as fh:
                method(csv.writer(fh))

    def _summary(self, *, users: int, duration: float) -> dict[str, Any]:
        cell = self.cell
        return {
            "backend": cell.backend,
            "strategy": cell.strategy,
            "schedule": cell.schedule.name,
            "schedule_description": cell.schedule.describe(),
            "distribution": self.workload.distribution,
            "duration_s": round(duration, 3),
            "time_scale": cell.time_scale,
            "users": users,
            "warmup_s": self.warmup_used_s,
            "namespace": self.target.namespace,
            **self.recorder.summary(duration_s=duration),
        }


def _analyse(run: RunDirectory, profile: Profile, cell: Cell, summary: dict[str, Any], keys_start: int | None,
             warnings: list[str]) -> None:
    """Add key-space metrics and threshold verdicts to a cell summary; never fails the run."""
    from keyramp.profile._thresholds import evaluate

    try:
        if keys_start is not None:  # None: a probe cell, no measured phase, no key samples
            from keyramp.keyspace import summarize_run_cell

            # Hotspot metrics + the modelled tablet summary from the cell's sampled keys.
            keyspace = summarize_run_cell(run_dir=run.path, cell=cell, profile=profile.data,
                                          total_count=int(summary["total"]["count"]), keys_start=keys_start)
            if keyspace is not None:
                summary["keyspace"] = keyspace
    except Exception as exc:  # analysis is best effort: the measurements are already on disk
        warnings.append(f"{cell.id}: key-space analysis failed: {exc.__class__.__name__}: {exc}")
    summary["thresholds"] = [r.to_dict() for r in evaluate(profile.thresholds, summary)]


def run_profile(profile: Profile, options: RunOptions, *, console: Console | None = None) -> RunOutcome:
    """Run every cell of ``profile``; always leaves a run directory with manifest + summary."""
    console = console or Console(stderr=True, quiet=options.quiet)
    from keyramp.profile._lint import lint_profile

    findings = lint_profile(profile.data)
    lint_rows = [f.to_dict() for f in findings]
    blocking = [f for f in findings if f.severity == "error" or (options.strict and f.severity == "warning")]
    for f in findings:
        console.print(f"[yellow]lint[/yellow] {f.severity} {f.rule}: {f.message}")
    if options.strict and blocking:
        raise RunFailed(f"{profile.name}: {len(blocking)} lint finding(s) block the run under --strict")

    cloud = None
    if profile.data["target"] == "cloud" or options.allow_cloud is not None:
        from keyramp.targets._cloud import CloudSession

        # Every refusal (opt-in, emulator variables, caps) before a run directory exists.
        cloud = CloudSession(profile, allow_cloud=options.allow_cloud, **options.cloud_caps)
    run = RunDirectory(options.out, slug(profile.name))
    cells_meta = [c.manifest_entry() for c in profile.cells]
    manifest = base_manifest(run_id=run.run_id, profile=profile, cells=cells_meta)
    manifest["lint"] = lint_rows
    manifest["workers"] = options.master.expect if options.master is not None else 1
    if options.master is not None:
        manifest["master"] = options.master.describe()
    run.write_manifest(manifest)
    summary: dict[str, Any] = {
        "schema": 1, "run_id": run.run_id, "profile_name": profile.name, "status": "running", "reason": None,
        "cells": {}, "thresholds_passed": True, "warnings": [],
    }
    stop = _StopFlag()
    stop.install()
    status = LiveStatus(console, total_cells=len(profile.cells), enabled=not options.quiet)
    emulators: _Emulators | None = None
    state, reason = "complete", None
    try:
        with run, status:
            try:
                if cloud is not None:
                    cloud.start(lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True),
                                namespaces={c.id: cell_namespace(c, run.run_id[-4:]) for c in profile.cells})
                    manifest["cloud"] = {"project": profile.data["project"], "credentials": cloud.credentials,
                                         "max_ops_per_s": cloud.plan.caps.max_ops_per_s,
                                         "max_duration_s": cloud.plan.caps.max_duration_s}
                else:
                    emulators = _Emulators(profile, options, console)
                warmed: set[str] = set()
                for cell, meta in zip(profile.cells, cells_meta):
                    if stop.event.is_set():  # a signal between cells: do not start another one
                        raise Interrupted(stop.reason or "interrupted")
                    kind = EMULATOR_FOR[cell.backend]
                    endpoint: str | None = None
                    if emulators is not None:
                        endpoint = emulators.endpoints[kind]
                        died = emulators.died(kind)
                        if died is not None:
                            raise RunFailed(f"{cell.id}: {died}")
                        status.phase(cell, "resetting store")
                        reset(kind, endpoint, project=profile.data["project"])
                    meta["endpoint"] = endpoint or "cloud"
                    cell_run = _CellRun(cell=cell, profile=profile, run=run, endpoint=endpoint, options=options,
                                        stop=stop, status=status, cloud=cloud,
                                        first_on_emulator=emulators is not None and kind not in warmed,
                                        fresh_emulator=emulators is not None and kind in emulators.started
                                        and kind not in warmed,
                                        emulator_died=(lambda kind=kind: emulators.died(kind))  # type: ignore[union-attr]
                                        if emulators is not None else (lambda: None))
                    warmed.add(kind)
                    meta["namespace"] = cell_run.target.namespace
                    try:
                        try:
                            cell_summary = cell_run.execute()
                        except BaseException:
                            if cloud is not None:  # clean up, but keep the cell's own error
                                meta["cleanup"] = cloud.after_cell(cell_run.backend_class, cell_run.target,
                                                                   strict=False)
                            raise
                        finally:
                            if cell_run.worker_meta is not None:
                                meta["workers"] = cell_run.worker_meta
                                manifest["workers"] = len(cell_run.worker_meta)
                        if cloud is not None:  # RunFailed if the delete is not verified
                            meta["cleanup"] = cloud.after_cell(cell_run.backend_class, cell_run.target)
                    except (RunFailed, Interrupted):
                        partial = getattr(cell_run, "partial", None)
                        if partial is not None:
                            partial["incomplete"] = True
                            summary["cells"][cell.id] = partial
                        raise
                    _analyse(run, profile, cell, cell_summary, cell_run.keys_start, summary["warnings"])
                    summary["cells"][cell.id] = cell_summary
                    run.write_summary(summary)
                    status.cell_done(cell, cell_summary)
            except Interrupted as exc:
                state, reason = "interrupted", str(exc)
            except KeyboardInterrupt:
                state, reason = "interrupted", "SIGINT received"
            except UsageError as exc:
                state, reason = "failed", str(exc)
                raise
            except KeyrampError as exc:
                state, reason = "failed", str(exc)
            except Exception as exc:
                state, reason = "failed", f"{exc.__class__.__name__}: {exc}"
    finally:
        stop.uninstall()
        if emulators is not None:
            try:
                emulators.stop_started()
            except Exception as exc:  # never mask the run's own outcome
                summary["warnings"].append(f"stopping emulators failed: {exc}")
        if reason is not None:  # client errors can span lines (gRPC debug strings): keep the reason one line
            reason = " ".join(reason.split())
        passed = all(t["passed"] for c in summary["cells"].values() for t in c.get("thresholds", []))
        summary.update(status=state, reason=reason, thresholds_passed=passed)
        manifest.update(status=state, reason=reason, ended_at=utc_now(), cells=cells_meta)
        run.write_summary(summary)
        run.write_manifest(manifest)
    table = render_table(summary)
    run.write_text("report.txt", table)
    return RunOutcome(run_id=run.run_id, path=run.path, status=state, reason=reason, summary=summary,
                      thresholds_passed=summary["thresholds_passed"])
