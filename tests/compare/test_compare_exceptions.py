"""``keyramp compare`` lists the exception classes a candidate's workload raised that its
baseline's did not (issue 28), and judges a Python workload's own exceptions as the run did."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from _synthetic import make_run

from keyramp.compare import build_comparison
from keyramp.compare._junit import render_junit
from keyramp.compare._render import render_json, render_markdown
from keyramp.results._catalog import load_run

CELLS = (("firestore", "random"), ("firestore", "sequential"))


def _raised(run: Path, cell: str, error_class: str, *, count: int = 7, python: bool = True) -> Path:
    """Give ``cell`` of a synthetic run a workload exception, as the recorder writes it."""
    summary = json.loads((run / "summary.json").read_text())
    entry = {"count": count, "op": "insert", "message": f"{error_class[7:]}: boom", "where": "/app/orders.py:12",
             "traceback": ["/app/orders.py:12 in insert: return helper(self)"]}
    for stats in (summary["cells"][cell]["operations"]["insert"], summary["cells"][cell]["total"]):
        stats["errors_by_class"][error_class] = entry
        stats["workload_errors"] = stats.get("workload_errors", 0) + count
    (run / "summary.json").write_text(json.dumps(summary))
    if python:
        manifest = json.loads((run / "manifest.json").read_text())
        manifest["profile"]["workload"]["user"] = "/app/orders.py:Orders"
        (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def _compare(tmp_path: Path, base_classes: list[str], cand_classes: list[str], **kw: Any) -> Any:
    base = make_run(tmp_path, seed=1, cells=CELLS)
    cand = make_run(tmp_path, seed=2, cells=CELLS)
    for cls in base_classes:
        _raised(base, "c00-firestore-random", cls, **kw)
    for cls in cand_classes:
        _raised(cand, "c00-firestore-random", cls, **kw)
    return build_comparison([load_run(cand)], baseline=load_run(base))


def test_a_class_the_baseline_did_not_raise_is_listed_and_fails(tmp_path: Path) -> None:
    cmp = _compare(tmp_path, ["CLIENT_KeyError"], ["CLIENT_KeyError", "CLIENT_TypeError"], python=False)
    assert [(e.cell, e.error_class, e.op, e.count, e.where) for e in cmp.new_exceptions] == [
        ("firestore-random", "CLIENT_TypeError", "insert", 7, "/app/orders.py:12")]
    assert cmp.exit_code == 1 and not cmp.regressions and not cmp.threshold_failures
    markdown = render_markdown(cmp)
    assert "### New exception classes" in markdown and "`CLIENT_TypeError`" in markdown
    assert "`insert: TypeError: boom` at `/app/orders.py:12`" in markdown
    assert json.loads(render_json(cmp))["new_exceptions"][0]["error_class"] == "CLIENT_TypeError"
    junit = ET.fromstring(render_junit(cmp))
    (case,) = junit.findall(".//testcase[@classname='keyramp.exceptions.firestore-random']")
    assert case.get("name") == "CLIENT_TypeError" and case.find("failure") is not None


def test_the_same_classes_are_not_new(tmp_path: Path) -> None:
    cmp = _compare(tmp_path, ["CLIENT_KeyError"], ["CLIENT_KeyError"], python=False)
    assert cmp.new_exceptions == [] and cmp.exit_code == 0


def test_a_python_workloads_own_exceptions_fail_its_thresholds_as_in_the_run(tmp_path: Path) -> None:
    cmp = _compare(tmp_path, ["CLIENT_KeyError"], ["CLIENT_KeyError"])
    failures = [(cell, r.name, r.value) for _, cell, r in cmp.threshold_failures]
    assert failures == [("c00-firestore-random", "workload_errors", 7.0)]  # the baseline is not judged
