"""Issue 17, done-when 1: a Python workload (two ops, weights 3:1) on Firestore over two key
strategies, run by keyramp (paced, recorded, key-sampled) and by plain ``locust -f``; an op
that raises is an error of its class and the run goes on (there on two Locust workers)."""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path

import pytest
from _runs import assert_rate_held, assert_thresholds_hold, emulator_env, keyramp, load, write_profile

pytestmark = pytest.mark.emulator

MODULE = '''"""Orders: place an order (a new document), look one up (an existing one)."""
import keyramp


class Orders(keyramp.FirestoreUser):
    @keyramp.op(weight=3)
    def place(self):
        key = self.keys.new()
        self.client.collection(self.namespace).document(str(key)).set(self.document(), **self.no_retry)
        return key

    @keyramp.op(weight=1)
    def look(self):
        key = self.keys.existing()
        snap = self.client.collection(self.namespace).document(str(key)).get(**self.no_retry)
        return snap.reference  # a DocumentReference: keyramp samples its id


class Flaky(keyramp.FirestoreUser):
    @keyramp.op
    def fine(self):
        return self.keys.existing()

    @keyramp.op
    def boom(self):
        raise ValueError("the application's own bug")
'''


@pytest.fixture(scope="module")
def workload_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pyworkload")
    (tmp / "orders.py").write_text(MODULE)
    return tmp


@pytest.fixture(scope="module")
def run_dirs(firestore_emulator, workload_dir: Path) -> dict[str, Path]:
    shape = {"item": {"type": "string", "values": 50}, "placed_at": "timestamp", "qty": {"type": "int", "values": 9}}
    orders = write_profile(
        workload_dir / "orders.toml", {"name": "orders", "backend": "firestore", "duration": "3s", "seed": 3},
        workload={"user": "orders.py:Orders", "record_count": 500, "key_samples_per_s": 2000,
                  "read_distribution": "uniform", "document": shape},
        keys={"strategy": ["sequential", "random"]},
        schedule={"kind": "constant", "rate": 200, "warmup": "1s"},
    )
    flaky = write_profile(
        workload_dir / "flaky.toml", {"name": "flaky", "backend": "firestore", "duration": "2s", "seed": 3},
        workload={"user": "orders.py:Flaky", "record_count": 50},
        keys={"strategy": "random"}, schedule={"kind": "constant", "rate": 100, "warmup": "0s"},
    )
    out = workload_dir / "out"
    env = emulator_env(firestore_emulator)
    result = keyramp("run", str(orders), "--out", str(out), "--quiet", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    # The failing workload runs distributed: two Locust workers import the module themselves.
    # Its own exceptions fail the run (exit 1; the profile does not allow them).
    result = keyramp("run", str(flaky), "--out", str(out), "--quiet", "--workers", "2", env=env)
    assert result.returncode == 1, result.stderr[-3000:]
    assert "workload errors" in result.stdout and "ValueError: the application's own bug" in result.stdout
    runs = {load(p, "manifest.json")["profile"]["name"]: p for p in out.iterdir() if p.is_dir()}
    assert set(runs) == {"orders", "flaky"}
    return runs


def _weighted_1_in_4(look: int, n: int) -> bool:
    """Locust picks each task by weight (3:1), so look's count is binomial around n/4: within
    4.5 standard deviations (a false alarm about once in 150,000), yet 1:1 or 9:1 weights
    fall far outside once n is in the hundreds."""
    return abs(look / n - 0.25) < 4.5 * math.sqrt(0.25 * 0.75 / n)


def test_both_cells_complete_with_both_ops_about_3_to_1(run_dirs: dict[str, Path]) -> None:
    manifest, summary = load(run_dirs["orders"], "manifest.json"), load(run_dirs["orders"], "summary.json")
    assert manifest["status"] == "complete"
    assert [c["strategy"] for c in summary["cells"].values()] == ["sequential", "random"]
    for cell_id, cell in summary["cells"].items():
        ops = cell["operations"]
        assert set(ops) == {"place", "look"}, cell_id
        assert ops["place"]["errors"] == 0 and ops["look"]["errors"] == 0, (cell_id, ops)
        n = ops["place"]["count"] + ops["look"]["count"]
        assert n == cell["total"]["count"] and n > 100, cell_id
        assert_rate_held(cell)
        assert _weighted_1_in_4(ops["look"]["count"], n), (cell_id, ops["look"]["count"], n)


def test_sequential_hotspot_far_above_random(run_dirs: dict[str, Path]) -> None:
    cells = {c["strategy"]: c["keyspace"] for c in load(run_dirs["orders"], "summary.json")["cells"].values()}
    seq, rnd = cells["sequential"], cells["random"]
    assert seq["range_from"] == rnd["range_from"] == "profile"
    # place (75 %) appends past the preloaded range; look (25 %) reads spread over it.
    assert seq["hottest_1pct_share"] > 0.5 and seq["moving_hotspot"] is True, seq
    assert rnd["hottest_1pct_share"] < 0.05 and rnd["moving_hotspot"] is False, rnd
    assert seq["hottest_1pct_share"] > 10 * rnd["hottest_1pct_share"]


def test_keys_sampled_under_the_method_names(run_dirs: dict[str, Path]) -> None:
    from keyramp.results._read import read_keys

    rows = read_keys(run_dirs["orders"], columns=["cell", "op", "key"]).to_pylist()
    ops = {r["op"] for r in rows}
    assert ops == {"place", "look"}
    looks = [r["key"] for r in rows if r["op"] == "look" and r["cell"].endswith("sequential")]
    assert looks and all(k.isdigit() for k in looks)  # DocumentReference -> its id (the key)


def test_an_op_that_raises_is_an_error_of_its_class(run_dirs: dict[str, Path]) -> None:
    manifest, summary = load(run_dirs["flaky"], "manifest.json"), load(run_dirs["flaky"], "summary.json")
    assert manifest["status"] == "complete" and manifest["workers"] == 2
    (cell,) = summary["cells"].values()
    boom, fine = cell["operations"]["boom"], cell["operations"]["fine"]
    assert boom["count"] > 50 and boom["errors"] == boom["count"]
    assert list(boom["errors_by_class"]) == ["CLIENT_ValueError"]  # raised in the client process
    # ... and its first occurrence came from a worker, with the user's frame
    example = boom["errors_by_class"]["CLIENT_ValueError"]
    assert example["message"] == "ValueError: the application's own bug" and example["count"] == boom["count"]
    line = next(i for i, text in enumerate(MODULE.splitlines(), 1) if "raise ValueError" in text)
    assert example["traceback"] == [f"{run_dirs['flaky'].parents[1] / 'orders.py'}:{line} in boom: "
                                    "raise ValueError(\"the application's own bug\")"]
    assert boom["workload_errors"] == boom["count"] and cell["total"]["workload_errors"] == boom["count"]
    assert [(t["name"], t["passed"]) for t in cell["thresholds"]] == [("workload_errors", False)]
    assert summary["thresholds_passed"] is False
    assert fine["errors"] == 0 and fine["count"] > 50  # the run went on


def test_same_module_under_plain_locust(firestore_emulator, workload_dir: Path, run_dirs: dict[str, Path]) -> None:
    """Locust's own closed model and stats; the profile (``$KEYRAMP_PROFILE``) gives the key
    strategy, preload and document shape (its ``user`` and thresholds are keyramp's)."""
    prefix = workload_dir / "plain"
    # One cell (plain Locust runs one; two are refused: test_plain.py), and a small preload:
    # -t counts the preload too, and a busy machine must still leave most of the 12 s to the ops
    # (8 s left none at load 13).
    profile = write_profile(
        workload_dir / "plain.toml", {"name": "plain", "backend": "firestore", "seed": 3},
        workload={"user": "orders.py:Orders", "record_count": 50}, keys={"strategy": "random"},
    )
    env = {**emulator_env(firestore_emulator), "KEYRAMP_PROFILE": str(profile)}
    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(workload_dir / "orders.py"), "--headless", "-u", "4", "-r", "4",
         "-t", "12s", "--only-summary", "--csv", str(prefix), "Orders"],
        capture_output=True, text=True, timeout=120, env=env, check=False, cwd=workload_dir)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(f"{prefix}_stats.csv") as fh:
        rows = {r["Name"]: r for r in csv.DictReader(fh)}
    assert rows["place"]["Type"] == rows["look"]["Type"] == "firestore"
    place, look = int(rows["place"]["Request Count"]), int(rows["look"]["Request Count"])
    # A busy machine leaves plain Locust few seconds after its start-up and preload: enough ops to
    # see both names and a 3:1 mix within the binomial band (the weights are tested sharply above).
    assert place + look >= 20 and _weighted_1_in_4(look, place + look), (place, look)
    assert rows["Aggregated"]["Failure Count"] == "0"


def test_compare_and_ui_use_the_method_names(run_dirs: dict[str, Path]) -> None:
    from keyramp.compare import run_compare
    from keyramp.web import create_app

    run = run_dirs["orders"]
    cmp = run_compare([str(run)], results=run.parent, thresholds=["look.p99_ms<60000", "place.error_rate<=0"])
    (by_cell,) = cmp.thresholds.values()
    # The named thresholds, and the implicit gate every Python workload carries (issue 28).
    names = {r.name for results in by_cell.values() for r in results}
    assert names == {"look.p99_ms", "place.error_rate", "workload_errors"}
    # Each passes, or (a busy machine) the latency one is inconclusive for the generator's reason.
    cells = load(run, "summary.json")["cells"]
    for cell_id, results in by_cell.items():
        assert_thresholds_hold(cells[cell_id], results)
    page = create_app(run.parent).test_client().get(f"/runs/{run.name}")
    assert page.status_code == 200 and b"place" in page.data and b"look" in page.data
