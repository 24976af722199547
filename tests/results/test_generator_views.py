"""A machine-limited cell (issue 32: the emulator on a saturated test box) named as such everywhere
the generator verdict shows: the run step's summary, the table, the thresholds, the UI and its JSON
twin, the scenario report's evidence and ``compare`` — and the same verdict for the same figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _synthetic import make_run

from keyramp.compare import build_comparison
from keyramp.profile._thresholds import parse_expression
from keyramp.results._catalog import load_run
from keyramp.results._generator import check_generator
from keyramp.results._summary import RunManifest, RunSummary
from keyramp.results._thresholds import evaluate
from keyramp.run._report import render_table
from keyramp.scenarios._evidence import evidence_for

CELL = "c00-bigtable-random"


def _saturated_run(results: Path, *, seed: int, machine: float, latency_ms: float = 2.0) -> Path:
    """A calm open-model cell (no late starts) whose test machine was ``machine`` busy, the emulator
    on it; its generator verdict written as ``keyramp run``'s generator step writes it."""
    path = make_run(results, seed=seed, cells=(("bigtable", "random"),), latency_ms=latency_ms)
    summary = json.loads((path / "summary.json").read_text())
    cell: dict[str, Any] = summary["cells"][CELL]
    cell["users"] = 10
    cell["load_cpu"] = {"processes": 1, "cores": 0.4, "max_process_cores": 0.4, "machine_busy": machine,
                        "machine_cores": 2, "store_local": True}
    check = check_generator(cell)
    cell["generator_limited"], cell["generator"] = check.limited, check.to_json()
    cell["thresholds"] = [r.to_json() for r in evaluate([parse_expression("p99_ms<1000")], cell)]
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def test_machine_limited_everywhere_the_generator_verdict_shows(tmp_path: Path) -> None:
    results = tmp_path / "results"
    path = _saturated_run(results, seed=1, machine=0.9)
    run = load_run(path)
    cell = run.cells[CELL]
    assert cell.generator_limited is True and cell.generator is not None and cell.generator.machine_limited is True
    assert (cell.generator.reason or "").startswith("the test machine was saturated (90%")
    # thresholds: a latency limit it meets on its value is inconclusive, never a pass
    assert [t.verdict for t in cell.thresholds] == ["inconclusive"]
    # the table
    table = render_table(run.summary or RunSummary())
    assert f"{CELL} †" in table and f"† {CELL} machine-limited: the test machine was saturated" in table
    assert "machine-limited: machine-limited" not in table and "generator-limited" not in table
    # the UI and its JSON twin
    from keyramp.web import create_app

    client = create_app(results).test_client()
    page = client.get(f"/runs/{run.run_id}").data.decode()
    # one word, once: the banner, the cell's badge and the Answer table's badge
    assert "⚠ <b>machine-limited</b>: the test machine was saturated (90%" in page
    assert page.count('class="badge inconclusive limit"') >= 3  # run head, Answer row, cell heading
    assert "Machine-limited" not in page and "generator-limited" not in page
    answer = page[page.index('class="card answer"'):page.index("</section>", page.index('class="card answer"'))]
    assert ">machine-limited</span>" in answer
    runs = client.get("/").data.decode()  # the run list
    assert ">machine-limited</span>" in runs and "generator-limited" not in runs
    twin = client.get(f"/runs/{run.run_id}.json").get_json()["run"]
    assert twin["cells"][0]["generator"]["machine_limited"] is True
    # the scenario report never cites its latency, and says why
    manifest = RunManifest(profile_name="saturated", profile={"rules": ["BP-RAMP-1"], "description": "best practice"})
    assert run.summary is not None
    (evidence,) = evidence_for(manifest, run.summary, run=path)
    assert evidence.kind == "machine-limited" and "machine-limited: the test machine" in evidence.text
    # compare: slower and machine-limited, so its latency verdicts are inconclusive
    calm = load_run(_saturated_run(results, seed=2, machine=0.5))
    slow = load_run(_saturated_run(results, seed=3, machine=0.9, latency_ms=4.0))
    rows = {(r.op, r.metric): r for r in build_comparison([slow], baseline=calm).rows}
    assert rows[("insert", "p50_ms")].verdict == "n/a" and "with the emulator on it" in rows[("insert", "p50_ms")].note
    # … and its page shows the candidate's cell with the same badge
    html = client.get(f"/compare?runs={calm.run_id},{slow.run_id}").data.decode()
    table = html[html.index('class="data compare-table"'):]
    assert table[:table.index("</thead>")].count('limit" title="the test machine was saturated') == 1


def test_the_same_figures_get_the_same_verdict(tmp_path: Path) -> None:
    # Issue 32's second run: 90 % busy was "the store held the users up" at a 95 % limit.
    for seed, machine in ((5, 0.88), (6, 0.90), (7, 0.97)):
        cell = load_run(_saturated_run(tmp_path, seed=seed, machine=machine)).cells[CELL]
        assert cell.generator_limited is True and cell.generator and cell.generator.machine_limited is True, machine
    calm = load_run(_saturated_run(tmp_path, seed=8, machine=0.6)).cells[CELL]
    assert calm.generator_limited is False and calm.generator and calm.generator.machine_limited is False
