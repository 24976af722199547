"""``keyramp scenarios report RUN...``: the scenario report (``keyramp.scenarios``) of finished runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("scenarios", help="best-practice scenario tools")
    sub = parser.add_subparsers(dest="scenarios_command", required=True)
    report = sub.add_parser("report", help="per-rule verdicts with evidence and charts from scenario runs")
    report.add_argument("runs", nargs="+", metavar="RUN", help="run directories (or a results dir holding runs)")
    report.add_argument("--out", default=None, help="report directory (default results/reports/scenarios-<stamp>)")
    report.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from keyramp.scenarios import expand_runs, report_for_runs  # deferred: start-up cost (numpy, pyarrow)

    out = report_for_runs(expand_runs(args.runs), out=Path(args.out) if args.out else None)
    print(f"report: {out / 'report.html'} (also report.md, report.json)")
    return 0
