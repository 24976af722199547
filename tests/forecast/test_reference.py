"""The reference streams (``forecast/_reference.py``): a launch's operations as the store sees them.

Built from the cell's own key code and the recorded keys, never from the fast projection: what
is checked here is that each operation is the one the workload would make (keys, index entries,
units, the launch's clock), and that Google's answers come out of the reference model for the
issue's designs (a counter, its shards, spread keys under 500/50/5).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from keyramp.backends import spec_for
from keyramp.core._types import key_sort_text
from keyramp.forecast._reference import launch_stream, recorded_stream
from keyramp.forecast._reference_ops import value_bytes
from keyramp.profile import read_settings
from keyramp.profile._launch import LaunchSettings
from keyramp.profile._profile import parse_profile
from keyramp.storemodel import StoreModel, StoreOp, reference_run
from keyramp.workload import CellWorkload


def design(backend: str, strategy: str, ops: Mapping[str, float], **workload: Any) -> tuple[Any, str]:
    raw = {"name": "design", "backend": backend, "duration": "10s", "seed": 3,
           "workload": {"ops": dict(ops), "record_count": 500, **workload},
           "keys": {"strategy": strategy}, "schedule": {"kind": "constant", "rate": 300}}
    profile = parse_profile(raw)
    return read_settings(json.loads(json.dumps(profile.data))), profile.cells[0].strategy  # as a manifest keeps it


def stream(backend: str, strategy: str, ops: Mapping[str, float], *, rate: float = 100.0, duration_s: float = 60.0,
           k: float = 1.0, seed: int = 0, **workload: Any) -> list[tuple[float, StoreOp]]:
    profile, strat = design(backend, strategy, ops, **workload)
    return list(launch_stream(settings=profile, backend=backend, strategy=strat, rate=lambda t: rate,
                              duration_s=duration_s, k=k, seed=seed))


def test_inserts_take_the_next_index_and_its_key_from_the_cells_own_key_code() -> None:
    ops = stream("firestore", "sequential", {"insert": 1.0}, rate=200.0, duration_s=30.0)
    assert ops == stream("firestore", "sequential", {"insert": 1.0}, rate=200.0, duration_s=30.0)  # a seed's
    times = [t for t, _ in ops]
    assert times == sorted(times) and times[0] >= 0 and times[-1] < 30.0
    assert abs(len(ops) - 6000) < 4 * 6000 ** 0.5  # a Poisson process at 200/s for 30 s
    profile, strat = design("firestore", "sequential", {"insert": 1.0})
    wl = CellWorkload(backend="firestore", strategy=strat, settings=profile)
    docs = [op.accesses[0].key for _, op in ops]
    assert docs[:3] == [key_sort_text(wl.key_of(i)).encode() for i in (500, 501, 502)]  # after 500 preloaded
    assert docs == sorted(docs) and all(op.units == (op.accesses[0].key,) for _, op in ops)
    assert len(stream("firestore", "sequential", {"insert": 1.0}, rate=200.0, duration_s=30.0, k=10)) < 700


def test_reads_updates_and_counters_pick_existing_records_through_the_read_distribution() -> None:
    ops = stream("firestore", "random", {"read": 0.25, "update": 0.25, "increment": 0.25, "delete": 0.25},
                 read_distribution="hotspot", record_count=500)
    kinds = Counter(op.kind for _, op in ops)
    assert set(kinds) == {"read", "write", "transform", "delete"}
    hot = Counter(op.accesses[0].key for _, op in ops).most_common(1)[0][1]
    assert hot > 5 * len(ops) / 500  # a hotspot distribution: far above a uniform key's share
    assert all(not a.write for _, op in ops if op.kind == "read" for a in op.accesses)
    assert all(op.units for _, op in ops if op.kind != "read")


def test_index_entries_follow_the_record_and_the_launch_clock() -> None:
    mono = stream("firestore", "random", {"insert": 1.0}, indexed_value="monotonic")
    entries = [a for _, op in mono for a in op.accesses if a.space.startswith("index:")]
    assert {a.space for a in entries} == {"index:created"} and len(entries) == len(mono)
    values = [a.key[:9] for a in entries]
    assert values == sorted(values)  # one append point in the index, whatever the document ids
    t0, t1 = mono[0][0], mono[-1][0]
    assert value_bytes(1_700_000_000_000 + int(1000 * t0)) == values[0]  # created = launch time, in ms
    assert value_bytes(1_700_000_000_000 + int(1000 * t1)) == values[-1]
    assert not [a for _, op in stream("firestore", "random", {"insert": 1.0}, indexed_value="unindexed")
                for a in op.accesses if a.space.startswith("index:")]
    assert all(a.space == "rows" for _, op in stream("bigtable", "random", {"insert": 1.0}, indexed_value="monotonic")
               for a in op.accesses)
    shaped = stream("firestore", "random", {"insert": 1.0}, document={
        "tags": {"type": "array", "of": "string", "items": 3, "values": 50},
        "text": {"type": "string", "size": 20, "indexed": False}, "sender": {"type": "map", "fields": {"id": "int"}}})
    spaces = Counter(a.space for _, op in shaped[:10] for a in op.accesses)
    assert spaces == {"documents": 10, "index:tags": 30, "index:sender.id": 10}


def test_time_templates_bucket_by_the_launchs_own_clock() -> None:
    ops = stream("firestore", "tenant(20)#yyyymmddhh#seq", {"insert": 1.0}, rate=2.0, duration_s=7200.0)
    hours = Counter(op.accesses[0].key.split(b"#")[1] for _, op in ops)
    assert len(hours) in (2, 3)  # two hours of the launch: two or three calendar hours, never thousands
    assert min(hours.values()) < max(hours.values()) and sum(hours.values()) == len(ops)


def test_at_one_kth_an_insert_takes_the_index_the_launch_inserts_then() -> None:
    """A thinning of the launch, not a slowed copy: at k = 50 the insert at second t is the launch's
    (record_count + 1,000 t), so a pattern of the insert index (``shard(1000)``, a prefixed ``created``)
    cycles at the launch's pace; reads pick among the records the launch has made by then."""
    ops = stream("firestore", "sequential", {"insert": 0.5, "read": 0.5}, rate=2000.0, duration_s=60.0, k=50)
    inserts = [(t, int(op.accesses[0].key)) for t, op in ops if op.kind == "write"]
    assert all(abs(key - 1 - (500 + 1000 * t)) <= 200 for t, key in inserts), inserts[:5]  # ids are index + 1
    assert [key for _, key in inserts] == sorted({key for _, key in inserts})  # each once, in order
    late = [int(op.accesses[0].key) for t, op in ops if op.kind == "read" and t > 50]
    assert max(late) > 40_000  # picked among the ~55,000 records made by then (a slowed copy: ~1,600)
    same = stream("firestore", "sequential", {"insert": 0.5, "read": 0.5}, rate=2000.0, duration_s=1.0, k=1)
    assert [int(op.accesses[0].key) for _, op in same if op.kind == "write"][:3] == [501, 502, 503]  # k = 1: each


def test_at_one_kth_an_entity_group_fills_whole_one_group_in_k() -> None:
    """A Datastore entity group takes consecutive inserts: at 1/k a group the stream writes gets all of them,
    at the launch's rate ÷ k (its per-key limit sees the launch's load), and one group in k is written."""
    ops = stream("datastore", "sequential", {"insert": 1.0}, entity_group_size=20, rate=1000.0, duration_s=30.0,
                 k=10)
    units = [op.units[0] for _, op in ops]
    runs = [len(list(group)) for _, group in itertools.groupby(units)]
    assert sum(n == 20 for n in runs) >= len(runs) - 2  # whole groups (the first and the last may be cut)
    parents = sorted({int(u) for u in units})
    assert len(parents) == len(runs) and parents[-1] - parents[0] > 5 * len(parents)  # about one group in 10


def test_entity_groups_are_the_unit_where_the_store_has_them() -> None:
    legacy = stream("datastore", "sequential", {"insert": 1.0}, entity_group_size=10, rate=100.0, duration_s=10.0)
    units = [op.units for _, op in legacy]
    assert all(len(u) == 1 for u in units) and len(set(units)) == pytest.approx(len(units) / 10, abs=2)
    assert all(op.accesses[0].key.startswith(op.units[0] + b"\x00") for _, op in legacy)
    per_entity = stream("firestore-datastore", "sequential", {"insert": 1.0}, rate=100.0, duration_s=10.0)
    assert len({op.units for _, op in per_entity}) == len(per_entity)


def test_recorded_counters_stay_counters_and_recorded_inserts_become_new_keys() -> None:
    t = [i * 0.01 for i in range(300)]
    op = [b"insert" if i % 3 else b"increment" for i in range(300)]
    key = [b"%020d" % i if i % 3 else b"counter" for i in range(300)]
    ops = list(recorded_stream(t=t, op=op, key=key, backend="firestore", rate=lambda s: 1000.0, duration_s=30.0,
                               k=10.0, seed=1))
    counter = [o for _, o in ops if o.kind == "transform"]
    inserts = [o.accesses[0].key for _, o in ops if o.kind == "write"]
    assert counter and {o.units for o in counter} == {(b"counter",)}  # seen 100 times: replayed as itself
    assert len(set(inserts)) == len(inserts) and inserts == sorted(inserts)  # new keys, in the recorded order
    assert all(k.startswith(b"0") for k in inserts)
    once = list(recorded_stream(t=[0.0, 1.0], op=["update", "update"], key=[b"a", b"b"], backend="firestore",
                                rate=lambda s: 100.0, duration_s=10.0))
    assert len({o.units for _, o in once}) == len(once)  # a key seen once stands for many: no counter made up


def _share(backend: str, strategy: str, ops: Mapping[str, float], *, launch: dict[str, Any], k: float,
           nodes: int = 1, **workload: Any) -> float:
    profile, strat = design(backend, strategy, ops, **workload)
    lx = LaunchSettings.from_data(launch)
    model = StoreModel.for_store(spec_for(backend), scale=k, nodes=nodes)
    s = launch_stream(settings=profile, backend=backend, strategy=strat, rate=lx.rate, duration_s=lx.duration_s, k=k)
    return reference_run(s, model, duration_s=lx.duration_s).throttled_fraction


def test_the_reference_gives_googles_answers_on_the_issues_designs() -> None:
    """A counter (one document, increments) is a hotspot at any traffic and on any Bigtable cluster; its
    shards take n writes/s; app-made uuid ids under 500/50/5 are fine."""
    ramp = {"kind": "ramp_500_50_5", "ceiling": 5000, "duration_s": 1800.0}
    assert _share("firestore", "sequential", {"increment": 0.8, "read": 0.2}, launch=ramp, k=200,
                  record_count=1) >= 0.30
    assert _share("firestore", "random", {"insert": 0.8, "read": 0.2}, launch=ramp, k=200) <= 0.005
    row = {"kind": "constant", "rate": 20_000, "duration_s": 600.0}
    shares = {n: _share("bigtable", "sequential", {"increment": 1.0}, launch=row, k=400, nodes=n, record_count=1)
              for n in (1, 19)}
    assert shares[1] == pytest.approx(shares[19]) and shares[1] == pytest.approx(1 - 5000 / 20_000, abs=0.03)
