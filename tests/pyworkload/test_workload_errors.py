"""Issue 28: a Python workload's own exceptions are shown, and a broken workload fails the run.

Real runs on the Firestore emulator:

* ``allowed``: an op that raises on every call, under ``[thresholds] workload_errors = N``:
  the run exits 0 and still shows the exception — in the terminal as it first happens and
  at the end, in ``summary.json``, ``report.txt``, Locust's exceptions CSV and the UI.
* ``half-broken``: an op that raises in every call of the ``sequential`` cell only: that cell
  stops before its measured phase (every warm-up operation raised), is marked ``failed:
  workload error``, and the ``random`` cell still runs; exit 1 — locally and with two
  Locust workers (the one phase driver).

(Exit 1 for unallowed workload errors in a measured phase: ``test_pyworkload_runs.py``.)
"""

from __future__ import annotations

import csv
from typing import Any

import pytest
from _runs import emulator_env, keyramp, load, timeseries_rows, write_profile

from keyramp.results._catalog import load_run

pytestmark = pytest.mark.emulator

MODULE = '''import keyramp


class Flaky(keyramp.FirestoreUser):
    @keyramp.op(weight=3)
    def fine(self):
        return self.keys.existing()

    @keyramp.op
    def boom(self):
        return price_of(self.document())


def price_of(order):
    return order["price"]  # the bug: the document has no price


class HalfBroken(keyramp.FirestoreUser):
    @keyramp.op
    def place(self):
        if "sequential" in self.namespace:  # this cell's configuration is broken
            raise RuntimeError("no sequence configured")
        key = self.keys.new()
        self.client.collection(self.namespace).document(key).set(self.document(), **self.no_retry)
        return key
'''


def _line(code: str) -> int:
    """The line number of ``code`` in MODULE (what a traceback names)."""
    return next(i for i, line in enumerate(MODULE.splitlines(), 1) if code in line)


_BUG_LINE = _line('return order["price"]')
_BOOM_LINE = _line("return price_of(self.document())")
_RAISE_LINE = _line('raise RuntimeError("no sequence configured")')


@pytest.fixture(scope="module")
def runs(firestore_emulator: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("workload-errors")
    (tmp / "shop.py").write_text(MODULE)
    allowed = write_profile(
        tmp / "allowed.toml", {"name": "allowed", "backend": "firestore", "duration": "2s", "seed": 4},
        workload={"user": "shop.py:Flaky", "record_count": 20}, keys={"strategy": "random"},
        schedule={"kind": "constant", "rate": 100, "warmup": "0s"}, thresholds={"workload_errors": 1_000_000})
    broken = write_profile(
        tmp / "broken.toml", {"name": "broken", "backend": "firestore", "duration": "2s", "seed": 4},
        workload={"user": "shop.py:HalfBroken", "record_count": 20}, keys={"strategy": ["sequential", "random"]},
        schedule={"kind": "constant", "rate": 50, "warmup": "1s"})
    env = emulator_env(firestore_emulator)
    out: dict[str, Any] = {"dir": tmp}
    for name, profile, extra in (("allowed", allowed, ()), ("allowed-workers", allowed, ("--workers", "2")),
                                 ("broken", broken, ("--quiet",)),
                                 ("broken-workers", broken, ("--quiet", "--workers", "2"))):
        result = keyramp("run", str(profile), "--out", str(tmp / name), *extra, env=env)
        run_dir = next(p for p in (tmp / name).iterdir() if p.is_dir())
        out[name] = {"result": result, "run": run_dir, "summary": load(run_dir, "summary.json")}
    return out


@pytest.mark.parametrize("name", ["allowed", "allowed-workers"])
def test_allowed_workload_errors_exit_0_and_are_still_shown(runs: dict[str, Any], name: str) -> None:
    """With workers, each worker's first occurrence travels in its interval (``OpInterval.exceptions``)."""
    r = runs[name]
    assert r["result"].returncode == 0, r["result"].stderr[-3000:]
    (cell,) = r["summary"]["cells"].values()
    boom = cell["operations"]["boom"]
    assert boom["count"] > 20 and boom["errors"] == boom["count"] == boom["workload_errors"]
    entry = boom["errors_by_class"]["CLIENT_KeyError"]
    module = str(runs["dir"] / "shop.py")
    assert entry["count"] == boom["count"] and entry["message"] == "KeyError: 'price'"
    assert entry["traceback"] == [f"{module}:{_BOOM_LINE} in boom: return price_of(self.document())",
                                  f"{module}:{_BUG_LINE} in price_of: return order[\"price\"]  # the bug: the "
                                  "document has no price"]
    assert entry["where"] == f"{module}:{_BUG_LINE}"
    assert cell["operations"]["fine"]["errors"] == 0  # the run went on
    assert [(t["name"], t["op"], t["limit"], t["passed"]) for t in cell["thresholds"]] == [
        ("workload_errors", "<=", 1_000_000, True)]


@pytest.mark.parametrize("name", ["allowed", "allowed-workers"])
def test_the_terminal_shows_the_first_occurrence_and_the_end_summary(runs: dict[str, Any], name: str) -> None:
    result = runs[name]["result"]
    module = str(runs["dir"] / "shop.py")
    # As it first happens (the live status on stderr), once (two workers' first occurrences
    # merge into one on the master), with the user's frames.
    assert result.stderr.count("the workload raised CLIENT_KeyError (first occurrence") == 1, result.stderr
    assert f"{module}:{_BUG_LINE} in price_of" in result.stderr
    # Again after the table, with its count (stdout), and in report.txt.
    (cell,) = runs[name]["summary"]["cells"].values()
    count = cell["operations"]["boom"]["count"]
    for text in (result.stdout, (runs[name]["run"] / "report.txt").read_text()):
        assert f"CLIENT_KeyError raised by the workload {count:,} times; the first:" in text
        assert "boom: KeyError: 'price'" in text and f"{module}:{_BUG_LINE} in price_of" in text


@pytest.mark.parametrize(("name", "nodes"), [("allowed", "local"), ("allowed-workers", "workers")])
def test_locusts_exceptions_csv_has_them(runs: dict[str, Any], name: str, nodes: str) -> None:
    run = runs[name]["run"]
    (cell_id,) = runs[name]["summary"]["cells"]
    count = runs[name]["summary"]["cells"][cell_id]["operations"]["boom"]["count"]
    with open(run / "locust" / f"{cell_id}_exceptions.csv") as fh:
        (row,) = list(csv.DictReader(fh))
    assert int(row["Count"]) == count and row["Message"] == "KeyError: 'price'" and row["Nodes"] == nodes
    assert f"shop.py:{_BUG_LINE} in price_of" in row["Traceback"]
    with open(run / "locust" / f"{cell_id}_failures.csv") as fh:
        failures = {r["Name"]: r for r in csv.DictReader(fh)}
    assert failures["boom"]["Error"] == "CLIENT_KeyError: KeyError: 'price'"
    assert int(failures["boom"]["Occurrences"]) == count


def test_the_ui_shows_them_next_to_the_error_chart(runs: dict[str, Any]) -> None:
    from keyramp.web import create_app

    run = runs["allowed"]["run"]
    client = create_app(run.parent).test_client()
    page = client.get(f"/runs/{run.name}").get_data(as_text=True)
    charts = page.index('data-kind="errors"')
    shown = page.index('class="exceptions"')
    assert charts < shown < page.index("cell-summary")  # in the chart grid, after the error chart
    assert "KeyError: &#39;price&#39;" in page and f"shop.py:{_BUG_LINE} in price_of" in page
    assert "thresholds passed" in page and ">workload errors<" not in page  # allowed: no red badge
    doc = client.get(f"/runs/{run.name}.json").get_json()
    (cell,) = doc["run"]["cells"]
    assert [(e["class"], e["op"], e["where"].rsplit("/", 1)[-1]) for e in cell["exceptions"]] == [
        ("CLIENT_KeyError", "boom", f"shop.py:{_BUG_LINE}")]


@pytest.mark.parametrize("name", ["broken", "broken-workers"])
def test_a_cell_whose_every_warmup_op_raises_stops_and_the_next_runs(runs: dict[str, Any], name: str) -> None:
    r = runs[name]
    assert r["result"].returncode == 1, r["result"].stderr[-3000:]
    summary = r["summary"]
    assert summary["status"] == "failed" and "workload error in 1 of 2 cells" in summary["reason"]
    seq, rnd = summary["cells"]["c00-firestore-sequential"], summary["cells"]["c01-firestore-random"]
    assert seq["reason"] == "workload error" and seq["status"] == "failed" and "total" not in seq
    assert seq["operations"] == {} and load_run(r["run"]).warnings == []  # a well-formed run, nothing measured
    failure = seq["warmup_failure"]
    assert failure["ops"] > 0 and failure["error_class"] == "CLIENT_RuntimeError"
    assert failure["message"] == "RuntimeError: no sequence configured"
    assert failure["where"].endswith(f"shop.py:{_RAISE_LINE}")
    assert rnd["total"]["count"] > 50 and rnd["total"]["errors"] == 0  # the next cell ran, measured
    assert {row["cell"] for row in timeseries_rows(r["run"])} == {"c01-firestore-random"}  # nothing measured before
    assert "failed: workload error" in r["result"].stdout  # the table
    stdout = r["result"].stdout
    assert "RuntimeError: no sequence configured" in stdout and f"shop.py:{_RAISE_LINE} in place" in stdout


def test_the_ui_marks_the_failed_cell_and_the_run_red(runs: dict[str, Any]) -> None:
    from keyramp.web import create_app

    run = runs["broken"]["run"]
    page = create_app(run.parent).test_client().get(f"/runs/{run.name}").get_data(as_text=True)
    assert 'badge fail workload-errors' in page and "failed: workload error" in page
    assert "RuntimeError: no sequence configured" in page and f"shop.py:{_RAISE_LINE} in place" in page


def test_warmup_failure_is_checked_as_soon_as_the_profiles_warmup_is_over(runs: dict[str, Any]) -> None:
    """Fail fast: the broken cell stops after the profile's 1 s warm-up, not after a fresh
    emulator's longer settling (10 s and more)."""
    for name in ("broken", "broken-workers"):
        seq = runs[name]["summary"]["cells"]["c00-firestore-sequential"]
        assert seq["warmup_s"] < 5, (name, seq["warmup_s"])
