"""``keyramp calibrate fit`` (forecast/_fit.py): recovering parameters the fit was not told.

The "observed" traces come from the model run with HIDDEN parameters, another seed (other
sampled keys) and binomial noise on what was served; the fit sees only the traces.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _synthetic import make_run

from keyramp.backends import default_boxes, load_params_file
from keyramp.core._errors import UsageError
from keyramp.forecast._fit import Trace, fit, model_throttled, traces_from_runs, write_params_file
from keyramp.profile import Profile
from keyramp.profile._profile import parse_profile
from keyramp.results._catalog import load_run

HIDDEN = {**default_boxes()["firestore"].mid(), "tablet_ops_per_s": 800.0, "split_delay_s": 90.0,
          "split_threshold_frac": 0.5, "split_fanout": 3.0}
#: Coarse grids keep the test quick; the hidden values are not on the capacity grid.
GRID = {"tablet_ops_per_s": [300.0, 450.0, 650.0, 750.0, 850.0, 1000.0, 1400.0, 2000.0],
        "split_delay_s": [30.0, 60.0, 90.0, 150.0, 300.0],
        "split_threshold_frac": [0.4, 0.6],
        "split_fanout": [2.0, 3.0, 4.0]}


def _profile(strategy: str) -> Profile:
    return parse_profile({"name": "cal", "backend": "firestore", "workload": {"ops": {"insert": 1.0},
                                                                                "record_count": 0},
                          "keys": {"strategy": strategy}})


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    rng = np.random.default_rng(11)
    out = []
    for strategy, target in (("sequential", np.repeat([250.0, 500.0, 1000.0, 2000.0], 120)),
                             ("random", np.full(480, 2000.0))):
        shape = Trace(name=strategy, backend="firestore", strategy=strategy, settings=_profile(strategy),
                      target=target, served=target)
        per_second = np.repeat(model_throttled(shape, HIDDEN, seed=7), 10)[: len(target)]
        served = rng.binomial(target.astype(np.int64), 1.0 - per_second).astype(float)
        out.append(Trace(name=f"run-{strategy}", backend="firestore", strategy=strategy, settings=shape.settings,
                         target=target, served=served))
    return out


def test_the_fit_recovers_hidden_capacity_and_split_delay(traces: list[Trace]) -> None:
    result = fit(traces, grid=GRID, seed=0)
    cap, delay = result.ranges["tablet_ops_per_s"], result.ranges["split_delay_s"]
    assert cap.mid == pytest.approx(800.0, rel=0.1) and cap.low <= 800.0 <= cap.high
    assert delay.mid == 90.0 and delay.low <= 90.0 <= delay.high
    assert result.ranges["split_fanout"].low <= 3.0 <= result.ranges["split_fanout"].high
    assert all(
        r.source.startswith("keyramp calibrate fit of run-sequential, run-random") for r in result.ranges.values()
    )


def test_the_fitted_file_is_what_the_forecast_loads(traces: list[Trace], tmp_path: Path) -> None:
    result = fit(traces, grid={k: v[:3] if k != "tablet_ops_per_s" else v for k, v in GRID.items()}, seed=0)
    path = write_params_file(tmp_path / "cal" / "firestore.json", [result])
    boxes = load_params_file(path, default_boxes())
    assert boxes["firestore"].ranges["tablet_ops_per_s"].mid == pytest.approx(result.ranges["tablet_ops_per_s"].mid)
    assert boxes["firestore"].origin == str(path) and boxes["bigtable-ssd"] is default_boxes()["bigtable-ssd"]
    assert json.loads(path.read_text())["fits"]["firestore"]["traces"] == ["run-sequential", "run-random"]


def test_traces_are_read_from_run_directories(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, cells=(("datastore", "sequential"),), ops=("insert",), seconds=6,
                       error_rate={"insert": 0.2}, seed=3)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["profile"] = json.loads(json.dumps(dict(_profile("sequential").data)))
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    (trace,) = traces_from_runs([load_run(run_dir)])
    assert trace.strategy == "sequential" and len(trace.target) == 6 and (trace.target == 200.0).all()
    summary = json.loads((run_dir / "summary.json").read_text())["cells"]["c00-datastore-sequential"]["total"]
    assert trace.served.sum() == summary["count"] - summary["errors"]  # errors are not served


def test_one_store_at_a_time(traces: list[Trace]) -> None:
    other = Trace(name="b", backend="bigtable", strategy="random", settings=traces[0].settings,
                  target=traces[0].target, served=traces[0].served)
    with pytest.raises(UsageError, match="one store at a time"):
        fit([traces[0], other])
