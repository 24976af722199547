"""One cell planned: reachable or not and why, the ramp or the fix, and the cost (``plan_cell``).

The searches are the ``Planner``'s (``_planner``); this module decides which to run and
says what they found in words. Reachable means the steady check at the target passes on
the plan's nodes. When it does not, the fix depends on what limits: a Bigtable cluster
that is too small (the design sustains the target on a large one) gets ``nodes``; a design
with append points gets ``shards``; anything else, or a design no shard count rescues,
gets ``key_design`` (spread keys, checked the same way).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from keyramp.core import fmt
from keyramp.forecast._cost import cell_cost, record_bytes
from keyramp.forecast._plan_checks import Judged
from keyramp.forecast._plan_ramp import planned_ramp, ramp_basis
from keyramp.forecast._plan_text import ceiling_text
from keyramp.forecast._planner import Planner, shard_template
from keyramp.forecast._prices import Prices
from keyramp.profile import Ramp50050
from keyramp.results import CellLaunchPlan, Fix, PlanCost, Ramp, RateBand

__all__ = ["plan_cell"]

#: Shard counts are searched up to this many times the first guess.
_SHARD_CAP = 16
_SPREAD = "random"


def plan_cell(planner: Planner, *, cell_id: str, prices: Prices | None = None,
              location: str | None = None) -> CellLaunchPlan:
    """The plan of ``planner``'s cell at its target (``prices``: None leaves the cost out)."""
    d, target = planner.design, planner.target
    check = planner.full(d.strategy, planner.steady_launch(target), "steady")
    common: dict[str, Any] = {
        "cell": cell_id, "backend": d.backend, "strategy": d.strategy, "target_ops_per_s": target,
        "throttle": planner.throttle, "nodes": planner.nodes, "storage": planner.storage,
        "keys": None if check.forecast.keys is None else check.forecast.keys.keys,
        "params_from": planner.box.origin, "params": planner.box.to_json(),
    }
    if check.forecast.band is None:
        return CellLaunchPlan(**common, reachable=False, why=f"no forecast: {check.forecast.reason}",
                              check=check.check(),
                              forecasts=planner.forecasts)
    sustainable, probe = planner.sustainable(d.strategy)
    ramp: Ramp | None = None
    fix: Fix | None = None
    hottest = _hottest_key(planner)
    if check.passes:
        ramp = planned_ramp(planner, d.strategy)
        why = _why_reachable(planner, sustainable, probe, ramp)
    elif hottest is not None:  # a key over its limit: more nodes cannot split one key, shards of it can
        fix = _key_shards_fix(planner, hottest)
        why = _why_key(planner, hottest, check)
    elif planner.cluster and planner.steady(d.strategy, target, planner.design_nodes()).passes():
        fix = _nodes_fix(planner, d.strategy)
        why = _why_cluster(planner, check)
    else:  # recorded keys (a Python workload's, allocated ids): no other design can be regenerated
        recorded = common["keys"] == "recorded"
        fix = ((None if recorded else _shards_fix(planner, sustainable)) or _index_fix(planner, check)
               or _key_design_fix(planner))
        why = _why_design(planner, sustainable, check, fix)
    return CellLaunchPlan(**common, reachable=check.passes, why=why, sustainable_ops_per_s=sustainable,
                          checked_to_ops_per_s=probe, check=check.check(), ramp=ramp, fix=fix,
                          cost=_cost(planner, ramp, fix, prices, location), forecasts=planner.forecasts)


def _limit(planner: Planner) -> str:
    return f"throttled ≤ {fmt.percent(planner.throttle)} at every point of the band"


def _band_text(band: RateBand) -> str:
    one = ceiling_text
    return f"{one(band.low)} (unfavourable end) – {one(band.high)} (favourable end), mid {one(band.mid)}"


def _why_reachable(planner: Planner, sustainable: RateBand | None, probe: float, ramp: Ramp | None) -> str:
    where = "" if planner.nodes is None else f" on {fmt.plural(planner.nodes, str(planner.storage).upper() + ' node')}"
    text = (f"{fmt.ops_per_s(planner.target)}{where} stays {_limit(planner)} once the store has split; the key design "
            + (f"sets no ceiling below {fmt.ops_per_s(probe)}" if sustainable is None
               else f"sustains {_band_text(sustainable)}"))
    if ramp is None:
        within = ("within Google's published rule (500/50/5 or slower) " if ramp_basis(planner)[0] == "published_rule"
                  else "")
        text += (f"; but no ramp of the 500/50/5 family {within}gets there under the limit (start and step length "
                 "searched: steps up to 1 h, ramps up to 4 h to the target)")
    return text


def _why_cluster(planner: Planner, check: Judged) -> str:
    most = (planner.nodes or 1) * planner.one_tablet()
    nodes = fmt.plural(planner.nodes, str(planner.storage).upper() + " node")
    return (f"{nodes} serve{'s' if planner.nodes == 1 else ''} about {fmt.ops_per_s(most)} of this op mix at "
            f"the low end of the per-node range: {fmt.percent(check.shares['high'])} of "
            f"{fmt.ops_per_s(planner.target)} "
            "throttled once split; the key design itself sustains the target on a larger cluster")


def _ranges_take(index: Iterable[str]) -> str:
    names = list(index)
    text = ", ".join(names)
    return f"the index range {text} takes" if len(names) == 1 else f"the index ranges {text} take"


def _why_design(planner: Planner, sustainable: RateBand | None, check: Judged, fix: Fix | None = None) -> str:
    proj = check.forecast.projection
    points = None if proj is None else proj.docs.points
    if fix is not None and fix.kind == "index" and proj is not None:  # the index is the limit, not the keys
        return (f"{_ranges_take(proj.index)} every insert: an indexed value that grows with "
                f"time appends at one place whatever the document keys, and limits the design to "
                f"{_band_text(sustainable) if sustainable is not None else 'less than the target'}, below "
                f"{fmt.ops_per_s(planner.target)} ({fmt.percent(check.shares['high'])} throttled once split at the "
                "unfavourable end); the document keys alone pass")
    text = (f"the key design sustains {_band_text(sustainable)}" if sustainable is not None
            else "the key design throttles at the target even where it sustains more")
    text += f": below {fmt.ops_per_s(planner.target)} ({fmt.percent(check.shares['high'])} throttled once split at " \
            f"the unfavourable end)"
    if points:
        text += (f"; its {fmt.plural(points, 'append point')} {'takes' if points == 1 else 'take'} every insert, "
                 "and an append point never splits away")
    if proj is not None and proj.index:
        text += (f"; the index {'range' if len(proj.index) == 1 else 'ranges'} {', '.join(proj.index)} also "
                 f"{'takes' if len(proj.index) == 1 else 'take'} every insert")
    return text


def _hottest_key(planner: Planner) -> float | None:
    """The hottest unit's writes/s at the target when it exceeds the low end of the per-key limit, else None."""
    limit = planner.box.ranges.get("key_write_ops_per_s")
    if limit is None:
        return None
    launch = planner.steady_launch(planner.target, planner.design_nodes())
    hottest = planner.forecaster(planner.design.strategy).hottest_key(launch, planner.box)
    return hottest if hottest > limit.low else None


def _unit(planner: Planner) -> str:
    """What one key is on this store (the per-key limit's unit: document, entity, entity group, row)."""
    return planner.box.ranges["key_write_ops_per_s"].unit.rpartition("per ")[2] or "key"


def _why_key(planner: Planner, hottest: float, check: Judged) -> str:
    limit = planner.box.ranges["key_write_ops_per_s"]
    return (f"one {_unit(planner)} takes {fmt.count(round(hottest))} writes/s at {fmt.ops_per_s(planner.target)}, "
            f"over what a single key sustains ({fmt.count(limit.low)}–{fmt.count(limit.high)} writes/s, "
            "key_write_ops_per_s): "
            f"{fmt.percent(check.shares['high'])} throttled once split at the unfavourable end; a key never splits, so "
            "no node count or ramp helps — spread its writes over shards (or add up in memory and write the sum "
            "now and then, BP-RATE-4)")


def _key_shards_fix(planner: Planner, hottest: float) -> Fix:
    """The smallest n such that every key spread over n adjacent keys (a distributed counter) passes at the
    target, and one fewer's check."""
    d, unit = planner.design, _unit(planner)
    base = planner.forecaster(d.strategy)
    nodes = planner.design_nodes()

    def label(n: int) -> str:
        return planner.variant(f"{d.strategy} with each key over {n:,} shards", base.variant(key_shards=n))

    guess = max(2, math.ceil(hottest / planner.box.ranges["key_write_ops_per_s"].low))
    cap = min(10_000_000, _SHARD_CAP * guess)
    n = planner.smallest(lambda k: planner.steady(label(k), planner.target, nodes).passes(), guess, cap=cap)
    if n is None:
        return Fix(kind="key_shards", value=None, design=f"each hot {unit} over more than {cap:,} shards",
                   why=f"no shard count up to {cap:,} passes at {fmt.ops_per_s(planner.target)}")
    full = planner.full(label(n), planner.steady_launch(planner.target, nodes), "steady")
    fewer = planner.full(label(n - 1), planner.steady_launch(planner.target, nodes), "steady") if n > 1 else None
    fix_nodes, _, _ = _cluster_nodes(planner, label(n))
    why = (f"{fmt.count(n)} shards of each hot {unit} (a distributed counter: each shard one {unit}, a write picks "
           f"one) take its {fmt.count(round(hottest))} writes/s: {_limit(planner)} once split" +
           ("" if fewer is None else f"; {fmt.count(n - 1)} shards do not"))
    if fix_nodes is not None:
        why += f"; on {fix_nodes} {str(planner.storage).upper()} nodes"
    return Fix(kind="key_shards", value=n, design=f"each hot {unit} over {fmt.count(n)} shards", why=why,
               forecast=full.check(), one_fewer=None if fewer is None else fewer.check(), nodes=fix_nodes,
               ramp=planned_ramp(planner, label(n), fix_nodes))


def _points(planner: Planner, strategy: str) -> int:
    made = replace(planner.design, strategy=strategy).key_strategy
    return 1 if isinstance(made, str) else int(made.append_points() or 1)


def _smallest(planner: Planner, design: Callable[[int], tuple[str, int | None]], guess: int,
              cap: int) -> tuple[int, Judged, Judged | None] | None:
    """The smallest n whose ``design(n)`` (strategy, nodes) passes the steady check at the target, its
    full forecast, and one fewer's (which fails); None when nothing up to ``cap`` passes."""
    def check(n: int, *, full: bool = False) -> Any:
        strategy, nodes = design(n)
        if full:
            return planner.full(strategy, planner.steady_launch(planner.target, nodes), "steady")
        return planner.steady(strategy, planner.target, nodes).passes()

    n = planner.smallest(check, guess, cap=cap)
    if n is None:
        return None
    return n, check(n, full=True), check(n - 1, full=True) if n > 1 else None


def _cluster_nodes(planner: Planner, strategy: str) -> tuple[int | None, Judged | None, Judged | None]:
    """Bigtable: the smallest node count for ``strategy`` at the target (and one fewer's check)."""
    if not planner.cluster:
        return None, None, None
    guess = max(1, round(((planner.unbounded_nodes(planner.target) or 2) - 1) / 1.5))
    found = _smallest(planner, lambda n: (strategy, n), guess, cap=max(64, 8 * guess))
    return (None, None, None) if found is None else found


def _nodes_fix(planner: Planner, strategy: str) -> Fix:
    nodes, full, fewer = _cluster_nodes(planner, strategy)
    kind = str(planner.storage).upper()
    if nodes is None or full is None:
        return Fix(kind="nodes", value=None, design=f"more {kind} nodes", why="no node count up to the cap passes")
    return Fix(kind="nodes", value=nodes, design=f"{nodes} {kind} nodes", nodes=nodes, forecast=full.check(),
               one_fewer=None if fewer is None else fewer.check(), ramp=planned_ramp(planner, strategy, nodes),
               why=f"{nodes} {kind} nodes pass at {fmt.ops_per_s(planner.target)} ({_limit(planner)} once split)"
                   + ("" if fewer is None else f"; {nodes - 1} do not"))


def _shards_fix(planner: Planner, sustainable: RateBand | None) -> Fix | None:
    """The smallest ``shard(N)#<key>`` that passes at the target; None: no such template, or none up to the cap."""
    d, target = planner.design, planner.target
    one = shard_template(d.strategy, 1)
    if one is None or sustainable is None or not sustainable.low:
        return None
    per_point = sustainable.low / _points(planner, d.strategy)
    # one append point of a single-point design also takes its reads: several usually take ~10 % more each
    guess = max(1, math.ceil(0.9 * target / (per_point * _points(planner, one))))
    nodes = planner.design_nodes()
    found = _smallest(planner, lambda n: (str(shard_template(d.strategy, n)), nodes), guess,
                      cap=min(1_000_000, _SHARD_CAP * guess))
    if found is None:
        return None
    shards, full, fewer = found
    template = str(shard_template(d.strategy, shards))
    fix_nodes, _, _ = _cluster_nodes(planner, template)
    why = (f"{fmt.count(shards)} shards spread the inserts over {fmt.count(shards * _points(planner, one))} append "
           f"points: {_limit(planner)} once split"
           + ("" if fewer is None else f"; {fmt.count(shards - 1)} shards do not"))
    if fix_nodes is not None:
        why += f"; on {fix_nodes} {str(planner.storage).upper()} nodes"
    return Fix(kind="shards", value=shards, design=template, why=why, forecast=full.check(),
               one_fewer=None if fewer is None else fewer.check(), nodes=fix_nodes,
               ramp=planned_ramp(planner, template, fix_nodes))


def _index_fix(planner: Planner, check: Judged) -> Fix | None:
    """The cell's indexed fields exempted, when an index range is what limits: its own keys (the ones the
    recording shows, or the design's) pass once no index range takes every insert. None: no index range, or
    the keys fail without it too (another fix)."""
    proj = check.forecast.projection
    if proj is None or not proj.index:
        return None
    d, nodes = planner.design, planner.design_nodes()
    label = planner.variant(f"{d.strategy} without its index ranges", planner.forecaster(d.strategy).variant(
        indexed=False))
    full = planner.full(label, planner.steady_launch(planner.target, nodes), "steady")
    if not full.passes:
        return None
    fields = ", ".join(n.removeprefix("index:").split(" ")[0] for n in proj.index)
    return Fix(kind="index", value=None, design=f"exempt {fields} from indexing, or index it behind a "
               "high-cardinality prefix (a composite index led by another field)",
               why=f"{_ranges_take(proj.index)} every insert at {fmt.ops_per_s(planner.target)}: an indexed value "
                   "that grows with time appends at one place whatever the document keys (about 500 writes/s, "
                   f"index_append_ops_per_s); without it the keys pass ({_limit(planner)} once split)",
               forecast=full.check(), ramp=planned_ramp(planner, label, nodes))


def _key_design_fix(planner: Planner) -> Fix:
    """No shard count rescues the design (or it has no append point to shard): spread keys, checked."""
    full = planner.full(_SPREAD, planner.steady_launch(planner.target, planner.design_nodes()), "steady")
    nodes, _, _ = _cluster_nodes(planner, _SPREAD) if full.passes else (None, None, None)
    if full.forecast.band is None:
        why = f"another key design cannot be forecast here ({full.forecast.reason}): spread the keys and re-run"
    elif full.passes:
        why = ("no shard count of this key design passes (or it has no append point to shard); keys spread evenly "
               "(allocated or random ids, a hashed prefix) pass")
    else:
        proj = full.forecast.projection
        ranges = list(proj.index) if proj is not None and proj.index else []
        one = len(ranges) == 1
        index = f"the index range{'' if one else 's'} {', '.join(ranges)} take{'s' if one else ''} every insert"
        why = ("even keys spread evenly do not pass: " + (f"{index} whatever the key (exempt the field from "
               "indexing, or spread its values)" if ranges else f"{fmt.percent(full.shares['high'])} throttled once "
                                                                f"split"))
    return Fix(kind="key_design", value=None, design="allocated or random ids (keys spread evenly)", why=why,
               forecast=full.check(), nodes=nodes,
               ramp=planned_ramp(planner, _SPREAD, nodes) if full.passes else None)


def _cost(planner: Planner, ramp: Ramp | None, fix: Fix | None, prices: Prices | None,
          location: str | None) -> PlanCost | None:
    """The launch's hour at the target and the planned ramp (the fix's, when there is one)."""
    if prices is None:
        return None
    d = planner.design
    planned = fix.ramp if fix is not None else ramp
    schedule = None if planned is None else Ramp50050(start_ops=planned.shape.start_ops, growth=planned.shape.growth,
                                                      step_s=planned.shape.step_s, ceiling=planner.target)
    workload = d.settings.workload if d.settings is not None else None
    nodes = fix.nodes if fix is not None and fix.nodes else planner.nodes
    return cell_cost(backend=d.backend, mix=d.mix, target_ops_per_s=planner.target, prices=prices, ramp=schedule,
                     ramp_s=0.0 if planned is None else planned.time_to_target_s, location=location, nodes=nodes,
                     storage=planner.storage, bytes_per_record=record_bytes(workload) if workload else 0.0,
                     python_workload=d.python_workload).to_doc()
