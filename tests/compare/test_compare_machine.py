"""Verdicts that hold on a shared machine (issue 32): a saturated test box or a CPU-bound load
process makes a throughput or latency difference inconclusive unless the store's own service
time moved with it; a baseline of several runs widens every interval by their spread."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from _synthetic import make_run

from keyramp.compare import build_comparison, render_markdown
from keyramp.profile._thresholds import parse_expression
from keyramp.results._catalog import Run, load_run

ONE_CELL = (("bigtable", "random"),)
CELL = "c00-bigtable-random"


def _run(results: Path, *, seed: int, machine: float = 0.5, cores: float = 0.5, local: bool = True,
         closed: bool = True, **kwargs: Any) -> Run:
    """A synthetic run of 8 closed-model users with the load CPU figures ``keyramp run`` records."""
    path = make_run(results, seed=seed, cells=ONE_CELL, **kwargs)
    summary = json.loads((path / "summary.json").read_text())
    cell = summary["cells"][CELL]
    cell["users"] = 8
    cell["load_cpu"] = {"processes": 1, "cores": cores, "max_process_cores": cores, "machine_busy": machine,
                        "machine_cores": 2, "store_local": local}
    if closed:
        for point in cell["target_ops_per_s"]:
            point["target"] = None
    (path / "summary.json").write_text(json.dumps(summary))
    return load_run(path)


def _rows(cand: Run, base: Run | list[Run]) -> dict[tuple[str, str], Any]:
    return {(r.op, r.metric): r for r in build_comparison([cand], baseline=base).rows}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("machine")


@pytest.fixture(scope="module")
def base(results: Path) -> Run:
    return _run(results, seed=500)


def test_a_saturated_generator_alone_makes_a_throughput_difference_inconclusive(results: Path, base: Run) -> None:
    # The same store (same latency), 25 % less throughput: what the machine gave, as in issue 32's A/A.
    calm = _rows(_run(results, seed=501, rate=150.0), base)
    saturated = _rows(_run(results, seed=501, rate=150.0, machine=0.97), base)
    assert calm[("insert", "ops_per_s")].verdict == "worse"  # the rule, not the data, changes the verdict
    row = saturated[("insert", "ops_per_s")]
    assert row.verdict == "n/a" and row.note.startswith("inconclusive: worse but the candidate's load machine "
                                                        "was saturated (97%")
    assert "did not move with it" in row.note and "Little's law" in row.note
    cpu_bound = _rows(_run(results, seed=501, rate=150.0, cores=0.95), base)[("insert", "ops_per_s")]
    assert cpu_bound.verdict == "n/a" and "CPU-bound (0.95 of a core)" in cpu_bound.note
    # Either run: a saturated *baseline* makes a candidate's higher throughput inconclusive too.
    busy_base = _run(results, seed=502, rate=150.0, machine=0.97)
    assert _rows(_run(results, seed=503), busy_base)[("insert", "ops_per_s")].verdict == "n/a"


def test_throughput_stands_when_the_stores_service_time_moved_with_it(results: Path, base: Run) -> None:
    # Service time doubled, throughput halved (Little's law with 8 busy users): the store did it,
    # even though the candidate's machine was saturated (its emulator elsewhere: service time is the store's).
    slow = _run(results, seed=504, rate=100.0, latency_ms=4.0, machine=0.97, local=False)
    cmp = build_comparison([slow], baseline=base)
    row = {(r.op, r.metric): r for r in cmp.rows}[("insert", "ops_per_s")]
    assert row.verdict == "worse" and row.note.startswith("the store's service time moved with it")
    assert f"insert ops_per_s worse: {row.note}" in render_markdown(cmp)  # the note is shown, not only in JSON
    predicted = re.search(r"predicts ×([0-9.]+)", row.note)
    assert predicted and float(predicted.group(1)) == pytest.approx(0.5, abs=0.05)
    # With the emulator on that saturated machine its service time is the machine's: inconclusive.
    local = _run(results, seed=504, rate=100.0, latency_ms=4.0, machine=0.97, local=True)
    assert _rows(local, base)[("insert", "ops_per_s")].verdict == "n/a"


def test_machine_limited_latency_is_inconclusive_in_the_direction_it_explains(results: Path, base: Run) -> None:
    slow_local = _rows(_run(results, seed=505, latency_ms=4.0, machine=0.95), base)
    for metric in ("p50_ms", "p95_ms", "p99_ms"):
        row = slow_local[("insert", metric)]
        assert row.verdict == "n/a", row
        assert "load machine was saturated (95% of its cores busy with the emulator on it)" in row.note
    # A calm candidate slower than a machine-limited baseline is slower despite it: worse stands.
    busy_base = _run(results, seed=506, machine=0.95)
    assert _rows(_run(results, seed=507, latency_ms=4.0), busy_base)[("insert", "p50_ms")].verdict == "worse"


def test_one_baseline_run_says_the_between_run_noise_is_unknown(results: Path, base: Run) -> None:
    cmp = build_comparison([_run(results, seed=508)], baseline=base)
    assert cmp.noise.startswith("between-run noise unknown (one baseline run)") and "+25%" in cmp.noise
    assert {r.baseline_runs for r in cmp.rows} == {1} and {r.spread for r in cmp.rows} == {None}
    assert cmp.to_dict()["between_run_noise"] == cmp.noise


def test_a_baseline_set_widens_intervals_by_its_spread(results: Path) -> None:
    # Identical builds whose throughput moves 25 % between runs (closed model, calm machine).
    spread_set = [_run(results, seed=510 + i, rate=r) for i, r in enumerate((200.0, 150.0, 250.0))]
    cand = _run(results, seed=514, rate=160.0)
    single = _rows(cand, spread_set[0])[("insert", "ops_per_s")]
    assert single.verdict == "worse" and single.baseline_runs == 1  # x0.8: the one-run gate cries wolf
    cmp = build_comparison([cand], baseline=spread_set)
    row = {(r.op, r.metric): r for r in cmp.rows}[("insert", "ops_per_s")]
    assert row.verdict == "same" and row.baseline_runs == 3
    recorded = [r.cells[CELL].operations["insert"].ops_per_s for r in spread_set]
    assert row.spread == pytest.approx(statistics.stdev(math.log(v) for v in recorded), abs=1e-3)  # ~0.26
    assert row.ci_low is not None and single.ci_low is not None and row.ci_low < single.ci_low
    assert cmp.noise.startswith("between-run noise measured from 3 baseline runs")
    assert cmp.baseline_runs == spread_set and [r.run_id for r in cmp.runs] == [spread_set[0].run_id, cand.run_id]
    # The table's baseline column is the set pooled: about the mean of the three rates.
    pooled = cmp.values[("bigtable-random", "insert")][spread_set[0].run_id]["ops_per_s"]
    assert pooled is not None and 190 < pooled < 210
    markdown = render_markdown(cmp)
    assert f"baseline: 3 runs pooled `{spread_set[0].run_id}`" in markdown
    assert "measured from 3 baseline runs" in markdown


def test_a_steady_baseline_set_still_catches_a_real_regression(results: Path) -> None:
    steady = [_run(results, seed=520 + i) for i in range(4)]
    cmp = build_comparison([_run(results, seed=525, latency_ms=4.0)], baseline=steady)
    rows = {(r.op, r.metric): r for r in cmp.rows}
    assert rows[("insert", "p50_ms")].verdict == "worse" and rows[("read", "p50_ms")].verdict == "worse"
    assert rows[("insert", "p50_ms")].spread is not None and rows[("insert", "p50_ms")].spread < 0.1


def test_new_exception_classes_are_judged_against_every_run_of_a_baseline_set(tmp_path: Path) -> None:
    # A class one run of the set raised is known to the build: the candidate raising it is not new.
    base = [make_run(tmp_path, seed=600 + i, cells=ONE_CELL) for i in range(3)]
    cand = make_run(tmp_path, seed=604, cells=ONE_CELL)
    for run_dir, classes in ((base[1], ["CLIENT_KeyError"]), (cand, ["CLIENT_KeyError", "CLIENT_TypeError"])):
        summary = json.loads((run_dir / "summary.json").read_text())
        for cls in classes:
            entry = {"count": 3, "op": "insert", "message": "boom", "where": "/app/w.py:1", "traceback": []}
            for stats in (summary["cells"][CELL]["operations"]["insert"], summary["cells"][CELL]["total"]):
                stats["errors_by_class"][cls] = entry
        (run_dir / "summary.json").write_text(json.dumps(summary))
    cmp = build_comparison([load_run(cand)], baseline=[load_run(b) for b in base])
    assert [e.error_class for e in cmp.new_exceptions] == ["CLIENT_TypeError"]


def test_the_gate_exits_3_on_what_it_could_not_judge_never_0(results: Path) -> None:
    """Issue 39's done-when, on synthetic runs: a closed-model pair through +4 ms on a box saturated
    for both runs is flagged or inconclusive (exit 3), never a pass; ``--inconclusive`` decides."""
    import argparse

    from keyramp.cli._compare import register

    def cli(*argv: str) -> int:
        parser = argparse.ArgumentParser()
        register(parser.add_subparsers())
        args = parser.parse_args(["compare", *argv, "--results", str(results), "--quiet"])
        return args.func(args)

    busy_a = _run(results, seed=540, machine=0.97)
    busy_b = _run(results, seed=541, machine=0.97, latency_ms=4.0, rate=110.0)  # +4 ms per round trip
    busy_aa = _run(results, seed=542, machine=0.97)
    for cand in (busy_b, busy_aa):
        cmp = build_comparison([cand], baseline=busy_a)
        assert cmp.verdict == "inconclusive" and cmp.exit_code == 3, [(r.metric, r.verdict) for r in cmp.rows]
        # no latency or throughput row says "same" of a machine-limited baseline: a regression can hide there
        assert not [r for r in cmp.rows if r.metric != "error_rate" and r.verdict == "same"]
        assert cmp.to_dict()["verdict"] == "inconclusive" and cmp.to_dict()["passed"] is False
    assert render_markdown(cmp).startswith("## keyramp compare — ⚠️ INCONCLUSIVE: 0 regressions")
    assert cli(busy_a.run_id, busy_b.run_id) == 3
    assert cli(busy_a.run_id, busy_b.run_id, "--inconclusive", "pass") == 0
    assert cli(busy_a.run_id, busy_b.run_id, "--inconclusive", "fail") == 1
    # a calm pair is judged: the regression fails, an A/A passes; a failure wins over inconclusive
    calm_a, calm_b = _run(results, seed=543), _run(results, seed=544, latency_ms=4.0)
    assert cli(calm_a.run_id, calm_b.run_id) == 1 and cli(calm_a.run_id, _run(results, seed=545).run_id) == 0
    assert cli(busy_a.run_id, busy_b.run_id, "--threshold", "insert.ops_per_s>=1000") == 1  # failed, not unsure
    # a latency threshold of a machine-limited run is inconclusive there too: 3, not 1 (issue 39)
    limited = build_comparison([busy_b], baseline=busy_a, thresholds=[parse_expression("insert.p50_ms<0.1")])
    assert not limited.threshold_failures and len(limited.inconclusive_thresholds) == 1 and limited.exit_code == 3


def test_comparing_a_run_with_itself_is_refused_in_a_whole_sentence(results: Path, base: Run) -> None:
    from keyramp.compare import run_compare
    from keyramp.core._errors import UsageError

    with pytest.raises(UsageError) as exc:
        run_compare([base.run_id, base.run_id], results=results)
    message = str(exc.value)
    assert message.startswith(f"{base.run_id} is the baseline itself") and message.endswith(".")
    with pytest.raises(UsageError, match=r"is the baseline itself: name another run"):
        run_compare([base.run_id], results=results, baseline_spec=base.run_id)
