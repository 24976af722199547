from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _synthetic import make_run
from rich.console import Console

from keyramp.compare import (
    Comparison,
    build_comparison,
    render_html,
    render_json,
    render_junit,
    render_markdown,
    render_terminal,
)
from keyramp.profile._thresholds import parse_expression
from keyramp.results._catalog import load_run


@pytest.fixture(scope="module")
def cmp(tmp_path_factory: pytest.TempPathFactory) -> Comparison:
    results = tmp_path_factory.mktemp("results")
    base = load_run(make_run(results, seed=1, keyspace={
        "hottest_1pct_share": 0.4, "gini": 0.9901112484548825, "modelled": False,
        "model": {"modelled": True, "step_s": 0.5, "max_throttled_fraction": 0.0123456}}))
    slow = load_run(make_run(results, seed=2, latency_ms={"insert": 4.0}, profile_name="a|b <i>"))
    same = load_run(make_run(results, seed=3))
    return build_comparison([slow, same], baseline=base,
                            thresholds=[parse_expression("insert.p99_ms<8"), parse_expression("error_rate<0.01")])


# Ant/Jenkins JUnit shape (junit-10.xsd, structurally): required attributes per element.
_SUITE_ATTRS = {"name", "tests", "failures", "errors", "skipped", "time", "timestamp", "hostname", "id", "package"}
_CASE_ATTRS = {"name", "classname", "time"}


def test_junit_structure(cmp: Comparison) -> None:
    text = render_junit(cmp)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(text.split("\n", 1)[1])
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 4  # 2 comparisons + thresholds of 2 runs
    assert all(child.tag == "testsuite" for child in root)
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for suite in suites:
        assert set(suite.attrib) >= _SUITE_ATTRS
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp"))
        order = [c.tag for c in suite]
        assert order[0] == "properties" and order[-2:] == ["system-out", "system-err"]
        assert set(order[1:-2]) == {"testcase"}
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(1 for c in cases if c.find("failure") is not None)
        assert int(suite.get("skipped")) == sum(1 for c in cases if c.find("skipped") is not None)
        assert suite.get("errors") == "0"
        for case in cases:
            assert set(case.attrib) >= _CASE_ATTRS
            float(case.get("time"))
            for failure in case.findall("failure"):
                assert failure.get("message") and failure.get("type") in ("regression", "threshold")
            assert len([c for c in case if c.tag in ("failure", "error", "skipped")]) <= 1
        for key in totals:
            totals[key] += int(suite.get(key))
    assert all(int(root.get(k)) == totals[k] for k in ("tests", "failures"))
    assert root.get("skipped") is None  # not a testsuites attribute in junit-10.xsd
    failures = {(c.get("classname"), c.get("name")) for c in root.iter("testcase") if c.find("failure") is not None}
    assert ("keyramp.compare.datastore-sequential", "insert.p99_ms") in failures
    assert ("keyramp.compare.datastore-sequential", "read.p99_ms") not in failures
    assert ("keyramp.thresholds.c00-datastore-sequential", "insert.p99_ms < 8") in failures


def test_junit_validates_against_jenkins_xsd(cmp: Comparison) -> None:
    # tests/data/junit-10.xsd: the Jenkins xUnit plugin's schema for Ant/Surefire reports.
    xmlschema = pytest.importorskip("xmlschema")
    schema = xmlschema.XMLSchema(str(Path(__file__).resolve().parents[1] / "data" / "junit-10.xsd"))
    text = render_junit(cmp)
    errors = [f"{e.path}: {e.reason}" for e in schema.iter_errors(text)]
    assert errors == []
    # the schema is really enforced: an attribute it does not declare is rejected
    assert not schema.is_valid(text.replace("<testsuites ", '<testsuites bogus="1" ', 1))


def test_markdown_renders_as_table(cmp: Comparison) -> None:
    from markdown_it import MarkdownIt  # rich depends on markdown-it-py

    page = MarkdownIt("commonmark").enable("table").render(render_markdown(cmp))
    tables = re.findall(r"<table>.*?</table>", page, re.S)
    assert len(tables) >= 3  # thresholds, comparison, key space
    # the answer first: the thresholds table opens the page, the side-by-side evidence follows
    assert re.findall(r"<th[^>]*>(.*?)</th>", tables[0].split("</thead>")[0])[:3] == ["run", "cell", "threshold"]
    main = tables[1]
    header = re.findall(r"<th[^>]*>(.*?)</th>", main.split("</thead>")[0])
    assert header[:3] == ["cell", "op", "metric"]
    body_rows = re.findall(r"<tr>(.*?)</tr>", main.split("<tbody>")[1], re.S)
    assert len(body_rows) == 2 * 2 * 6
    assert all(len(re.findall(r"<td", r)) == len(header) for r in body_rows)
    assert "🔴 worse" in main


def test_markdown_table_shape(cmp: Comparison) -> None:
    md = render_markdown(cmp)
    lines = md.splitlines()
    assert lines[0].startswith("## keyramp compare") and "FAIL" in lines[0]
    assert lines[2] == "### Thresholds" and md.index("### Thresholds") < md.index("### Side by side")
    start = lines.index("### Side by side") + 2
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    widths = {len(re.split(r"(?<!\\)\|", line)) for line in table}
    assert len(widths) == 1  # every row has the header's column count
    assert re.fullmatch(r"\|(---:?\|)+", table[1])
    # 2 cells x 2 ops x 6 metrics, plus header and separator
    assert len(table) == 2 + 2 * 2 * 6
    assert "🔴 worse" in md and "### Thresholds" in md and "### Key space" in md
    assert "❌ fail" in md and "✅ pass" in md


def test_html_is_self_contained(cmp: Comparison) -> None:
    page = render_html(cmp)
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page.lower()
    assert "a|b &lt;i&gt;" in page and "<i>" not in page  # user text is escaped
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    assert len(svgs) >= 2 + 4  # a forest plot per candidate, a p99 timeline per cell/op
    for svg in svgs:
        ET.fromstring(svg)  # each chart is well-formed XML
    assert svgs[0].count("<circle") == sum(1 for r in cmp.rows if r.run_id == cmp.runs[1].run_id
                                           and r.metric != "error_rate" and r.ratio is not None)


def test_json_round_trip(cmp: Comparison) -> None:
    data = json.loads(render_json(cmp))
    assert data["passed"] is False
    assert data["baseline"] == cmp.baseline.run_id
    assert len(data["verdicts"]) == len(cmp.rows) == 2 * 2 * 2 * 6
    assert {v["verdict"] for v in data["verdicts"]} <= {"better", "same", "worse", "n/a"}
    assert data["threshold_failures"] == len(cmp.threshold_failures) >= 2


def test_terminal_table(cmp: Comparison) -> None:
    buffer = io.StringIO()
    render_terminal(cmp, Console(file=buffer, width=250, color_system=None))
    out = buffer.getvalue()
    assert "worse" in out and "FAIL" in out
    assert cmp.runs[1].run_id[:19] in out
    # the key-space table: headline figures, rounded and labelled; no model constants, no raw floats
    assert "hottest 1 % of the key range" in out and "40 %" in out and "0.99" in out
    assert "throttled load (peak) (modelled)" in out and "1.2 %" in out
    assert "step_s" not in out and "0.990111" not in out
