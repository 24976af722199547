"""The compare page and its JSON twin."""

from __future__ import annotations

from pathlib import Path

import pytest
from _synthetic import make_run

from keyramp.web import create_app


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, str]:
    root = tmp_path_factory.mktemp("cmp")
    a = make_run(root, seconds=20, seed=11, latency_ms=2.0, keyspace=_keyspace(0.0123456789)).name
    b = make_run(root, seconds=20, seed=12, latency_ms={"insert": 4.0, "read": 2.0},  # insert 2x slower
                 keyspace=_keyspace(0.9901112484548825)).name
    c = make_run(root, seconds=20, seed=13, cells=(("bigtable", "reverse_timestamp"), ("datastore", "random"))).name
    return root, a, b, c


def _keyspace(hot1: float) -> dict:
    return {"hottest_1pct_share": hot1, "gini": 0.4567891, "samples": 2471,
            "model": {"modelled": True, "step_s": 0.25, "max_throttled_fraction": 0.0, "peak_tablets": 3}}


@pytest.fixture(scope="module")
def client(runs):  # type: ignore[no-untyped-def]
    return create_app(runs[0]).test_client()


def _row(data: dict, identity: str, op: str, metric: str) -> dict:
    group = next(g for g in data["groups"] if g["identity"] == identity)
    return next(r for r in group["rows"] if r["op"] == op and r["metric"] == metric)


def test_compare_json_ratios_vs_baseline(client, runs) -> None:  # type: ignore[no-untyped-def]
    _, a, b, _ = runs
    data = client.get(f"/compare.json?runs={a},{b}&baseline={a}").get_json()
    assert data["baseline"] == a and [r["is_baseline"] for r in data["runs"]] == [True, False]
    assert [g["identity"] for g in data["groups"]] == ["datastore-sequential", "datastore-random"]
    p99 = _row(data, "datastore-sequential", "insert", "p99_ms")["values"]
    assert p99[0]["ratio"] == 1.0
    assert 1.6 < p99[1]["ratio"] < 2.5
    assert p99[1]["verdict"] == "worse"  # keyramp.compare's verdict
    read = _row(data, "datastore-sequential", "read", "p50_ms")["values"][1]
    assert 0.8 < read["ratio"] < 1.25 and read["verdict"] in ("same", "n/a")
    assert data["verdicts_available"]
    # overlay chart data on a shared x axis, one series per run
    chart = data["groups"][0]["charts"]["*"]
    assert [r["run_id"] for r in chart["runs"]] == [a, b]
    assert len(chart["t"]) == 20 and all(len(r["p99_ms"]) == 20 for r in chart["runs"])


def test_baseline_switch_inverts_ratio(client, runs) -> None:  # type: ignore[no-untyped-def]
    _, a, b, _ = runs
    data = client.get(f"/compare.json?runs={a},{b}&baseline={b}").get_json()
    assert data["baseline"] == b
    p99 = _row(data, "datastore-sequential", "insert", "p99_ms")["values"]
    assert p99[1]["ratio"] == 1.0 and p99[0]["ratio"] < 0.65 and p99[0]["verdict"] == "better"


def test_compare_page_renders_badge_ratios_and_charts(client, runs) -> None:  # type: ignore[no-untyped-def]
    _, a, b, _ = runs
    resp = client.get(f"/compare?runs={a}&runs={b}")  # repeated params, as the list's form sends them
    assert resp.status_code == 200
    html = resp.data.decode()
    assert html.count('class="badge baseline">baseline<') >= 2  # runs table + table headers
    assert 'class="ratio worse"' in html and "▼" in html
    assert 'id="kr-compare"' in html and 'data-kind="cmp-p99"' in html
    assert f"baseline={b}" in html  # "make baseline" link for the other run


def test_page_paints_only_the_comparisons_verdicts(client, runs) -> None:  # type: ignore[no-untyped-def]
    """The UI says what `keyramp compare` says: red/green only where its verdict is worse/better,
    neutral where it says `same`, n/a or nothing (a cell's total); its hint reads compare's defaults."""
    import re

    from keyramp.compare import CompareOptions, build_comparison
    from keyramp.core import _format as fmt
    from keyramp.results._catalog import load_run

    root, a, b, _ = runs
    cmp = build_comparison([load_run(root / b)], baseline=load_run(root / a))
    judged = {(r.cell, r.op, r.metric): r.verdict for r in cmp.rows}
    data = client.get(f"/compare.json?runs={a},{b}").get_json()
    painted = 0
    for group in data["groups"]:
        for row in group["rows"]:
            want = judged.get((group["identity"], row["op"], row["metric"]))
            assert row["values"][1]["verdict"] == want, (group["identity"], row["op"], row["metric"])
            painted += want in ("worse", "better")
    assert painted >= 1 and any(v == "same" for v in judged.values())
    html = client.get(f"/compare?runs={a},{b}").data.decode()
    cells = re.findall(r'<span class="ratio (\w+)"', html)
    assert cells.count("worse") + cells.count("better") == painted  # nothing painted from raw direction
    o = CompareOptions()
    hint = re.search(r'<p class="hint verdict-rule">(.*?)</p>', html, re.S)
    assert hint is not None
    for default in (o.min_effect_latency, o.min_effect_tail, o.min_effect_throughput):
        assert f"{fmt.percent(default)}" in hint.group(1)
    # key space and forecast under each group: rounded, labelled, no model constants or raw floats
    ks = html[html.index('class="data compact compare-keyspace"'):]
    ks = ks[:ks.index("</table>")]
    assert "hottest 1 % of the key range" in ks and "1.2 %" in ks and "99 %" in ks and "2,471" in ks
    assert "step_s" not in ks and "0.99011" not in ks and "0.45678" not in ks


def test_cells_matched_by_identity_not_index(client, runs) -> None:  # type: ignore[no-untyped-def]
    _, a, _, c = runs
    data = client.get(f"/compare.json?runs={a},{c}").get_json()
    groups = {g["identity"]: g for g in data["groups"]}
    # c's datastore-random is cell c01 in both runs; datastore-sequential / bigtable-* exist in one run only
    assert groups["datastore-random"]["present_in"] == [a, c]
    assert groups["datastore-sequential"]["present_in"] == [a]
    assert groups["bigtable-reverse_timestamp"]["present_in"] == [c]
    html = client.get(f"/compare?runs={a},{c}").data.decode()
    assert "only in 1 of 2 runs" in html


def test_three_runs(client, runs) -> None:  # type: ignore[no-untyped-def]
    _, a, b, c = runs
    data = client.get(f"/compare.json?runs={a},{b},{c}&baseline={b}").get_json()
    assert len(data["runs"]) == 3 and data["baseline"] == b
    assert len(_row(data, "datastore-random", "read", "ops_per_s")["values"]) == 3


@pytest.mark.parametrize("query, code", [
    ("", 400), ("runs=ONE", 400), ("runs={a}", 400), ("runs={a},{a}", 400),
    ("runs={a},20990101T000000000Z-nope-0000", 404), ("runs={a},..", 404),
    ("runs={a},{b}&baseline=20990101T000000000Z-x-0000", 400),
])
def test_bad_compare_requests(client, runs, query: str, code: int) -> None:  # type: ignore[no-untyped-def]
    _, a, b, _ = runs
    q = query.format(a=a, b=b)
    assert client.get(f"/compare.json?{q}").status_code == code
    resp = client.get(f"/compare?{q}")
    assert resp.status_code == code and b"<!doctype html>" in resp.data


def test_the_page_answers_first_as_the_cli_does(tmp_path: Path) -> None:
    """Issue 39: the CLI's verdict line and the thresholds open the page, the warnings follow folded and
    grouped, each naming the run it is about (the baseline's late starts are the baseline's), the
    intervals show without hovering, and a cell's unjudged total is left out."""
    import io
    import json
    import re

    from rich.console import Console

    from keyramp.compare import render_terminal, run_compare

    base = make_run(tmp_path, seed=21, cells=(("datastore", "sequential"),))
    summary = json.loads((base / "summary.json").read_text())
    cell = summary["cells"]["c00-datastore-sequential"]
    cell["users"] = 10
    insert = cell["operations"]["insert"]
    insert["late"] = int(insert["count"] * 0.37)  # the baseline's generator fell behind, not the candidate's
    (base / "summary.json").write_text(json.dumps(summary))
    cand = make_run(tmp_path, seed=22, cells=(("datastore", "sequential"),), latency_ms={"insert": 4.0},
                    thresholds={"insert.p99_ms": 1})
    cmp = run_compare([base.name, cand.name], results=tmp_path)
    out = io.StringIO()
    render_terminal(cmp, Console(file=out, width=250, color_system=None))
    cli_first_line = out.getvalue().splitlines()[0]
    assert cli_first_line.startswith("FAIL: ") and cli_first_line == out.getvalue().strip().splitlines()[-1]

    client = create_app(tmp_path).test_client()
    html = client.get(f"/compare?runs={base.name},{cand.name}").data.decode()
    order = [html.index(marker) for marker in ('class="verdict-line', 'class="data compact compare-thresholds"',
                                               'class="compare-warnings"', 'class="data runs-compared"',
                                               'class="data compare-table"')]
    assert order == sorted(order)
    assert f"<b>{cli_first_line}</b>" in html
    thresholds = html[order[1]:order[2]]
    assert "insert.p99_ms &lt; 1" in thresholds and ">FAIL<" in thresholds
    warnings = html[order[2]:html.index("</details>", order[2])]
    assert re.search(rf"{base.name} \(baseline\), datastore-sequential/insert: generator behind schedule "
                     r"\(37 % of operations started late\)", warnings), warnings
    assert f"{cand.name} (candidate), datastore-sequential/insert: generator behind" not in warnings
    assert re.search(r'<span class="ci">\[\d\.\d\d, \d\.\d\d\]</span>', html)  # no hover needed
    data = client.get(f"/compare.json?runs={base.name},{cand.name}").get_json()
    assert data["headline"] == cli_first_line and data["verdict"] == "fail"
    assert {row["op"] for g in data["groups"] for row in g["rows"]} == {"insert", "read"}  # no unjudged total
