"""Render a ``Comparison`` as JUnit XML (the Ant/Jenkins shape) for CI test reports: a suite per
compared run, per forecast comparison, for new exception classes and per run's thresholds; a
testcase per compared metric, forecast cell, exception class and threshold."""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from keyramp.compare._model import Comparison
from keyramp.compare._present import ratio_text, value_text

__all__ = ["render_junit"]


class _Suites:
    """The ``testsuites`` root and its suites, numbered and stamped alike."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        self.host = socket.gethostname()
        self.root = ET.Element("testsuites", name="keyramp compare")
        self.suites: list[ET.Element] = []

    def suite(self, name: str) -> ET.Element:
        el = ET.SubElement(self.root, "testsuite", name=name, timestamp=self.now, hostname=self.host, time="0",
                           id=str(len(self.suites)), package="keyramp")
        ET.SubElement(el, "properties")
        self.suites.append(el)
        return el

    def xml(self) -> str:
        totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for el in self.suites:
            counts = {
                "tests": len(el.findall("testcase")),
                "failures": len(el.findall("testcase/failure")),
                "errors": 0,
                "skipped": len(el.findall("testcase/skipped")),
            }
            for key, value in counts.items():
                el.set(key, str(value))
                totals[key] += value
            ET.SubElement(el, "system-out").text = ""
            ET.SubElement(el, "system-err").text = ""
        # Jenkins' junit-10.xsd allows only name/time/tests/failures/errors on the root
        # (``skipped`` is per suite), and strict consumers reject unknown attributes.
        for key in ("tests", "failures", "errors"):
            self.root.set(key, str(totals[key]))
        self.root.set("time", "0")
        ET.indent(self.root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(self.root, encoding="unicode") + "\n"


def _metric_suites(cmp: Comparison, suites: _Suites) -> None:
    """A suite per run compared with the baseline: a regression is a failure, n/a is skipped."""
    if cmp.baseline is None:
        return
    for run in cmp.runs[1:]:
        el = suites.suite(f"compare {run.run_id} vs {cmp.baseline.run_id}")
        for r in (r for r in cmp.rows if r.run_id == run.run_id):
            case = ET.SubElement(el, "testcase", name=f"{r.op}.{r.metric}",
                                 classname=f"keyramp.compare.{r.cell}", time="0")
            detail = (f"{r.metric}: baseline {value_text(r.baseline, r.metric)}, now {value_text(r.value, r.metric)} "
                      f"{ratio_text(r)}").strip() + (f" ({r.note})" if r.note and r.metric != "error_rate" else "")
            if r.verdict == "worse":
                ET.SubElement(case, "failure", message=f"regression: {detail}", type="regression").text = detail
            elif r.verdict == "n/a":
                ET.SubElement(case, "skipped", message=r.note or "no value")
            else:
                ET.SubElement(case, "system-out").text = f"{r.verdict}: {detail}"


def _forecast_suites(cmp: Comparison, suites: _Suites) -> None:
    """A suite per run whose launch forecast is compared with the baseline's (modelled)."""
    if cmp.baseline is None or not cmp.forecast:
        return
    worse = {(c, r): (b, v) for c, r, b, v in cmp.forecast_regressions}
    for run in cmp.runs[1:]:
        el = suites.suite(f"launch forecast {run.run_id} vs {cmp.baseline.run_id} (modelled)")
        for cell, per_run in cmp.forecast.items():
            if run.run_id not in per_run or cmp.baseline.run_id not in per_run:
                continue
            case = ET.SubElement(el, "testcase", name="forecast.verdict", classname=f"keyramp.forecast.{cell}",
                                 time="0")
            detail = (f"baseline {per_run[cmp.baseline.run_id]['short']}, now {per_run[run.run_id]['short']} "
                      "(modelled)")
            if (cell, run.run_id) in worse:
                ET.SubElement(case, "failure", message=f"forecast worse: {detail}", type="forecast").text = detail
            else:
                ET.SubElement(case, "system-out").text = detail


def _exception_suite(cmp: Comparison, suites: _Suites) -> None:
    """Each exception class the workload newly raised is a failure."""
    if not cmp.new_exceptions:
        return
    el = suites.suite("new exception classes (the workload's own)")
    for e in cmp.new_exceptions:
        case = ET.SubElement(el, "testcase", name=e.error_class, classname=f"keyramp.exceptions.{e.cell}", time="0")
        text = f"{e.run_id}: {e.op}: {e.message}" + (f" at {e.where}" if e.where else "") + f" ({e.count}×)"
        ET.SubElement(case, "failure", message=text, type="exception").text = text


def _threshold_suites(cmp: Comparison, suites: _Suites) -> None:
    """A suite per run's thresholds: a failed threshold is a failure, an inconclusive one skipped with its
    reason (like an inconclusive metric: ``compare`` exits 3 for it, so the gate is not green either)."""
    for run_id, by_cell in cmp.thresholds.items():
        el = suites.suite(f"thresholds {run_id}")
        for cell, results in by_cell.items():
            for t in results:
                case = ET.SubElement(el, "testcase", name=f"{t.name} {t.op} {t.limit:g}",
                                     classname=f"keyramp.thresholds.{cell}", time="0")
                if t.verdict == "inconclusive":
                    ET.SubElement(case, "skipped", message=f"inconclusive: {t.note or 'the machine was measured'}")
                elif not t.passed:
                    text = f"{t.name} = {value_text(t.value)}, required {t.op} {t.limit:g}"
                    ET.SubElement(case, "failure", message=text, type="threshold").text = text


def render_junit(cmp: Comparison) -> str:
    """JUnit XML: a testcase per compared metric and per threshold (see the module docstring)."""
    suites = _Suites()
    for add in (_metric_suites, _forecast_suites, _exception_suite, _threshold_suites):
        add(cmp, suites)
    return suites.xml()
