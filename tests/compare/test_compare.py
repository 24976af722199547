from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp.cli._compare import register
from keyramp.compare import CompareOptions, build_comparison, run_compare
from keyramp.compare._verdict import ratio_verdict as _verdict
from keyramp.core._errors import UsageError
from keyramp.profile._thresholds import parse_expression
from keyramp.results._catalog import load_run
from keyramp.results._generator import busy_users

ONE_CELL = (("datastore", "sequential"),)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="module")
def base(results: Path) -> str:
    return make_run(results, seed=100, cells=ONE_CELL).name


def _verdicts(results: Path, base: str, **kwargs) -> Counter:
    cand = load_run(make_run(results, cells=ONE_CELL, **kwargs))
    cmp = build_comparison([cand], baseline=load_run(results / base))
    return Counter((r.op, r.metric, r.verdict) for r in cmp.rows)


def test_aa_is_almost_never_flagged(results: Path, base: str) -> None:
    flagged = total = 0
    for seed in range(8):
        verdicts = _verdicts(results, base, seed=seed)
        total += sum(verdicts.values())
        flagged += sum(n for (_, _, v), n in verdicts.items() if v in ("worse", "better"))
    assert total == 8 * 2 * 6
    assert flagged <= 1


def test_double_latency_is_worse(results: Path, base: str) -> None:
    verdicts = _verdicts(results, base, seed=200, latency_ms={"insert": 4.0, "read": 2.0})
    for metric in ("p50_ms", "p95_ms", "p99_ms"):
        assert verdicts[("insert", metric, "worse")] == 1
        assert verdicts[("read", metric, "worse")] == 0
    assert verdicts[("insert", "ops_per_s", "same")] == 1


def test_throughput_drop_is_worse(results: Path, base: str) -> None:
    verdicts = _verdicts(results, base, seed=201, rate=140.0)
    assert verdicts[("insert", "ops_per_s", "worse")] == 1
    assert verdicts[("read", "ops_per_s", "worse")] == 1


def test_lower_latency_is_better(results: Path, base: str) -> None:
    verdicts = _verdicts(results, base, seed=202, latency_ms=1.0)
    assert verdicts[("insert", "p50_ms", "better")] == 1


def test_error_rate_two_proportion(results: Path, base: str) -> None:
    verdicts = _verdicts(results, base, seed=203, error_rate={"insert": 0.03})
    assert verdicts[("insert", "error_rate", "worse")] == 1
    assert verdicts[("read", "error_rate", "same")] == 1


def test_small_runs_give_na_for_p999(results: Path, base: str) -> None:
    verdicts = _verdicts(results, base, seed=204)
    assert verdicts[("insert", "p999_ms", "n/a")] == 1  # 2,000 ops: 2 above p99.9


def test_cells_match_by_identity_not_index(results: Path, base: str) -> None:
    # The candidate has an extra cell first, so its sequential cell is c01, not c00.
    cand = load_run(make_run(results, seed=205, cells=(("datastore", "random"), ("datastore", "sequential")),
                             latency_ms=4.0))
    cmp = build_comparison([cand], baseline=load_run(results / base))
    assert {r.cell for r in cmp.rows} == {"datastore-sequential"}
    assert f"datastore-random {cand.run_id} (candidate): only in this run: not compared" in cmp.warnings
    assert len(cmp.regressions) >= 6


def test_thresholds_from_profile_and_cli(results: Path) -> None:
    run = load_run(make_run(results, seed=206, cells=ONE_CELL, thresholds={"insert.p50_ms": 1.0}))
    cmp = build_comparison([run], baseline=None, thresholds=[parse_expression("read.p50_ms<100")])
    results_ = cmp.thresholds[run.run_id]["c00-datastore-sequential"]
    assert [(r.name, r.passed) for r in results_] == [("insert.p50_ms", False), ("read.p50_ms", True)]
    assert cmp.exit_code == 1 and cmp.rows == []


def test_bootstrap_is_reproducible(results: Path, base: str) -> None:
    cand = load_run(make_run(results, seed=207, cells=ONE_CELL))
    one = build_comparison([cand], baseline=load_run(results / base), options=CompareOptions(seed=3))
    two = build_comparison([cand], baseline=load_run(results / base), options=CompareOptions(seed=3))
    assert [r.to_dict() for r in one.rows] == [r.to_dict() for r in two.rows]


# ----------------------------------------------------------------------------- CLI and exit codes


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.func(args)


def test_exit_codes(results: Path, base: str, tmp_path: Path) -> None:
    same = make_run(results, seed=300, cells=ONE_CELL).name
    slow = make_run(results, seed=301, cells=ONE_CELL, latency_ms=4.0).name
    r = ["--results", str(results), "--quiet"]
    assert _cli(["compare", base, same, *r]) == 0
    assert _cli(["compare", base, slow, *r]) == 1
    assert _cli(["compare", same, "--baseline", base, *r]) == 0
    assert _cli(["compare", same, *r, "--threshold", "insert.p50_ms<0.5"]) == 1
    with pytest.raises(UsageError, match="unknown run"):
        _cli(["compare", base, "20200101T000000000Z-nope-abcd", *r])
    with pytest.raises(UsageError, match="cannot parse threshold"):
        _cli(["compare", base, same, *r, "--threshold", "p99<"])
    with pytest.raises(UsageError):
        _cli(["compare", base, same, *r, "--min-effect", "-1"])


def test_corrupt_runs(results: Path, base: str) -> None:
    bad = make_run(results, seed=302, cells=ONE_CELL)
    (bad / "summary.json").write_text('{"schema": 1, "cells": ')
    good = make_run(results, seed=303, cells=ONE_CELL).name
    cmp = run_compare([base, bad.name, good], results=results)
    assert [r.run_id for r in cmp.runs] == [base, good]
    assert any(w.startswith(f"{bad.name}: not usable") for w in cmp.warnings)
    with pytest.raises(UsageError, match="not usable"):
        run_compare([good], results=results, baseline_spec=bad.name)
    with pytest.raises(UsageError, match="first RUN"):
        run_compare([bad.name, good], results=results)
    with pytest.raises(UsageError, match="no usable run"):
        run_compare([base, bad.name], results=results)


def test_cli_writes_every_output(results: Path, base: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slow = make_run(results, seed=304, cells=ONE_CELL, latency_ms=4.0).name
    out = tmp_path / "out"
    code = _cli(["compare", base, slow, "--results", str(results), "--markdown", str(out / "r.md"),
                 "--junit", str(out / "r.xml"), "--out", str(out / "r.json"), "--html", str(out / "r.html")])
    assert code == 1
    assert "worse" in capsys.readouterr().out
    data = json.loads((out / "r.json").read_text())
    assert data["passed"] is False and data["baseline"] == base and data["regressions"] >= 3
    assert all((out / name).stat().st_size > 500 for name in ("r.md", "r.xml", "r.html"))


def test_json_flag_prints_one_document_on_stdout(results: Path, base: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`compare A B --json` like `run --json`: stdout is the JSON document, the table is on stderr;
    the old `--json FILE` form is a clear usage error, not a run named FILE."""
    from keyramp.core._errors import UsageError

    slow = make_run(results, seed=305, cells=ONE_CELL, latency_ms=4.0).name
    assert _cli(["compare", base, slow, "--results", str(results), "--json"]) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["passed"] is False and data["baseline"] == base
    assert "worse" in captured.err
    with pytest.raises(UsageError, match=r"--json --out r\.json"):
        _cli(["compare", "--json", "r.json", base, slow, "--results", str(results)])
    with pytest.raises(SystemExit) as exc:  # after the RUNs argparse refuses it: "unrecognized arguments"
        _cli(["compare", base, slow, "--results", str(results), "--json", "r.json"])
    assert exc.value.code == 2 and "r.json" in capsys.readouterr().err


def test_late_operations_are_flagged_in_notes(results: Path, base: str) -> None:
    import json as json_

    path = make_run(results, seed=208, cells=ONE_CELL)
    summary = json_.loads((path / "summary.json").read_text())
    insert = summary["cells"]["c00-datastore-sequential"]["operations"]["insert"]
    insert["late"] = insert["count"] // 2
    (path / "summary.json").write_text(json_.dumps(summary))
    cmp = build_comparison([load_run(path)], baseline=load_run(results / base))
    notes = {(r.op, r.metric): r.note for r in cmp.rows}
    assert "50% in candidate" in notes[("insert", "p99_ms")]
    assert "generator behind" not in notes[("read", "p99_ms")]
    assert any("latency verdicts may reflect machine load" in w for w in cmp.warnings)


# ----------------------------------------------------------------------------- starved generator, effect sizes


def _patch_cell(path: Path, *, users: int, late: dict[str, float]) -> Path:
    """Give a synthetic run a user count and late shares per op (the runner writes both)."""
    summary = json.loads((path / "summary.json").read_text())
    cell = summary["cells"]["c00-datastore-sequential"]
    cell["users"] = users
    for op, share in late.items():
        cell["operations"][op]["late"] = int(cell["operations"][op]["count"] * share)
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def test_busy_users_by_littles_law(results: Path) -> None:
    path = _patch_cell(make_run(results, seed=210, cells=ONE_CELL), users=10, late={})
    cell = load_run(path).cells["c00-datastore-sequential"]
    ops = cell.operations.values()
    expected = sum((s.ops_per_s or 0) * (s.service_ms.mean or 0) / 1000 for s in ops if s.service_ms) / 10
    assert busy_users(cell) == pytest.approx(expected)
    assert 0 < expected < 0.2  # 200 ops/s x ~2 ms on 10 users
    cell.users = None
    assert busy_users(cell) is None


def test_worse_from_a_starved_generator_is_inconclusive(results: Path, base: str) -> None:
    # Candidate slower *and* 40 % of its inserts started late while its users were idle:
    # the difference is the machine's. Reads were on time: their verdict stands.
    slow = _patch_cell(make_run(results, seed=211, cells=ONE_CELL, latency_ms=4.0), users=10, late={"insert": 0.4})
    cmp = build_comparison([load_run(slow)], baseline=load_run(results / base))
    verdicts = {(r.op, r.metric): r for r in cmp.rows}
    for metric in ("p50_ms", "p95_ms", "p99_ms"):
        assert verdicts[("insert", metric)].verdict == "n/a"
        assert verdicts[("insert", metric)].note.startswith("inconclusive")
        assert verdicts[("read", metric)].verdict == "worse"
    assert any("inconclusive" in w and "rerun" in w for w in cmp.warnings)


def test_late_starts_with_busy_users_are_the_stores_fault(results: Path, base: str) -> None:
    # One user for 200 ops/s: it is busy all the time, so late starts are the store's doing.
    slow = _patch_cell(make_run(results, seed=212, cells=ONE_CELL, latency_ms=4.0), users=1, late={"insert": 0.4})
    cmp = build_comparison([load_run(slow)], baseline=load_run(results / base))
    verdicts = {(r.op, r.metric): r.verdict for r in cmp.rows}
    assert verdicts[("insert", "p50_ms")] == "worse"


def test_starved_baseline_does_not_hide_a_slower_candidate(results: Path) -> None:
    # Only the direction the lateness explains is suspect: a starved *baseline* makes the
    # candidate look better, so a candidate that is worse anyway is still worse.
    base = _patch_cell(make_run(results, seed=213, cells=ONE_CELL), users=10, late={"insert": 0.4, "read": 0.4})
    slow = make_run(results, seed=214, cells=ONE_CELL, latency_ms=4.0)
    cmp = build_comparison([load_run(slow)], baseline=load_run(base))
    assert {(r.op, r.metric): r.verdict for r in cmp.rows}[("insert", "p50_ms")] == "worse"
    fast = make_run(results, seed=215, cells=ONE_CELL, latency_ms=1.0)
    cmp = build_comparison([load_run(fast)], baseline=load_run(base))
    assert {(r.op, r.metric): r.verdict for r in cmp.rows}[("insert", "p50_ms")] == "n/a"


def test_tail_percentiles_use_their_own_min_effect(results: Path, base: str) -> None:
    slow = load_run(make_run(results, seed=216, cells=ONE_CELL, latency_ms=2.8))  # x1.4 everywhere
    cmp = build_comparison([slow], baseline=load_run(results / base))
    verdicts = {(r.op, r.metric): r.verdict for r in cmp.rows}
    assert verdicts[("insert", "p50_ms")] == "worse"  # clears 25 %
    assert verdicts[("insert", "p99_ms")] == "same"  # does not clear 50 %
    strict = build_comparison([slow], baseline=load_run(results / base),
                              options=CompareOptions(min_effect_tail=0.1))
    assert {(r.op, r.metric): r.verdict for r in strict.rows}[("insert", "p95_ms")] == "worse"


def test_better_is_symmetric_on_the_log_scale() -> None:
    # x0.62 is beyond 1/1.5 = 0.667, the mirror of x1.5; the old "1 - effect" rule needed < 0.5.
    assert _verdict(0.62, 0.60, 0.64, 0.5, False)[0] == "better"
    assert _verdict(1.55, 1.52, 1.6, 0.5, False)[0] == "worse"
    assert _verdict(0.7, 0.68, 0.72, 0.5, False)[0] == "same"


def _with_forecast(run_dir: Path, verdict: str, low: float, high: float) -> Path:
    summary = json.loads((run_dir / "summary.json").read_text())
    for cell in summary["cells"].values():
        cell["forecast"] = {"modelled": True, "verdict": verdict, "deciding_param": None,
                            "throttled_fraction": {"low": low, "mid": (low + high) / 2, "high": high},
                            "launch": {"description": "constant 5000 ops/s for 1h"}}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def test_a_worse_launch_forecast_fails_the_comparison(results: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # Same latency (seed repeats the baseline's), but the change turned random ids into sequential ones.
    good = _with_forecast(make_run(results, seed=400, cells=ONE_CELL), "ok", 0.0, 0.01)
    bad = _with_forecast(make_run(results, seed=400, cells=ONE_CELL), "hotspot", 0.5, 0.85)
    cmp = build_comparison([load_run(bad)], baseline=load_run(good))
    assert cmp.forecast_regressions == [("datastore-sequential", bad.name, "ok", "hotspot")]
    assert cmp.exit_code == 1 and not cmp.regressions
    back = build_comparison([load_run(good)], baseline=load_run(bad))
    assert back.forecast_regressions == []
    assert back.forecast["datastore-sequential"][good.name]["short"] == "ok 0 %–1.0 %"
    out = tmp_path / "fc"
    assert _cli(["compare", good.name, bad.name, "--results", str(results), "--markdown", str(out / "r.md"),
                 "--junit", str(out / "r.xml"), "--out", str(out / "r.json")]) == 1
    assert "launch forecast" in capsys.readouterr().out
    assert "hotspot 50 %–85 % ❌" in (out / "r.md").read_text()
    assert 'type="forecast"' in (out / "r.xml").read_text()
    assert json.loads((out / "r.json").read_text())["forecast_regressions"][0]["verdict"] == "hotspot"
