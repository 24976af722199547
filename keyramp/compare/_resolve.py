"""Resolve the runs and the baseline of a comparison (run ids, directories, baseline names), then compare.

Exit codes of ``keyramp compare``: 0 pass, 1 a regression or failed threshold, 2 bad input (unknown
run, unusable baseline, bad threshold, a run compared with itself), 3 a gated metric inconclusive
(``--inconclusive`` decides). Corrupt runs among several are skipped with a warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from keyramp.compare._model import CompareOptions, Comparison, build_comparison, run_operations
from keyramp.compare._warnings import CompareWarning
from keyramp.core import OP_NAMES, UsageError
from keyramp.profile import parse_expression
from keyramp.results import Run, resolve_baseline, resolve_run

__all__ = ["run_compare"]


def run_compare(specs: list[str], *, results: Path, baseline_spec: str | None = None,
                baseline_set: Sequence[str] = (), thresholds: Sequence[str] = (),
                options: CompareOptions | None = None, on_inconclusive: str = "3") -> Comparison:
    """Resolve runs and baseline, then compare. UsageError for unknown runs or an unusable baseline.

    The baseline: ``baseline_spec`` (a run, or a name of one run or a set), else the runs of
    ``baseline_set``, else the first of ``specs``.
    """
    skipped: list[CompareWarning] = []
    resolved: list[Run] = [resolve_run(spec, results) for spec in specs]
    baseline: list[Run] = []
    if baseline_spec is not None:
        baseline = resolve_baseline(baseline_spec, results)
    elif baseline_set:
        baseline = [resolve_run(spec, results) for spec in baseline_set]
    elif len(resolved) > 1:
        baseline = resolved[:1]
        if not baseline[0].ok:
            raise UsageError(f"baseline {baseline[0].run_id} (the first RUN) is not usable: "
                             f"{baseline[0].unusable_reason}")
    for run in baseline:
        if not run.ok:
            raise UsageError(f"baseline {run.run_id} is not usable: {run.unusable_reason}")
    # A Python workload's operations are its method names: a threshold may name those too.
    named = {op for run in [*resolved, *baseline] for op in run_operations(run)}
    checks = [parse_expression(t, operations={*OP_NAMES, *named}) for t in thresholds]
    in_base = {run.run_id for run in baseline}
    runs: list[Run] = []
    for run in resolved:
        if run.run_id in in_base:
            continue
        if not run.ok:
            skipped.append(CompareWarning(kind="skipped", run_id=run.run_id, text=f"not usable: {run.unusable_reason}"))
            continue
        if run.run_id not in {r.run_id for r in runs}:
            runs.append(run)
    if not runs and not baseline:
        raise UsageError("no usable run to compare: " + "; ".join(w.line() for w in skipped) + ".")
    if not runs and baseline and len(resolved) > (1 if baseline_spec is None and not baseline_set else 0):
        if not skipped:  # every RUN is the baseline itself
            raise UsageError(f"{resolved[-1].run_id} is the baseline itself: name another run to compare with "
                             "it (a run compared with itself says nothing).")
        raise UsageError("no usable run to compare with the baseline: " + "; ".join(w.line() for w in skipped) + ".")
    cmp = build_comparison(runs, baseline=baseline or None, thresholds=checks, options=options,
                           on_inconclusive=on_inconclusive)
    cmp.alerts[:0] = skipped
    return cmp
