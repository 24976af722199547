"""The fast forecast against the per-operation reference model, on designs nobody named.

``hypothesis`` draws a design — templates with skewed and uniform tenants, calendar buckets, shards,
reversed and hashed parts; counters; field promotion; an app's own ids (a Python workload and the keys
it recorded); updates of existing keys; indexed fields; Datastore entity groups — on one of the four
stores, and a launch (constant, 500/50/5, a 10× jump; Bigtable's nodes). Each is written as a finished
one-cell run and forecast through ``reforecast`` (what ``keyramp forecast RUN --launch FILE`` calls);
the reference model replays the same launch one operation at a time at 1/k (``tests/_differential.py``).
At the mid point of the store's box the throttled shares must agree within max(0.07, 25 % of the
larger) and the verdicts match (adjacent ones only where a figure is within that of the threshold).
Scale invariance: the launch and the box ÷ k give the same share, in both models.

The per-commit tier runs 25 designs (derandomized), the extended tier 200 with the corners of the box
(docs/keyspace-model.md, "Differential suite"; ``pytest -m extended tests/forecast/test_differential.py``).
Every example is run and judged; the test fails at the end with every disagreement listed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from _designs import DesignRuns
from _differential import ABS_TOL, App, Design, LaunchPlan, Verdicts, box_of, fast, judge, reference
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import keyramp.forecast._forecast as ff
import keyramp.forecast._project as fp
import keyramp.storemodel._space as sp
from keyramp.keys import make_strategy
from keyramp.storemodel._limits import KeyLimits

settings.register_profile("differential", derandomize=True, deadline=None, database=None, print_blob=True,
                          phases=(Phase.explicit, Phase.generate),  # every example judged: no shrinking
                          suppress_health_check=list(HealthCheck))
PROFILE = settings.get_profile("differential")

STORES = ("datastore", "firestore", "firestore-datastore", "bigtable")
_CALENDAR = ("yyyymm", "yyyymmdd", "yyyymmddhh", "yyyymmddhhmm")
_PICKS = ("", ", uniform", ", zipfian", ", round_robin")
_MIXES = ((("insert", 1.0),), (("insert", 0.8), ("read", 0.2)), (("insert", 0.5), ("read", 0.3), ("update", 0.2)))
FAMILIES = ("template", "counter", "promotion", "app", "updates", "indexed", "named", "groups")
#: Operations the extended tier's reference may offer to settle (``compare(converge=True)``).
EXTENDED_OPS = 96_000
#: Launch operations at most (the reference runs them at 1/k, k ≤ K_MAX): 2 × REF_OPS at the coarsest scale ...
BUDGET = {"bigtable": 24e6, "serverless": 2.4e6}
#: ... and the per-commit tier's share of it (shorter launches: the tier must cost seconds in CI).
PER_COMMIT_BUDGET = 0.5


def _template(draw: st.DrawFn) -> str:
    n = draw(st.sampled_from((2, 5, 20, 100, 1000)))
    cal = draw(st.sampled_from(_CALENDAR))
    pick = draw(st.sampled_from(_PICKS))
    return draw(st.sampled_from((
        f"tenant({n}{pick})#seq", f"tenant({n}{pick})#{cal}#seq", f"{cal}#seq", f"shard({n})#{cal}#seq",
        f"shard({n})#timestamp", f"shard({n})#seq", "reverse(seq)", f"device({n})#reverse_ts", "hash4(user)#user",
        f"{cal}#hash4(user)#user", f"hash2(tenant({n}))#tenant({n})#seq", "uuid", f"tenant({n}{pick})#uuid")))


def _family(draw: st.DrawFn, family: str, backend: str) -> Design:
    ops = draw(st.sampled_from(_MIXES))
    if family == "template":
        return Design(family, backend, _template(draw), ops)
    if family == "counter":  # one document or row, or a few (a counter's shards): increments or updates
        op = draw(st.sampled_from(("increment", "update")))
        mix = draw(st.sampled_from((((op, 1.0),), ((op, 0.8), ("read", 0.2)))))
        count = draw(st.sampled_from((1, 3, 20)))
        return Design(family, backend, "sequential", mix, workload=(("record_count", count),))
    if family == "promotion":
        n = draw(st.sampled_from((5, 50, 500, 5000)))
        return Design(family, backend, draw(st.sampled_from((f"device({n})#timestamp", "field_promotion"))), ops)
    if family == "app":
        app = App(draw(st.sampled_from(("uuid", "orders", "tenants"))), tenants=draw(st.sampled_from((5, 50))),
                  skewed=draw(st.booleans()), reads=draw(st.sampled_from((0.0, 0.2))),
                  updates=draw(st.sampled_from((0.0, 0.1))), bumps=draw(st.sampled_from((0.0, 0.0, 0.05))),
                  index=None if backend == "bigtable" else draw(st.sampled_from((None, "time", "status"))))
        return Design(family, backend, "random", app=app)
    if family == "updates":
        mix = draw(st.sampled_from(((("update", 0.5), ("read", 0.5)), (("insert", 0.3), ("update", 0.7)),
                                    (("update", 1.0),))))
        dist = draw(st.sampled_from(("uniform", "zipfian", "hotspot", "latest")))
        count = draw(st.sampled_from((50, 1000, 100_000)))
        return Design(family, backend, draw(st.sampled_from(("random", "sequential", "hashed_prefix"))), mix,
                      workload=(("read_distribution", dist), ("record_count", count)))
    if family == "indexed":
        kind = draw(st.sampled_from(("monotonic", "prefixed", "unindexed", "document")))
        wl = ((("document", {"room": "string", "sent_at": "timestamp"}),) if kind == "document"
              else (("indexed_value", kind),))
        return Design(family, backend, draw(st.sampled_from(("random", "hashed_prefix", "sequential"))), ops,
                      workload=wl)
    if family == "groups":
        return Design(family, backend, draw(st.sampled_from(("random", "sequential"))), ops,
                      workload=(("entity_group_size", draw(st.sampled_from((5, 20, 100)))),))
    name = draw(st.sampled_from(("sequential", "timestamp_first", "random", "hashed_prefix", "reversed_id",
                                 "reverse_timestamp", "sharded", "time_bucket_shard", "domain")))
    return Design(family, backend, name, ops,
                  params=(("shards", draw(st.sampled_from((2, 8, 64, 512)))),) if name == "sharded" else ())


@st.composite
def designs(draw: st.DrawFn) -> Design:
    """Every family the issue names, on every store that has it."""
    family, backend = draw(st.sampled_from(FAMILIES)), draw(st.sampled_from(STORES))
    if (family == "groups" and backend not in ("datastore", "firestore-datastore")) or (
            family == "indexed" and backend == "bigtable"):
        family = "template"
    return _family(draw, family, backend)


@st.composite
def plans(draw: st.DrawFn, backend: str, budget: float = 1.0) -> LaunchPlan:
    """A launch the reference affords: constant (a jump from nothing), 500/50/5 or a 10× jump, as long as
    ``budget`` × ``BUDGET`` allows (the longest of 30, 20, 15, 10, 5, 3, 2 minutes that fits)."""
    bigtable = backend == "bigtable"
    base = draw(st.sampled_from((2_000.0, 8_000.0, 30_000.0, 120_000.0) if bigtable else
                                (200.0, 800.0, 2_500.0, 8_000.0, 20_000.0)))
    rate = float(round(draw(st.floats(0.6, 1.6)) * base))
    kind = draw(st.sampled_from(("constant", "ramp", "jump")))
    nodes = draw(st.integers(1, 8)) if bigtable else None
    most = budget * BUDGET["bigtable" if bigtable else "serverless"]
    for minutes in (30, 20, 15, 10, 5, 3, 2):
        plan = LaunchPlan(kind, rate, minutes, nodes)
        if plan.launch(backend).total_ops() <= most:
            return plan
    return plan


@st.composite
def cases(draw: st.DrawFn, budget: float = 1.0) -> tuple[Design, LaunchPlan]:
    design = draw(designs())
    return design, draw(plans(design.backend, budget))


#: Disagreements found and not fixed here (docs/keyspace-model.md, "Differential suite"): each excuses only its
#: own direction (the fast forecast above or below the reference) on the designs it names, and each has a
#: strict xfail below that passes the day the fast model agrees.
KNOWN: dict[str, tuple[str, str]] = {
    "group-burst": ("fast_high", "an entity group filled by ≤ 20 consecutive inserts: the fast model refuses every "
                                 "write over 1/s within each second, the reference admits a burst of up to 10 (its "
                                 "bucket: the 10-s window at 1 write/s); Google publishes a sustained rate only"),
    "moving-hot-record": ("fast_high", "updates picked by `latest` or scrambled `zipfian` while inserts run: the "
                                       "hottest record moves with every insert, the fast model holds it still"),
    "index-updates": ("fast_low", "updates of records with an indexed field write index entries (keyramp's update "
                                  "writes a new value and removes the old entry); the fast model's index ranges take "
                                  "inserts only"),
    "append-tablet-reads": ("fast_high", "an append point with reads or updates of existing records: the fast "
                                         "model's append tablet stops splitting (the split is refused and looked at "
                                         "again after 4 delays) and throttles; the reference keeps splitting it"),
    "increment-read": ("fast_high", "an increment is a read and a write row in the fast model's mix: Bigtable's "
                                    "ReadModifyWriteRow is one write, as the reference offers it, so the counter's "
                                    "node carries its writes twice (on Firestore and Datastore a counter's per-key "
                                    "limit binds long before its tablet: judged there)"),
    "favourable-jump": ("fast_high", "a jump at the favourable corner (30-s split delay, fan-out 4): the reference "
                                     "absorbs the first 10 s of each overload in a tablet's bucket, splits on 1-s "
                                     "boundaries, and hands an append point's queued writes to the pieces of each "
                                     "split; the fast model throttles whole 10-s steps and caps an append point at "
                                     "one tablet (Google publishes neither; the fast model's is the safer reading)"),
    "skewed-append-points": ("fast_low", "a few append points of skewed load (tenant(n)#seq, zipfian tenants) at "
                                         "fan-out 2: the reference cuts at the load's median, inside the hottest "
                                         "point's keys, and never separates the points; the fast model gives each "
                                         "point its own tablet, as a load-based split would"),
    "retry-storm": ("fast_low", "an app's updates and a counter at the unfavourable corner (re-offer 0.8, a "
                                "tablet of 500 ops/s under a ramp that starts at 500): the reference re-offers each "
                                "refused operation and the retries feed back on the tablet until it splits; the "
                                "fast model's retries are a steady state per step (at re-offer 0 the two agree)"),
    "spread-index-tablets": ("fast_low", "an index of a few values over spread ids (an app's `status`): the reference "
                                         "holds every index tablet to index_append_ops_per_s, Google's figure for "
                                         "sequential values, from one tablet; the fast model projects only the "
                                         "index ranges writes append to (without that limit the two agree)"),
}


def _mix(d: Design) -> set[str]:
    return {op for op, w in d.ops if w > 0}


def _points(d: Design) -> int | None:
    """The design's declared append points (0: moving, like a time bucket with shards; None: spread)."""
    made = make_strategy(d.strategy, seed=3, params=dict(d.params) or None, backend=d.backend)
    return 0 if made.traits.moving else made.append_points()


def known(d: Design, plan: LaunchPlan, label: str = "mid") -> str | None:
    """The known disagreement ``d`` belongs to at ``label``, if any (``KNOWN``)."""
    wl = dict(d.workload)
    mix = _mix(d)
    if d.app is not None and d.app.index == "status":
        return "spread-index-tablets"
    if d.app is not None and d.app.updates and label == "unfavourable":
        return "retry-storm"
    if (label != "favourable" and d.family == "template" and d.strategy.startswith("tenant(")
            and not any(p in d.strategy for p in ("uniform", "round_robin")) and 1 < (_points(d) or 0) <= 8):
        return "skewed-append-points"
    if "increment" in mix and d.backend == "bigtable":  # elsewhere the counter's per-key limit decides first
        return "increment-read"
    if wl.get("entity_group_size", 0) and wl["entity_group_size"] <= 20 and "insert" in mix:
        return "group-burst"
    if wl.get("read_distribution") in ("latest", "zipfian") and "insert" in mix and mix & {"update", "increment"}:
        return "moving-hot-record"
    indexed = wl.get("indexed_value") in ("monotonic", "prefixed") or "document" in wl
    if indexed and "update" in mix and d.backend != "bigtable":
        return "index-updates"
    if label == "favourable" and plan.kind == "jump":
        return "favourable-jump"
    points = None if d.app is not None else _points(d)
    if "insert" in mix and mix - {"insert"} and points is not None and 0 < points <= 8:
        return "append-tablet-reads"
    return None


def excused(d: Design, plan: LaunchPlan, v: Verdicts, label: str = "mid") -> str | None:
    """The known disagreement that explains ``v``'s problems: its class, in its direction."""
    name = known(d, plan, label)
    if name is None:
        return None
    high = v.fast_share > v.ref_share + v.bias
    return name if (KNOWN[name][0] == "fast_high") == high else None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> DesignRuns:
    return DesignRuns(tmp_path_factory.mktemp("differential"))


def compare(runs: DesignRuns, design: Design, plan: LaunchPlan, label: str = "mid", *,
            converge: bool = False) -> Verdicts:
    """Fast vs reference at one point of the box: ``mid`` (the fast forecast over the whole box, read at its
    mid point), or ``favourable`` / ``unfavourable`` (a box of that one point, ``--params``). ``converge``: the
    reference at ever finer scales until it settles (``reference(converge=True)``, up to ``EXTENDED_OPS``)."""
    finer = {"converge": True, "max_ops": EXTENDED_OPS} if converge else {}
    if label == "mid":
        return judge(fast(runs, design, plan), reference(runs, design, plan, **finer))
    point = box_of(design.backend).corner(favourable=label == "favourable")
    return judge(fast(runs, design, plan, point=point), reference(runs, design, plan, point=point, **finer))


#: The issue's designs (80 % writes), judged first in every tier: a counter on Firestore under 500/50/5 and on
#: a 19-node Bigtable; tenant × hour × sequence at 10,000 ops/s (its hottest tenant); field promotion; an app's
#: uuids under 500/50/5; an app's indexed time field over spread ids; a monotonic indexed field; and the
#: quickstart's sequential ids.
ISSUE_CASES = (
    (Design("counter", "firestore", "sequential", (("increment", 0.8), ("read", 0.2)), workload=(("record_count", 1),)),
     LaunchPlan("ramp", 100_000.0, 20)),
    (Design("counter", "bigtable", "sequential", (("increment", 0.8), ("read", 0.2)), workload=(("record_count", 1),)),
     LaunchPlan("constant", 20_000.0, 10, nodes=19)),
    (Design("template", "firestore", "tenant(20)#yyyymmddhh#seq", (("insert", 0.8), ("read", 0.2))),
     LaunchPlan("constant", 10_000.0, 5)),
    (Design("promotion", "firestore", "device(5000)#timestamp", (("insert", 0.8), ("read", 0.2))),
     LaunchPlan("ramp", 10_000.0, 20)),
    (Design("app", "firestore", "random", app=App("uuid")), LaunchPlan("ramp", 5000.0, 20)),
    (Design("app", "firestore", "random", app=App("uuid", index="time")), LaunchPlan("constant", 2000.0, 15)),
    (Design("indexed", "firestore", "random", (("insert", 0.8), ("read", 0.2)),
            workload=(("indexed_value", "monotonic"),)), LaunchPlan("jump", 3000.0, 10)),
    (Design("named", "datastore", "sequential", (("insert", 0.8), ("read", 0.2))), LaunchPlan("ramp", 10_000.0, 20)),
)

#: Designs on which the suite found a defect, fixed since, judged with the issue's in every tier: an app's
#: updates of the records it just made (one growing id) land where its appends do (the fast model spread them
#: over the records that existed by the end of the recording: 0.25 vs the reference's 0.35).
FOUND_CASES = (
    (Design("app", "firestore-datastore", "random", app=App("orders", tenants=5, skewed=True, reads=0.0, updates=0.1)),
     LaunchPlan("constant", 1280.0, 30)),
)


def run_examples(runs: DesignRuns, examples: int, labels: tuple[str, ...] = ("mid",),
                 report: Callable[[dict[str, Any]], None] | None = None,
                 converge: bool = False, budget: float = 1.0) -> tuple[list[str], list[str]]:
    """Judge the fixed cases and ``examples`` drawn ones (within ``budget`` × ``BUDGET``) at ``labels``."""
    failures: list[str] = []
    excuses: list[str] = []

    @settings(PROFILE, max_examples=examples)
    @given(case=cases(budget))
    def drawn(case: tuple[Design, LaunchPlan]) -> None:
        each(case)

    def each(case: tuple[Design, LaunchPlan]) -> None:
        design, plan = case
        for label in labels:
            started = time.perf_counter()
            v = compare(runs, design, plan, label, converge=converge)
            why = excused(design, plan, v, label) if v.problems else None
            line = f"{design} {plan} at {label}: {v} -- {'; '.join(v.problems)}"
            if v.problems:
                (excuses if why else failures).append(f"[{why}] {line}" if why else line)
            if report is not None:
                report({"design": repr(design), "plan": repr(plan), "label": label, "fast": [v.fast_share, v.fast_peak,
                        v.fast_verdict], "reference": [v.ref_share, v.ref_peak, v.ref_verdict], "k": v.k,
                        "bias": v.bias, "spread": v.spread, "problems": v.problems, "known": why,
                        "seconds": time.perf_counter() - started})

    for case in ISSUE_CASES + FOUND_CASES:
        each(case)
    drawn()
    return failures, excuses


@pytest.mark.slow
def test_the_fast_forecast_agrees_with_the_reference_on_25_designs(runs: DesignRuns) -> None:
    """The issue's 8 designs, the suite's own finds and drawn ones, 25 in all, at the mid point of the box."""
    failures, excuses = run_examples(runs, 25 - len(ISSUE_CASES + FOUND_CASES), budget=PER_COMMIT_BUDGET)
    assert not failures, f"{len(failures)} of 25 designs disagree:\n" + "\n".join(failures + excuses)


#: Designs whose share does not depend on how many keys the launch writes (the box ÷ k is the same store for
#: them): an entity group, or updates over a population inserts grow, hold their own counts.
def _scale_free(case: tuple[Design, LaunchPlan]) -> bool:
    d, _ = case
    return d.family not in ("groups", "updates") and not (d.family == "counter" and "insert" in _mix(d))


@settings(PROFILE, max_examples=4)
@given(case=cases(PER_COMMIT_BUDGET).filter(_scale_free), k=st.sampled_from((4.0, 10.0, 25.0)))
def test_the_launch_and_the_box_divided_by_k_give_the_same_share(runs: DesignRuns, case: tuple[Design, LaunchPlan],
                                                                  k: float) -> None:
    """Both models: the fast forecast at rate ÷ k over a box whose capacities and per-key limits are ÷ k
    (``--params``) at every point of its band; the reference at two scales (and seeds): within ``ABS_TOL``, the
    precision the tolerance is built on."""
    design, plan = case
    whole, small = fast(runs, design, plan), fast(runs, design, plan, k=k)
    for end in ("low", "mid", "high"):
        a, b = whole["throttled_fraction"][end], small["throttled_fraction"][end]
        assert abs(a - b) <= 0.02, (end, a, b, design, plan)
    one = reference(runs, design, plan)
    two = reference(runs, design, plan, k=max(1.0, one.k / 2), seed=1)
    assert abs(one.outcome.throttled_fraction - two.outcome.throttled_fraction) <= ABS_TOL, (design, plan)


def _no_key_limits(mp: pytest.MonkeyPatch) -> None:
    mp.setattr("keyramp.forecast._model._key_limit",
               lambda projection, point, t, ops, attempts, throttled, retry: (attempts, 0.0))


def _no_index_ranges(mp: pytest.MonkeyPatch) -> None:
    real = ff.run_point
    mp.setattr(ff, "run_point", lambda projection, **kw: real(dataclasses.replace(projection, index={}), **kw))


def _append_points_as_hashed(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(fp, "_frontier_range", lambda points, launch, **kw: fp._spread_range(launch, **kw))


def _capacity_twice(mp: pytest.MonkeyPatch) -> None:
    real = ff.run_point

    def doubled(projection: Any, *, point: Mapping[str, float], **kw: Any) -> Any:
        more = {n: v * 2 if n in ("tablet_ops_per_s", "node_write_rows_per_s", "node_read_rows_per_s") else v
                for n, v in point.items()}
        return real(projection, point=more, **kw)

    mp.setattr(ff, "run_point", doubled)


def _reference_splits_any_cut(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(sp, "_useful", lambda recent, cuts, fanout: bool(cuts))


def _reference_without_key_limits(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(KeyLimits, "ok", lambda self, units, now: True)


_COUNTER = (Design("counter", "firestore", "sequential", (("increment", 1.0),), workload=(("record_count", 3),)),
            LaunchPlan("constant", 1170.0, 30))
_APPEND = (Design("named", "firestore", "sequential"), LaunchPlan("constant", 3000.0, 10))
#: Defects planted in the fast model or the reference (``True``: in the reference, run again under the plant),
#: each with a design it fails and the point of the box it shows at (docs/keyspace-model.md lists what each
#: fails of the whole per-commit tier).
PLANTS = {"per-key limits ignored": (_no_key_limits, _COUNTER, "mid", False),
          "index ranges left out": (_no_index_ranges, ISSUE_CASES[5], "mid", False),
          "append points read as hashed keys": (_append_points_as_hashed, ISSUE_CASES[7], "mid", False),
          "a tablet's capacity read twice over": (_capacity_twice, ISSUE_CASES[7], "mid", False),
          "reference: an append point's split is useful (any cut)": (_reference_splits_any_cut, _APPEND,
                                                                      "favourable", True),
          "reference: per-key limits dropped": (_reference_without_key_limits, _COUNTER, "mid", True)}


@pytest.mark.parametrize("plant", PLANTS)
def test_a_planted_defect_fails_the_comparison(runs: DesignRuns, monkeypatch: pytest.MonkeyPatch, plant: str) -> None:
    patch, (design, plan), label, in_reference = PLANTS[plant]
    assert not compare(runs, design, plan, label).problems
    patch(monkeypatch)
    if in_reference:  # the reference's runs are kept per design: run it again under the plant
        monkeypatch.setattr(runs, "memo", {})
    planted = compare(runs, design, plan, label)
    assert planted.problems and not excused(design, plan, planted, label), f"{plant}: {planted}"


#: One design of each known disagreement (``KNOWN``): strict xfails, so the day the fast model agrees says so.
KNOWN_CASES = {
    "group-burst": (Design("groups", "datastore", "random", workload=(("entity_group_size", 5),)),
                    LaunchPlan("constant", 120.0, 30)),
    "moving-hot-record": (Design("updates", "firestore-datastore", "random", (("insert", 0.3), ("update", 0.7)),
                                 workload=(("read_distribution", "zipfian"), ("record_count", 100_000))),
                          LaunchPlan("ramp", 6584.0, 20)),
    "index-updates": (Design("indexed", "datastore", "random", (("insert", 0.5), ("read", 0.3), ("update", 0.2)),
                             workload=(("document", {"room": "string", "sent_at": "timestamp"}),)),
                      LaunchPlan("ramp", 15651.0, 20)),
    "append-tablet-reads": (Design("named", "firestore", "sequential", (("insert", 0.5), ("read", 0.3),
                                                                          ("update", 0.2))),
                            LaunchPlan("ramp", 20000.0, 20)),
    "increment-read": (ISSUE_CASES[1][0], LaunchPlan("constant", 20_000.0, 10, nodes=19)),
    "favourable-jump": (Design("named", "firestore-datastore", "timestamp_first", (("insert", 0.5), ("read", 0.3),
                                                                                   ("update", 0.2))),
                        LaunchPlan("jump", 6469.0, 10)),
    "skewed-append-points": (Design("template", "firestore", "tenant(2)#seq"), LaunchPlan("ramp", 16578.0, 20)),
    "retry-storm": (Design("app", "firestore", "random", app=App("uuid", tenants=5, updates=0.1, bumps=0.05)),
                    LaunchPlan("ramp", 2250.0, 20)),
    "spread-index-tablets": (Design("app", "firestore", "random", app=App("uuid", tenants=50, reads=0.0, updates=0.1,
                                                                            bumps=0.05, index="status")),
                             LaunchPlan("constant", 20896.0, 2)),
}
#: ... and the point of the box each shows at.
KNOWN_LABELS = {"increment-read": "favourable", "favourable-jump": "favourable", "retry-storm": "unfavourable",
                "spread-index-tablets": "favourable"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN[n][1]))
                                  for n in KNOWN_CASES])
def test_known_disagreements(runs: DesignRuns, name: str) -> None:
    design, plan = KNOWN_CASES[name]
    label = KNOWN_LABELS.get(name, "mid")
    assert known(design, plan, label) == name
    v = compare(runs, design, plan, label)
    assert not v.problems, f"{name}: {v}"


@pytest.mark.extended
@pytest.mark.timeout(3 * 3600)
def test_extended_200_designs_at_the_mid_point_and_the_corners(runs: DesignRuns) -> None:
    """200 designs, each at the mid point and both corners of the box; ``KEYRAMP_DIFFERENTIAL_OUT``: a JSON
    lines file of every comparison (the figures in docs/keyspace-model.md)."""
    out = os.environ.get("KEYRAMP_DIFFERENTIAL_OUT")

    def report(row: dict[str, Any]) -> None:
        if out:
            with Path(out).open("a", encoding="utf-8") as sink:
                sink.write(json.dumps(row) + "\n")

    failures, excuses = run_examples(runs, 200, ("mid", "favourable", "unfavourable"), report,  # + the issue's 8
                                     converge=True)
    assert not failures, f"{len(failures)} comparisons disagree ({len(excuses)} known):\n" + "\n".join(failures)
