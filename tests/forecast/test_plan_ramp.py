"""The planner's ramp (forecast/_plan_ramp.py): monotone in the step length, and within the evidence.

* A step length that passes passes every longer one: a property over generated designs, through the
  path ``keyramp plan RUN`` takes (a written run, ``run_designs``, ``Planner``), each claim checked by a
  forecast the planner did not make (a fresh ``Forecaster`` at the longer step). The tablet model's
  throttled share jumps around near the boundary (``shard(8)#seq`` to 3,600 ops/s on Firestore passes
  at 12.5 and 18 minutes, fails at 21.5 to 37 minutes): the search judges each step with every longer one.
* On a store with Google's published rule the ramp recommended is 500/50/5 or slower, unless the split
  parameters come from a calibration file; a faster ramp the model allows is labelled and kept apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _designs import DesignRuns
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from keyramp.backends import default_boxes
from keyramp.backends._params import load_params_file
from keyramp.forecast import Forecaster
from keyramp.forecast._plan_checks import judged
from keyramp.forecast._plan_ramp import GROWTH, RULE, STEP_GRID, StepLadder, grid_step, planned_ramp
from keyramp.forecast._planner import Planner
from keyramp.forecast._run_designs import run_designs
from keyramp.results._plan_doc import FASTER_LABEL, GOOGLE_RAMP, RampShape

RAMPS = settings(max_examples=4, derandomize=True, deadline=None, print_blob=True,
                 suppress_health_check=list(HealthCheck))
#: Generated designs: append points by the handful (where the model is least regular), spread keys, one point.
TEMPLATES = ("shard({n})#seq", "shard({n})#timestamp", "random", "sequential")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> DesignRuns:
    return DesignRuns(tmp_path_factory.mktemp("ramps"))


def planner_for(runs: DesignRuns, backend: str, strategy: str, target: float) -> Planner:
    """The cell's ``Planner`` as ``plan_run`` makes it, from a written run."""
    (cell,) = run_designs(runs.run(backend, strategy, ops={"insert": 0.8, "read": 0.2})).cells
    return Planner(cell.design, target=target, recorded=cell.samples)


def every_longer_step_passes(runs: DesignRuns, backend: str, template: str, n: int, per_point: float) -> None:
    """The property: the shortest step the search passes, and every longer step of the grid, pass a fresh
    forecast (a new ``Forecaster``, the ramp as its [launch]: not the planner's own trials)."""
    strategy = template.format(n=n)
    target = per_point * (n if "{n}" in template else 1 if template == "sequential" else 4 * n)
    planner = planner_for(runs, backend, strategy, target)
    start = planner.start_rate(strategy)
    if start is None or start >= target:
        return  # no ramp to judge
    ladder = planner.ladder(strategy, start)
    shortest = ladder.shortest()
    if shortest is None:
        return
    (cell,) = run_designs(runs.run(backend, strategy, ops={"insert": 0.8, "read": 0.2})).cells
    for step in (s for s in ladder.steps if s >= shortest):
        ramp = RampShape(start_ops=start, growth=GROWTH, step_s=step)
        assert planner.ramp_passes(strategy, ramp)
        launch = planner.ramp_launch(ramp)
        fresh = judged(Forecaster(cell.design).forecast(launch, stability=False), launch, "launch", planner.throttle)
        assert fresh.passes, (strategy, target, shortest, step, dict(fresh.shares))


DESIGNS = {"backend": st.sampled_from(["firestore", "datastore", "firestore-datastore"]),
           "template": st.sampled_from(TEMPLATES), "n": st.integers(2, 12), "per_point": st.floats(350.0, 650.0)}


@pytest.mark.slow
@RAMPS
@given(**DESIGNS)
@example(backend="firestore", template="shard({n})#seq", n=8, per_point=450.0)  # the old search said 12.5 min
def test_a_step_length_that_passes_passes_every_longer_one(runs: DesignRuns, backend: str, template: str, n: int,
                                                            per_point: float) -> None:
    every_longer_step_passes(runs, backend, template, n, per_point)


@pytest.mark.extended
@pytest.mark.slow
@settings(RAMPS, max_examples=30)
@given(**DESIGNS)
def test_a_step_length_that_passes_passes_every_longer_one_on_more_designs(runs: DesignRuns, backend: str,
                                                                           template: str, n: int,
                                                                           per_point: float) -> None:
    every_longer_step_passes(runs, backend, template, n, per_point)


def test_the_ladder_judges_each_step_with_every_longer_one_and_asks_nothing_below_a_failure() -> None:
    """The search itself, on a forecast with a hole in it (passes at 5–7.5 min, fails at 11 min, passes above)."""
    asked: list[float] = []

    def passes(step: float) -> bool:
        asked.append(step)
        return step != 675.0

    ladder = StepLadder(passes)
    assert ladder.shortest(RULE.step_s) == 1012.0 and not ladder.passes(300.0) and not ladder.passes(450.0)
    assert ladder.passes(1012.0) and ladder.passes(3417.0)
    assert asked == sorted(asked, reverse=True) and asked[-1] == 675.0  # longest first; nothing below the hole
    assert ladder.shortest() == 1012.0 and asked[-1] == 675.0  # asked again: the answers are kept
    assert grid_step(301.0) == 450.0 and grid_step(300.0) == 300.0 and RULE.step_s in STEP_GRID
    with pytest.raises(ValueError, match="longer than"):
        StepLadder(passes, 1600.0).passes(2000.0)


def _calibration(tmp_path: Path, params: dict[str, Any]) -> Path:
    path = tmp_path / "calibration" / "firestore.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    source = "keyramp calibrate fit of calibrate-firestore-append, calibrate-firestore-jump"
    path.write_text(json.dumps({"schema": 1, "stores": {"firestore": {
        name: {**bounds, "source": source} for name, bounds in params.items()}}}))
    return path


#: A fit as `keyramp calibrate fit` writes it: fast splits, a trigger well under capacity.
FITTED = {"tablet_ops_per_s": {"low": 600, "mid": 800, "high": 1000},
          "split_threshold_frac": {"low": 0.3, "mid": 0.3, "high": 0.4},
          "split_delay_s": {"low": 10, "mid": 20, "high": 30}}


def test_googles_rule_bounds_the_ramp_unless_the_split_parameters_are_calibrated(runs: DesignRuns,
                                                                                 tmp_path: Path) -> None:
    planner = planner_for(runs, "firestore", "random", 8000.0)
    ramp = planned_ramp(planner, "random")
    assert ramp is not None and ramp.basis == "published_rule" and ramp.shape == GOOGLE_RAMP and ramp.is_google
    fast = ramp.modelled_faster  # what the stores' own ranges allow: shown apart, labelled
    assert fast is not None and fast.label == FASTER_LABEL and fast.step_s < RULE.step_s and fast.check.passes
    assert fast.time_to_target_s < ramp.time_to_target_s
    # Calibrated split parameters: the fastest ramp they allow is the one recommended, citing the file.
    fitted = _calibration(tmp_path, FITTED)
    calibrated = Planner(planner.design, target=8000.0, boxes=load_params_file(fitted, default_boxes()))
    ramp = planned_ramp(calibrated, "random")
    assert ramp is not None and ramp.basis == "calibrated" and str(fitted) in ramp.evidence
    assert ramp.step_s < RULE.step_s and ramp.modelled_faster is None and ramp.check.passes
    # A file that leaves the split parameters at the stores' own ranges calibrates nothing a ramp rests on.
    capacity = _calibration(tmp_path / "capacity", {"tablet_ops_per_s": FITTED["tablet_ops_per_s"]})
    partial = Planner(planner.design, target=8000.0, boxes=load_params_file(capacity, default_boxes()))
    ramp = planned_ramp(partial, "random")
    assert ramp is not None and ramp.basis == "published_rule" and ramp.step_s >= RULE.step_s


def test_a_store_without_a_published_ramp_rule_gets_the_models_fastest(runs: DesignRuns) -> None:
    planner = planner_for(runs, "bigtable", "random", 30_000.0)
    ramp = planned_ramp(planner, "random", nodes=4)
    assert ramp is not None and ramp.basis == "model" and ramp.modelled_faster is None
    assert "publishes no ramp rule" in ramp.evidence
