"""``keyramp.run_profiles``: everything ``keyramp run`` does, as one library call.

For each profile in turn: lint, the target's checks (all before anything starts), the run
(``_runner.run_profile``), here or on the workers of a Locust master; around them the live
metrics exporter, and after them the scenario report of the profiles that cite rules. The CLI
(``keyramp.cli._run``) only parses flags, calls this and prints.

The metrics exporter and the scenario report live in layers above ``run`` (they read what a run
records), so the caller hands them in: ``keyramp.metrics.MetricsExporter`` and a function over
``keyramp.scenarios.report_for_runs`` (see ``run_profiles``).
"""

from __future__ import annotations

import locust  # noqa: F401  (monkey-patches the standard library before anything imports ssl)

# isort: split
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TextIO

from keyramp.core import EXIT_INTERRUPTED, UsageError
from keyramp.forecast import load_prices
from keyramp.profile import Profile, collect_profiles
from keyramp.results import RunObserver, RunSummary
from keyramp.run._master import Master, MasterOptions
from keyramp.run._report import Console
from keyramp.run._runner import RunOptions, RunOutcome, run_profile
from keyramp.targets import BudgetCosts, TargetOptions, preflight, print_budgets

__all__ = ["LiveService", "RunsOutcome", "budget_costs", "budget_profiles", "run_profiles"]


class LiveService(Protocol):
    """Served while the runs last (``keyramp.metrics.MetricsExporter``): started after every check,
    before the first profile; closed after the last one, also after a failure or Ctrl-C."""

    def start(self, *, say: Callable[[str], None]) -> RunObserver:
        """Bind (a refusal is a ``UsageError``, before any load) and return the observer that feeds it."""
        ...

    def close(self, *, say: Callable[[str], None]) -> None: ...


@dataclass(frozen=True, kw_only=True)
class RunsOutcome:
    """What ``run_profiles`` did: one ``RunOutcome`` per profile that ran (an interrupt stops the
    sequence), and the scenario report's directory when a profile cited rules."""

    runs: tuple[RunOutcome, ...]
    #: Holds report.html, report.md and report.json.
    scenario_report: Path | None = None

    @property
    def exit_code(self) -> int:
        """``keyramp run``'s: 130 interrupted, 1 a run failed or missed a threshold, else 0."""
        return max((run.exit_code for run in self.runs), default=0)

    def to_json(self) -> dict[str, Any]:
        """The document ``keyramp run --json`` prints."""
        return {"runs": [{"run_id": o.run_id, "path": str(o.path), "status": o.status, "reason": o.reason,
                          "exit_code": o.exit_code, "summary": o.summary.to_json()} for o in self.runs],
                "scenario_report": str(self.scenario_report / "report.html") if self.scenario_report else None}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RunsOutcome:
        summaries = [RunSummary.from_json(r["summary"], where="summary") for r in doc["runs"]]
        runs = tuple(RunOutcome(run_id=r["run_id"], path=Path(r["path"]), status=r["status"], reason=r["reason"],
                                summary=s, thresholds_passed=s.thresholds_passed is not False)
                     for r, s in zip(doc["runs"], summaries, strict=True))
        report = doc.get("scenario_report")
        return cls(runs=runs, scenario_report=Path(report).parent if report else None)


def _profiles(profiles: Sequence[Profile | str | Path], duration_s: float | None) -> list[Profile]:
    """Profile objects as given; paths (files, or directories of ``*.toml``) loaded, with ``duration_s``."""
    loaded: list[Profile] = []
    for item in profiles:
        if isinstance(item, Profile):
            if duration_s is not None:
                raise UsageError(f"duration_s: applies to profile files; {item.name} is already a Profile")
            loaded.append(item)
        else:
            overrides = {"duration": duration_s} if duration_s is not None else {}
            loaded.extend(collect_profiles([str(item)], overrides=overrides))
    if not loaded:
        raise UsageError("no profile given")
    return loaded


def budget_costs(profiles: Sequence[Profile], *, prices: Path | None = None,
                 location: str | None = None) -> BudgetCosts | None:
    """What prices a cloud budget (None without a cloud profile); a bad ``prices`` file is a UsageError."""
    if not any(p.target == "cloud" for p in profiles):
        for flag, given in (("--prices", prices), ("--location", location)):
            if given is not None:
                raise UsageError(f"{flag}: applies to target = 'cloud' profiles, and none is given")
        return None
    from keyramp.forecast import budget_costs as costs_for  # deferred: start-up cost (cloud profiles only)

    return costs_for(load_prices(prices), location=location)


def budget_profiles(profiles: Sequence[Profile], *, target: TargetOptions, out: TextIO) -> int:
    """``keyramp run --plan``: each profile's plan (and its cost) on ``out``, then every offline check;
    no network call. A refusal raises ``UsageError`` after the plans were printed."""
    return print_budgets(profiles, allow_cloud=target.allow_cloud, out=out, costs=target.budget_costs,
                         **target.cloud_caps)


def run_profiles(
    profiles: Sequence[Profile | str | Path],
    *,
    out: Path = Path("results"),
    duration_s: float | None = None,
    strict: bool = False,
    quiet: bool = False,
    timeout_s: float = 10.0,
    target: TargetOptions | None = None,
    master: MasterOptions | None = None,
    metrics: LiveService | None = None,
    scenario_report: Callable[[Sequence[Path]], Path] | None = None,
    observers: Sequence[RunObserver] = (),
    console: Console | None = None,
    on_run: Callable[[RunOutcome], None] | None = None,
) -> RunsOutcome:
    """Run every profile (``Profile`` objects, or profile files and directories of ``*.toml``) into
    ``out``, one run directory each, as ``keyramp run`` does.

    ``duration_s`` overrides the duration per cell of profiles given as paths; ``target`` carries
    the cloud opt-in, caps and plan costs; ``master``: cells run on Locust workers (local ones with
    ``MasterOptions(local_workers=N)``); ``metrics``: a live exporter, e.g.
    ``keyramp.metrics.MetricsExporter("127.0.0.1:9464")``; ``scenario_report``: builds the report
    from the runs of profiles that cite ``rules``, e.g. ``lambda runs:
    keyramp.scenarios.report_for_runs(runs, out=keyramp.scenarios.default_report_dir(out))``.
    ``console`` (default stderr) gets lint, progress and notes; ``on_run`` is called with each
    outcome as it finishes. Every refusal (bad profile, cloud opt-in, a taken port) raises
    ``UsageError`` before any load; a run that fails is an outcome, not an exception.
    """
    target = target or TargetOptions()
    loaded = _profiles(profiles, duration_s)
    for profile in loaded:  # refuse a confused or unsafe request before anything starts
        preflight(profile, allow_cloud=target.allow_cloud, **target.cloud_caps)
    shown = console or Console(stderr=True)

    def say(line: str) -> None:
        shown.print(f"[dim]{line}[/dim]", highlight=False)

    watchers = list(observers)
    if metrics is not None:
        watchers.append(metrics.start(say=say))
    try:
        runs = _run_all(loaded, options=RunOptions(out=out, strict=strict, quiet=quiet, timeout_s=timeout_s,
                                                   observers=watchers, target=target),
                        master=master, console=shown, on_run=on_run)
    finally:
        if metrics is not None:  # after the last cell: let Prometheus scrape its final values
            metrics.close(say=say)
    cited = [o.path for o, p in zip(runs, loaded, strict=False) if p.rules]
    report = scenario_report(cited) if cited and scenario_report is not None else None  # also after Ctrl-C
    return RunsOutcome(runs=tuple(runs), scenario_report=report)


def _run_all(profiles: Sequence[Profile], *, options: RunOptions, master: MasterOptions | None, console: Console,
             on_run: Callable[[RunOutcome], None] | None) -> list[RunOutcome]:
    """Each profile in turn, on one master if any; stops after an interrupted run."""
    live = Master(master) if master is not None else None
    try:
        if live is not None and master is not None and master.local_workers == 0 and not options.quiet:
            console.print(f"[dim]keyramp master listening on {master.bind_host}:{live.port}[/dim]")
        runs: list[RunOutcome] = []
        for profile in profiles:
            outcome = run_profile(profile, replace(options, master=live), console=console)
            runs.append(outcome)
            if on_run is not None:
                on_run(outcome)
            if outcome.exit_code == EXIT_INTERRUPTED:
                break
        return runs
    finally:
        if live is not None:
            live.close()
