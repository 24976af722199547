"""The launch planner (forecast/_planner.py, _plan_cell.py): the issue's cases and properties.

Designs are built from a parsed profile (no run, no emulator): the keys are regenerated, as
for any named strategy. Every plan is checked by forecasts the planner did not make itself
(the ramp as a ``[launch]`` through ``Forecaster.forecast``, the next shorter step, one shard
fewer), by arithmetic done in the test (a mixed plan's cost at prices typed in here), or by
properties (monotone in the target, about twice the ceiling with twice the shards). The ramp's
own properties are tests/forecast/test_plan_ramp.py's.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keyramp.forecast import CellDesign, Forecaster, Launch, Prices, load_prices
from keyramp.forecast._band import PEAK_OK_MAX
from keyramp.forecast._cost import min_nodes
from keyramp.forecast._plan_cell import plan_cell
from keyramp.forecast._plan_ramp import STEP_GRID
from keyramp.forecast._planner import HOLD_S, Planner, shard_template
from keyramp.profile._profile import parse_profile
from keyramp.profile._thresholds import parse_expression, parse_table
from keyramp.results._plan_doc import FASTER_LABEL, GOOGLE_RAMP, CellLaunchPlan, RampShape, RateBand
from keyramp.results._thresholds import evaluate

PROPS = settings(max_examples=3, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))


def design(backend: str, strategy: str, ops: dict[str, float] | None = None, **workload: Any) -> CellDesign:
    ops = ops or {"insert": 1.0}
    profile = parse_profile({"name": "p", "backend": backend, "duration": "10s", "seed": 4,
                             "workload": {"ops": ops, "record_count": 500, **workload},
                             "keys": {"strategy": strategy}, "schedule": {"kind": "constant", "rate": 300}})
    return CellDesign(backend=backend, strategy=strategy, settings=profile,
                      counts={op: 3000 * share for op, share in ops.items()})


def plan(d: CellDesign, target: float, **kw: Any) -> CellLaunchPlan:
    return plan_cell(Planner(d, target=target, **kw), cell_id="c00", prices=load_prices())


def ramp_forecast(d: CellDesign, shape: RampShape, target: float) -> dict[str, Any]:
    """The ramp as a [launch], forecast the way `keyramp forecast` does (band, stability re-run)."""
    launch = Launch.from_data(shape.spec(target, hold_s=HOLD_S))
    return Forecaster(d).forecast(launch).to_json()


def under(fc: dict[str, Any], limit: float = 0.01) -> bool:
    return fc["throttled_fraction"]["high"] <= limit and fc["peak_throttled_fraction"]["high"] <= PEAK_OK_MAX


@pytest.fixture(scope="module")
def uniform() -> tuple[CellDesign, CellLaunchPlan]:
    d = design("firestore", "random")
    return d, plan(d, 20_000)


def test_uniform_keys_on_firestore_ramp_by_googles_rule_and_the_faster_ramp_is_shown_apart(
    uniform: tuple[CellDesign, CellLaunchPlan],
) -> None:
    d, p = uniform
    assert p.reachable and p.fix is None and p.sustainable_ops_per_s is None  # a splitting store: no ceiling
    ramp, target = p.ramp, p.target_ops_per_s
    # The stores' own split parameters are bounded by 500/50/5 itself: nothing faster is recommended.
    assert ramp is not None and ramp.check.passes and ramp.basis == "published_rule" and ramp.shape == GOOGLE_RAMP
    assert under(ramp_forecast(d, ramp.shape, target))
    fast = ramp.modelled_faster
    assert fast is not None and fast.label == FASTER_LABEL and fast.time_to_target_s < ramp.time_to_target_s
    # The faster ramp passes a forecast the planner did not make; the next shorter step of the grid does not.
    assert under(ramp_forecast(d, fast, target))
    shorter = RampShape(start_ops=fast.start_ops, growth=fast.growth,
                        step_s=STEP_GRID[STEP_GRID.index(fast.step_s) - 1])
    assert shorter.time_to(target) < fast.time_to_target_s and not under(ramp_forecast(d, shorter, target))


def test_the_ramps_time_to_target_is_where_its_forecast_reaches_the_target(
    uniform: tuple[CellDesign, CellLaunchPlan],
) -> None:
    d, p = uniform
    assert p.ramp is not None
    tl = ramp_forecast(d, p.ramp.shape, p.target_ops_per_s)["timeline"]
    first = next(t for t, rate in zip(tl["t"], tl["offered_ops_per_s"], strict=True) if rate >= p.target_ops_per_s)
    step = tl["t"][1] - tl["t"][0]
    assert p.ramp.time_to_target_s <= first <= p.ramp.time_to_target_s + 2 * step


def test_the_plan_is_plain_json_that_round_trips(uniform: tuple[CellDesign, CellLaunchPlan]) -> None:
    _, p = uniform
    doc = json.loads(json.dumps(p.to_json()))
    assert doc["modelled"] is True and doc["reachable"] is True and doc["fix"] is None
    assert set(doc["ramp"]) >= {"start_ops", "growth", "step_s", "time_to_target_s", "vs_500_50_5"}
    assert set(doc["cost"]) >= {"launch_usd_per_hour", "ramp_usd", "breakdown", "prices"}
    assert set(doc["cost"]["prices"]) >= {"source", "as_of", "location"}
    assert all(p["source"] for p in doc["params"].values())  # every parameter says where it comes from
    assert CellLaunchPlan.from_json(doc).to_json() == doc


@pytest.fixture(scope="module")
def sequential() -> tuple[CellDesign, Planner, Any]:
    d = design("firestore", "sequential")
    planner = Planner(d, target=1000.0)
    band, _ = planner.sustainable("sequential")
    return d, planner, band


def test_an_append_design_is_reachable_below_what_it_sustains_and_not_beyond(
    sequential: tuple[CellDesign, Planner, Any],
) -> None:
    d, _, band = sequential
    assert band is not None and 0 < band.low <= band.mid <= band.high
    below, beyond = plan(d, 0.8 * band.low), plan(d, 1.5 * band.high)
    assert below.reachable and below.ramp is not None and below.fix is None
    assert not beyond.reachable and beyond.ramp is None and "append point" in beyond.why


def test_the_shard_fix_is_the_smallest_count_that_passes(sequential: tuple[CellDesign, Planner, Any]) -> None:
    d, _, band = sequential
    p = plan(d, 6 * band.low)
    fix = p.fix
    assert fix is not None and fix.kind == "shards" and fix.value is not None and fix.value > 1
    assert fix.design == f"shard({fix.value})#seq"
    assert fix.forecast is not None and fix.forecast.passes
    assert fix.one_fewer is not None and not fix.one_fewer.passes
    # One fewer, re-forecast from scratch by another planner, still fails; the count passes.
    fresh = Planner(d, target=6 * band.low)
    assert not fresh.steady(str(shard_template("sequential", fix.value - 1)), fresh.target).passes()
    assert fix.ramp is not None and p.cost is not None and p.cost.ramp_usd is not None


def test_bigtable_gets_the_smallest_node_count_that_passes_on_hdd() -> None:
    """(SSD: the CLI's done-when run, tests/forecast/test_plan_cli.py.)"""
    storage = "hdd"
    d = design("bigtable", "random", {"insert": 0.7, "read": 0.3})
    p = plan(d, 12_000, storage=storage)
    fix = p.fix
    assert not p.reachable and fix is not None and fix.kind == "nodes" and fix.value is not None
    assert fix.forecast is not None and fix.forecast.passes and fix.forecast.nodes == fix.value
    assert fix.one_fewer is not None and not fix.one_fewer.passes and fix.one_fewer.nodes == fix.value - 1
    # Never fewer than Google's published per-node maximum allows (a design constraint, not a fit).
    assert fix.value >= min_nodes("bigtable", d.mix, 12_000, storage)
    cost = p.cost
    assert cost is not None and cost.nodes is not None and cost.nodes >= fix.value


#: List prices typed in here, unlike keyramp's table on purpose: a cost that read the table would not match.
TYPED_PRICES = {"schema": 1, "version": "test", "label": "typed in the test", "stores": {"firestore": {
    "title": "Firestore", "backends": ["firestore"], "billing": "operations", "default_location": "here",
    "billed_as": {"increment": {"reads": 0, "writes": 1, "source": "the test", "as_of": "2026-01-01"}},
    "locations": {"here": {"type": "regional", **{name: {"usd": usd, "source": "the test", "as_of": "2026-01-01"}
                                                for name, usd in (("reads_per_100k", 0.05), ("writes_per_100k", 0.20),
                                                                  ("deletes_per_100k", 0.02),
                                                                  ("storage_gib_month", 1.0))}}}}}}


def test_a_mixed_plan_costs_what_a_hand_computation_of_its_hour_and_ramp_says() -> None:
    """Reads, inserts, updates, deletes and increments at prices typed in above, against arithmetic done here."""
    d = design("firestore", "random", {"insert": 0.4, "read": 0.3, "update": 0.1, "delete": 0.1, "increment": 0.1})
    p = plan_cell(Planner(d, target=4000.0), cell_id="c00", prices=Prices.from_json(TYPED_PRICES, src="typed"))
    # The planned ramp: 500/50/5 from 250 ops/s (a new range takes 500 rows/s at the band's low end, and this
    # mix makes 1.1 row accesses an operation): 250, 375, 562.5, 843.75, 1,265.625, 1,898.4375 and
    # 2,847.65625 ops/s, 5 minutes each, then 4,000.
    assert p.ramp is not None and p.ramp.shape == RampShape(start_ops=250.0, growth=0.5, step_s=300.0)
    assert p.ramp.time_to_target_s == 7 * 300 and p.cost is not None
    # An operation bills 0.3 reads (an increment is a field transform: a write, no read), 0.6 writes (insert,
    # update, increment) and 0.1 deletes: $0.137 per 100,000 operations at the typed prices.
    per_op = (0.3 * 0.05 + 0.6 * 0.20 + 0.1 * 0.02) / 100_000
    assert per_op == pytest.approx(0.137e-5)
    assert p.cost.launch_usd_per_hour == pytest.approx(4000 * 3600 * 0.137e-5)  # $19.728
    ramp_ops = (250 + 375 + 562.5 + 843.75 + 1265.625 + 1898.4375 + 2847.65625) * 300
    assert p.cost.ramp_usd == pytest.approx(ramp_ops * 0.137e-5)  # $3.31
    hour = {line.item: line.quantity for line in p.cost.breakdown["launch_hour"].lines}
    assert hour == pytest.approx({"reads": 4.32e6, "writes": 8.64e6, "deletes": 1.44e6})
    assert p.cost.prices.as_of == "2026-01-01" and p.cost.prices.location == "here"


@PROPS
@given(backend=st.sampled_from(["firestore", "datastore", "bigtable"]),
       strategy=st.sampled_from(["sequential", "random", "shard(4)#timestamp", "time_bucket_shard"]),
       t1=st.floats(200, 30_000), k=st.floats(1.05, 4.0))
def test_a_higher_target_never_makes_a_plan_reachable(backend: str, strategy: str, t1: float, k: float) -> None:
    d = design(backend, strategy)
    low, high = Planner(d, target=t1), Planner(d, target=t1 * k)
    # reachable is the steady check at the target (plan_cell): once it fails, a higher target fails too
    assert high.steady(strategy, high.target).passes() <= low.steady(strategy, low.target).passes()


@pytest.mark.slow
@PROPS
@given(shards=st.integers(1, 4), backend=st.sampled_from(["firestore", "datastore"]))
def test_more_shards_never_lower_what_a_design_sustains(shards: int, backend: str) -> None:
    """Twice the shards, twice the append points: the design sustains about twice as much at every end of
    the band (n append points once split serve n × what one serves; at least 1.5 × here, the searches
    bracket within 5–10 %). The target keeps every ceiling below the probe (4 × the target): figures, not
    "no ceiling"."""
    planner = Planner(design(backend, "sequential"), target=1500.0 * shards)

    def sustains(n: int) -> RateBand:
        band, probe = planner.sustainable(str(shard_template("sequential", n)))
        assert band is not None and None not in (band.low, band.mid, band.high), (n, band, probe)
        return band

    few, more = sustains(shards), sustains(2 * shards)
    for end in ("low", "mid", "high"):
        assert getattr(more, end) >= 1.5 * getattr(few, end), (end, few, more)


def test_plan_thresholds_parse_and_gate_on_the_plan() -> None:
    (reach,) = parse_table({"plan.reachable": True})
    assert (reach.metric, reach.op, reach.limit) == ("plan.reachable", "==", 1.0)
    sust = parse_expression("plan.sustainable_ops_per_s.mid=5000")
    assert (sust.op, sust.bound) == (">=", "mid")
    def cell(reachable: bool, band: RateBand | None) -> dict:
        return {"plan": CellLaunchPlan(cell="c00", backend="firestore", strategy="sequential", target_ops_per_s=5000.0,
                                       throttle=0.01, reachable=reachable, why="",
                                       sustainable_ops_per_s=band).to_json()}

    results = {r.name: r for r in evaluate([reach, sust], cell(False, RateBand(low=400, mid=900, high=1900)))}
    assert not results["plan.reachable"].passed and not results["plan.sustainable_ops_per_s.mid"].passed
    assert results["plan.sustainable_ops_per_s.mid"].value == 900
    no_ceiling = evaluate([sust], cell(True, None))
    assert no_ceiling[0].passed  # null: no ceiling below the rate checked
    assert evaluate([sust], cell(True, RateBand(low=400, mid=None, high=None)))[0].passed  # none at that end
    assert not evaluate([reach], {})[0].passed  # no plan: a gate must not pass silently
    with pytest.raises(Exception, match="true or false"):
        parse_table({"plan.reachable": 3})
    with pytest.raises(Exception, match="plan metrics are"):
        parse_table({"plan.nodes": 3})


def test_a_plan_threshold_needs_a_launch() -> None:
    with pytest.raises(Exception, match=r"thresholds.plan.reachable: a plan threshold needs a \[launch\] table"):
        parse_profile({"name": "p", "backend": "firestore", "thresholds": {"plan.reachable": True}})


def test_targets_and_limits_out_of_range_are_usage_errors() -> None:
    d = design("firestore", "random")
    for kw, message in (({"target": 0}, "--target"), ({"target": math.inf}, "--target"),
                        ({"target": 10.0, "throttle": 1.5}, "--throttle")):
        with pytest.raises(Exception, match=message):
            Planner(d, **kw)


def test_a_run_plans_its_cells_with_a_launch_unless_told_not_to_and_a_threshold_needs_none(tmp_path: Any) -> None:
    from keyramp.forecast import plan_step
    from keyramp.results._summary import CellSummary
    from keyramp.run._analysis import CellAnalysis

    def analysed(thresholds: dict[str, Any], *, plan: bool = False) -> dict[str, Any]:
        profile = parse_profile({"name": "p", "backend": "firestore", "duration": "10s", "seed": 4,
                                 "workload": {"ops": {"insert": 1.0}, "record_count": 500},
                                 "keys": {"strategy": "random"}, "schedule": {"kind": "constant", "rate": 300},
                                 "launch": {"kind": "ramp_500_50_5", "ceiling": 2000, "plan": plan},
                                 "thresholds": thresholds})
        summary = CellSummary.from_json({"operations": {"insert": {"count": 3000}}})
        plan_step(CellAnalysis(profile=profile, cell=profile.cells[0], summary=summary, measured=True,
                               run_dir=tmp_path))
        summary.thresholds = evaluate(profile.thresholds, summary)
        return summary.to_json()

    assert "plan" not in analysed({"error_rate": 0.01})  # [launch] plan = false: seconds per cell saved
    assert analysed({"error_rate": 0.01}, plan=True)["plan"]["reachable"] is True  # the default
    gated = analysed({"plan.reachable": True, "plan.time_to_target_s": 3600})
    assert gated["plan"]["reachable"] is True and gated["plan"]["target_ops_per_s"] == 2000
    assert [(t["name"], t["passed"]) for t in gated["thresholds"]] == [("plan.reachable", True),
                                                                       ("plan.time_to_target_s", True)]


def test_when_no_key_design_helps_the_fix_says_so_and_shows_the_failing_check() -> None:
    # A monotonic indexed field: its own index range takes every insert (500/s, published) whatever the key:
    # the plan names the index as the limit, and its fix (exempt the field) is checked without that range.
    d = design("firestore", "random", indexed_value="monotonic")
    p = plan(d, 2000)
    assert not p.reachable and p.sustainable_ops_per_s is not None and p.sustainable_ops_per_s.high <= 2000 / 1.05
    assert p.why.startswith("the index range index:created")
    fix = p.fix
    assert fix is not None and fix.kind == "index" and fix.value is None and "exempt created" in fix.design
    assert fix.forecast is not None and fix.forecast.passes and "index:created" in fix.why
