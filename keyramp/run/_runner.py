"""``keyramp run``: profile → target → cells (Locust, here or on workers) → analysis → run directory.

One run: lint, open the target (``keyramp.targets``: emulators, or the cloud behind its
opt-in), write the manifest, then each cell in turn (``_cell.CellRun``: set-up and the
phases of ``_phases``), its analysis (``_analysis``) and the summary — always leaving a run
directory with manifest and summary, also after a failure or Ctrl-C.
"""

from __future__ import annotations

import locust  # noqa: F401  (monkey-patches the standard library before anything imports ssl)

# isort: split
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from keyramp.core import KeyrampError, RunFailed, UsageError, fmt
from keyramp.profile import Profile, cell_namespace, group_findings, lint_profile, slug
from keyramp.results import (
    LiveFile,
    Observers,
    RunDirectory,
    RunObserver,
    RunSummary,
    TargetModel,
    base_manifest,
    utc_now,
)
from keyramp.run._analysis import CellAnalysis, analyse_cell
from keyramp.run._cell import CellRun
from keyramp.run._exceptions import WorkloadFailed
from keyramp.run._gevent import ensure_gevent_grpc
from keyramp.run._phases import Interrupted, StopFlag
from keyramp.run._report import Console, LiveStatus, render_table
from keyramp.targets import RunTarget, TargetOptions, open_target

if TYPE_CHECKING:
    from keyramp.run._master import Master

__all__ = ["Interrupted", "RunOptions", "RunOutcome", "run_profile"]


@dataclass(kw_only=True)
class RunOptions:
    out: Path = Path("results")
    strict: bool = False
    quiet: bool = False
    #: Per-operation deadline in seconds.
    timeout_s: float = 10.0
    #: Where the load goes, as the command line says (cloud opt-in, caps, emulator endpoints).
    target: TargetOptions = field(default_factory=TargetOptions)
    #: A Locust master (``_master.Master``): cells run on its workers.
    master: Master | None = None
    #: Who watches the run besides the live status line (e.g. a metrics exporter).
    observers: Sequence[RunObserver] = ()
    #: Builds the target instead of ``targets.open_target`` (tests, embedding).
    make_target: Callable[[Profile], RunTarget] | None = None


@dataclass(kw_only=True)
class RunOutcome:
    run_id: str
    path: Path
    status: str
    reason: str | None
    summary: RunSummary
    thresholds_passed: bool = True

    @property
    def exit_code(self) -> int:
        if self.status == "interrupted":
            return Interrupted.exit_code
        if self.status != "complete" or not self.thresholds_passed:
            return 1
        return 0


def _lint(profile: Profile, options: RunOptions, console: Console) -> list[dict[str, Any]]:
    findings = lint_profile(profile)
    blocking = [f for f in findings if f.severity == "error" or (options.strict and f.severity == "warning")]
    for g in group_findings(findings):  # once per finding, not once per cell
        console.print(f"[yellow]lint[/yellow] {g.severity} {escape(g.line())}", highlight=False)
    if options.strict and blocking:
        raise RunFailed(f"{profile.name}: {fmt.plural(len(blocking), 'lint finding')} "
                        f"block{'s' if len(blocking) == 1 else ''} the run under --strict")
    return [f.to_dict() for f in findings]


def run_profile(profile: Profile, options: RunOptions, *, console: Console | None = None) -> RunOutcome:
    """Run every cell of ``profile``; always leaves a run directory with manifest + summary."""
    ensure_gevent_grpc()  # before the first channel
    console = console or Console(stderr=True, quiet=options.quiet)
    lint_rows = _lint(profile, options, console)
    # Every refusal (cloud opt-in, emulator variables, caps) before a run directory exists.
    target = options.make_target(profile) if options.make_target else open_target(profile, options.target)
    run = RunDirectory(options.out, slug(profile.name))
    cells_meta = [c.manifest_entry() for c in profile.cells]
    manifest = base_manifest(run_id=run.run_id, profile=profile, cells=cells_meta)
    manifest["lint"] = lint_rows
    manifest["workers"] = options.master.expect if options.master is not None else 1
    if options.master is not None:
        manifest["master"] = options.master.describe()
    run.write_manifest(manifest)
    summary = RunSummary(run_id=run.run_id, profile_name=profile.name, status="running", reason=None, cells={},
                         thresholds_passed=True, warnings=[])
    stop = StopFlag()
    stop.install()
    status = LiveStatus(console, total_cells=len(profile.cells), enabled=not options.quiet)
    # live.json: what the run is doing now, for `keyramp ui` (keyramp.results._live)
    observers = Observers([status, LiveFile(cells=len(profile.cells)), *options.observers])
    state, reason = "complete", None
    try:
        with run, status:
            try:
                observers.run_started(run_id=run.run_id, profile=profile, path=str(run.path))
                namespaces = {c.id: cell_namespace(c, run.run_id[-4:]) for c in profile.cells}
                manifest.update(target.open(
                    say=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True),
                    note=lambda line: None if options.quiet else console.print(f"[dim]{line}[/dim]"),
                    namespaces=namespaces))
                if "target" in manifest:  # a store model in front of the emulators: every view says so
                    summary.target = TargetModel.from_json(manifest["target"], where="target")
                    run.write_manifest(manifest)
                for cell, meta in zip(profile.cells, cells_meta, strict=True):
                    if stop.event.is_set():  # a signal between cells: do not start another one
                        raise stop.interrupted()
                    _run_cell(cell, meta, profile=profile, run=run, target=target, options=options, stop=stop,
                              observers=observers, summary=summary, manifest=manifest)
            except Interrupted as exc:
                state, reason = "interrupted", str(exc)
            except KeyboardInterrupt:
                state, reason = "interrupted", "SIGINT received"
            except UsageError as exc:
                state, reason = "failed", str(exc)
                raise
            except KeyrampError as exc:
                state, reason = "failed", str(exc)
            except Exception as exc:  # noqa: BLE001 - a crash is recorded as the run's outcome, the results kept
                state, reason = "failed", f"{exc.__class__.__name__}: {exc}"
    finally:
        stop.uninstall()
        try:
            target.close()
        except Exception as exc:  # noqa: BLE001 - never mask the run's own outcome
            summary.warnings.append(f"closing the target failed: {exc}")
        if reason is not None:  # client errors can span lines (gRPC debug strings): keep the reason one line
            reason = " ".join(reason.split())
        broken = [cid for cid, c in summary.cells.items() if c.reason == "workload error"]
        if state == "complete" and broken:
            state, reason = "failed", (f"workload error in {len(broken)} of {len(profile.cells)} cells "
                                       f"({', '.join(broken)}): every warm-up operation raised")
        summary.warnings.extend(observers.problems)
        summary.status, summary.reason = state, reason
        summary.thresholds_passed = all(t.passed for c in summary.cells.values() for t in c.thresholds)
        manifest.update(status=state, reason=reason, ended_at=utc_now(), cells=cells_meta)
        run.write_summary(summary)
        run.write_manifest(manifest)
        observers.run_finished(summary)
    table = render_table(summary)
    run.write_text("report.txt", table)
    return RunOutcome(run_id=run.run_id, path=run.path, status=state, reason=reason, summary=summary,
                      thresholds_passed=summary.thresholds_passed is not False)


def _run_cell(cell: Any, meta: dict[str, Any], *, profile: Profile, run: RunDirectory, target: RunTarget,
              options: RunOptions, stop: StopFlag, observers: Observers, summary: RunSummary,
              manifest: dict[str, Any]) -> None:
    cell_run = CellRun(cell=cell, profile=profile, run=run, target=target, timeout_s=options.timeout_s, stop=stop,
                       observers=observers, master=options.master)
    meta["endpoint"] = cell_run.address.endpoint or "cloud"
    meta["namespace"] = cell_run.address.namespace
    try:
        try:
            cell_summary = cell_run.execute()
        except BaseException:
            # Clean up (cloud), but keep the cell's own error.
            cleanup = target.after_cell(cell_run.backend_class, cell_run.address, failed=True)
            if cleanup is not None:
                meta["cleanup"] = cleanup
            raise
        finally:
            if cell_run.worker_meta is not None:
                meta["workers"] = cell_run.worker_meta
                manifest["workers"] = len(cell_run.worker_meta)
        cleanup = target.after_cell(cell_run.backend_class, cell_run.address, failed=False)  # may raise RunFailed
        if cleanup is not None:
            meta["cleanup"] = cleanup
    except WorkloadFailed as exc:  # stopped before its measured phase: the run goes on with the next cell
        failed = summary.cells[cell.id] = cell_run.failed_summary(exc)
        run.write_summary(summary)
        observers.cell_finished(cell, failed)
        return
    except (RunFailed, Interrupted):
        if cell_run.partial is not None:
            cell_run.partial.incomplete = True
            summary.cells[cell.id] = cell_run.partial
        raise
    run.end_cell()  # the cell's Parquet parts compacted into one file per kind
    analyse_cell(CellAnalysis(run_dir=run.path, profile=profile, cell=cell, summary=cell_summary,
                              measured=cell_run.measured), summary.warnings)
    summary.cells[cell.id] = cell_summary
    run.write_summary(summary)
    observers.cell_finished(cell, cell_summary)
