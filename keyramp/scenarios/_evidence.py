"""Evidence rows of scenario runs: one per rule × cell, with the numbers its charts compare.

Evidence comes from each cell's ``probe`` (measured on the emulator; what each probe's result
shows is ``_probe_evidence``) or ``keyspace`` (hotspot metrics measured from the key stream + a
modelled tablet store).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keyramp.core import UsageError, fmt
from keyramp.forecast import forecast_line, forecast_short, keys_note
from keyramp.keys import ANTI_PATTERN, BEST_PRACTICE, KEY_RULES, rule_role, rule_strategies, strategy_of
from keyramp.keyspace import keyspace_headline
from keyramp.results import (
    CellForecast,
    CellSummary,
    KeyspaceFigures,
    Latency,
    OpStats,
    Run,
    RunManifest,
    RunSummary,
    generator_limited,
    limit_text,
    limit_word,
    load_run,
)
from keyramp.run import plan_line
from keyramp.scenarios._probe_evidence import ChartValue, chart_bars, probe_evidence

__all__ = [
    "Evidence",
    "RunInfo",
    "by_rule",
    "cell_role",
    "collect",
    "evidence_for",
    "load_runs",
    "role_of",
]

_ANTI, _BEST = ANTI_PATTERN, BEST_PRACTICE


def cell_role(strategy: str, rule: str) -> str | None:
    """The role a cell's key strategy plays under a key rule (``keys.rule_role``: what the strategy
    declares once), or None: it says nothing about that rule. A profile that cites several rules (the
    quickstart: BP-KEY-1 and BP-KEY-3) shows each cell under the rules it speaks to, in the role it
    plays there, instead of every cell under every rule."""
    made = strategy_of(strategy)
    return None if made is None else rule_role(made, rule)


@dataclass(frozen=True, kw_only=True)
class Evidence:
    rule: str
    profile: str
    cell: str
    #: "measured" | "modelled" | "not observable" | "unsupported" | "not applicable", or the cell's limit word
    #: (``results._generator.LIMIT_WORDS``: "generator-limited", "machine-limited")
    kind: str
    text: str
    #: Numbers the verdict compares across a pair (e.g. aborts of one key vs many).
    values: Mapping[str, Any]
    backend: str = ""
    #: The profile's role in its pair, from its description: anti-pattern | best practice | reference | "".
    role: str = ""
    probe: str | None = None
    bars: tuple[ChartValue, ...] = ()
    run: Path | None = None
    #: Scheduled vs achieved ops/s per wall second (Locust cells): ``[(t, target, achieved)]``.
    timeline: tuple[tuple[float, float | None, float], ...] = ()

    @property
    def label(self) -> str:
        return f"{self.profile} · {self.backend}" if self.backend else self.profile


@dataclass(frozen=True, kw_only=True)
class RunInfo:
    """A run's line in the report."""

    path: Path
    profile: str
    status: str
    reason: str | None
    rules: tuple[str, ...] = ()
    cells: int = 0
    #: Sum of the cells' measured durations (probe cells: how long the probe ran).
    seconds: float = 0.0
    #: One modelled plan line per cell that holds a plan (``run._report_plan``).
    plans: tuple[str, ...] = ()
    #: A store model stood in front of the emulators (docs/fidelity.md): what its errors are.
    target: str | None = None

    @classmethod
    def from_run(cls, run: Run) -> RunInfo:
        manifest, summary = run.manifest or RunManifest(), run.summary
        settings = manifest.settings  # the resolved profile, typed
        cells = run.cells
        return cls(path=run.path, profile=run.profile_name or (settings.name if settings is not None else "?"),
                   status=run.status, reason=(summary.reason if summary else None) or manifest.reason,
                   rules=settings.rules if settings is not None else (), cells=len(cells),
                   seconds=round(sum(float(c.duration_s or 0) for c in cells.values()), 1),
                   plans=tuple(plan_line(c.plan) for c in cells.values() if c.plan is not None),
                   target=summary.target.describe() if summary is not None and summary.target is not None else None)


def role_of(description: str) -> str:
    text = description.strip().lower()
    for role in ("anti-pattern", "best practice", "reference"):
        if text.startswith(role):
            return role
    return ""


def _keyspace_evidence(ks: KeyspaceFigures, forecast: CellForecast | None = None, *, strategy: str = "",
                       ) -> tuple[str, str, dict[str, Any], list[ChartValue]]:
    """A Locust cell's key-space evidence: the measured pattern, and the launch forecast as the one model.

    The tablet model at the test's own rate (``keyspace.model``) is not cited: at emulator
    rates it throttles nothing, and a second model next to the launch forecast read as two
    answers to one question. Its figure stays in the values (``throttled``), labelled so.
    """
    model = ks.model
    hot1 = ks.hottest_1pct_share
    headline = keyspace_headline(ks)
    text = f"key space (measured): {headline}; the busiest 1 % of the range takes {fmt.percent(hot1 or 0)} of accesses"
    bars = chart_bars("hottest 1 % of the key range (% of accesses, measured key stream)", " %",
                 share=None if hot1 is None else 100.0 * hot1)
    values = {"hot1": hot1, "headline": headline, "strategy": strategy, "moving": bool(ks.moving_hotspot),
              "append": ks.append_fraction,
              "throttled": model.max_throttled_fraction if model else None,  # at this test's rate only
              "test_rate_ops_per_s": model.offered_ops_per_s if model else None}
    if forecast is not None and forecast.verdict:
        mid = forecast.throttled_fraction.mid if forecast.throttled_fraction is not None else None
        note = keys_note(forecast)
        text += f"; {forecast_line(forecast)}" + (f" ({note})" if note else "")
        values.update(forecast=forecast_short(forecast, deciding=False), forecast_verdict=forecast.verdict,
                      forecast_mid=mid, launch=forecast.launch.description if forecast.launch is not None else None)
        bars += chart_bars("launch operations throttled (%, modelled forecast, mid of the band)", " %",
                      forecast=None if mid is None else 100.0 * mid)
    return "modelled", text, values, bars


def _timeline(cell: CellSummary) -> tuple[tuple[float, float | None, float], ...]:
    return tuple((float(p.t), None if p.target is None else float(p.target), float(p.achieved or 0.0))
                 for p in cell.target_ops_per_s)


def _generated(cell: CellSummary) -> str:
    """What limited a generator-limited cell, and how much of its schedule it still generated
    (achieved ÷ target over its timeline): all of it means the key stream is complete and only
    its latency is the generator's."""
    why = limit_text(cell)
    points = [p for p in cell.target_ops_per_s if p.target]
    target = sum(float(p.target or 0.0) for p in points)
    achieved = sum(float(p.achieved or 0.0) for p in points)
    if target <= 0:
        return f"{why}; the share of the schedule it generated is not recorded"
    share = achieved / target
    if share >= 0.995:
        return (f"{why}; it still generated the scheduled operations ({fmt.percent(share)}), so the key "
                "stream the model read is complete: only the cell's latency is the generator's")
    return (f"{why}; it generated {fmt.percent(share)} of the scheduled operations, so the model read "
            f"{fmt.percent(share)} of the planned key stream")


def evidence_for(manifest: RunManifest, summary: RunSummary, *, run: Path | None = None) -> list[Evidence]:
    """Evidence rows of one run: one per rule × cell."""
    settings = manifest.settings  # the resolved profile, typed
    rules = list(settings.rules) if settings is not None else []
    name = str(manifest.profile_name or (settings.name if settings is not None else "?"))
    role = role_of(settings.description if settings is not None else "")
    rows: list[Evidence] = []
    for cell_id, cell in summary.cells.items():
        probe_name = None
        timeline: tuple[tuple[float, float | None, float], ...] = ()
        limited = cell.probe is None and cell.total is not None and generator_limited(cell)
        if cell.probe is not None:
            probe_name = cell.probe.name
            kind, text, values, bars = probe_evidence(cell.probe)
        elif cell.keyspace is not None and cell.keyspace.to_json():
            kind, text, values, bars = _keyspace_evidence(cell.keyspace, cell.forecast,
                                                          strategy=cell.strategy or "")
            if limited:  # the model saw only the load that was generated
                text += f" ({_generated(cell)})"
            timeline = _timeline(cell)
        elif limited:
            # Never cite this cell's latency: it is the load generator's own queue.
            kind, text, values, bars = limit_word(cell) or "", (
                f"{limit_text(cell)}; its latency is not the store's and is not cited"), {}, []
            timeline = _timeline(cell)
        else:
            total = cell.total or OpStats(count=0)
            lat = total.latency_ms or Latency()
            rate = total.ops_per_s if total.ops_per_s is not None else 0
            kind, text, values = "measured", (f"{rate} ops/s, p99 {lat.p99} ms, "
                                              f"error rate {fmt.percent(total.error_rate)}"), {}
            bars = chart_bars("latency (ms)", " ms", p50=lat.p50, p99=lat.p99)
            timeline = _timeline(cell)
        if cell.incomplete:
            text += " (cell incomplete: the run stopped during it)"
        strategy = cell.strategy
        for rule in rules:
            this_role = role
            if rule in KEY_RULES and probe_name is None and isinstance(strategy, str):
                this_role = cell_role(strategy, rule) or ""
                if not this_role:
                    continue  # this cell's key strategy says nothing about this rule
            rows.append(Evidence(rule=rule, profile=name, cell=cell_id, kind=kind, text=text, values=values,
                                 backend=cell.backend or "", role=this_role, probe=probe_name,
                                 bars=tuple(bars), run=run, timeline=timeline))
    for rule in rules:  # a cited rule none of the cells speaks to is said so, not dropped silently
        if rule in KEY_RULES and summary.cells and not any(r.rule == rule for r in rows):
            compared = rule_strategies(rule)
            sides = "; ".join(f"{side}: {', '.join(s for s, r in compared.items() if r == side)}"
                              for side in (_ANTI, _BEST))
            rows.append(Evidence(rule=rule, profile=name, cell="-", kind="not applicable", values={}, run=run,
                                 text=f"none of the run's key strategies is one {rule} compares ({sides})"))
    return rows


def load_runs(run_dirs: Sequence[Path]) -> list[Run]:
    """The runs as the catalog reads them; one without a readable manifest and summary is a ``UsageError``."""
    out = []
    for path in run_dirs:
        run = load_run(Path(path))
        for doc, error, label in ((run.manifest, run.manifest_error, "manifest.json"),
                                  (run.summary, run.summary_error, "summary.json")):
            if doc is None and error is None:  # not read at all (a misshapen one has its error)
                # load_run drops "summary.json missing" for a running run: that is still no summary here
                problem = next((w for w in run.warnings if w.startswith(label)), f"{label} missing")
                if problem == f"{label} missing":
                    raise UsageError(f"{path}: not a run directory ({problem})")
                raise UsageError(f"{path}: unreadable run file: {problem}")
        error = run.manifest_error or run.summary_error  # a file without the model's shape: the field
        if error is not None:
            raise UsageError(f"{path}: unreadable run file: {error}")
        out.append(run)
    return out


def _rule_order(rule: str) -> tuple[str, int]:
    """Sort key of rule ids: BP-KEY-2 before BP-KEY-10."""
    head, _, num = rule.rpartition("-")
    return (head, int(num) if num.isdigit() else 0)


def by_rule(runs: Sequence[Run]) -> dict[str, list[Evidence]]:
    """Evidence of loaded runs grouped by rule id, in rule order."""
    grouped: dict[str, list[Evidence]] = {}
    for run in runs:
        manifest, summary = run.manifest, run.summary
        if manifest is None or summary is None:
            continue  # load_runs refuses such a run
        for row in evidence_for(manifest, summary, run=run.path):
            grouped.setdefault(row.rule, []).append(row)
    return {rule: grouped[rule] for rule in sorted(grouped, key=_rule_order)}


def collect(run_dirs: Sequence[Path]) -> dict[str, list[Evidence]]:
    """Evidence of every run grouped by rule id (in rule order)."""
    return by_rule(load_runs(run_dirs))
