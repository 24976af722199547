"""The cost model (forecast/_cost.py): properties over op mixes, rates and durations, through the
path the planner takes (``op_mix`` of measured counts -> ``cell_cost``), and checks against
figures the model was not given."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyramp.core._errors import UsageError
from keyramp.forecast._cost import CellCost, cell_cost, min_nodes, record_bytes
from keyramp.forecast._mix import OpMix, op_mix
from keyramp.forecast._prices import LABEL, Prices, load_prices
from keyramp.profile import WorkloadSettings, read_settings
from keyramp.profile._schedules import make_schedule

PRICES = load_prices()
FS = PRICES.stores["firestore"].locations["us-central1"].prices
BT = PRICES.stores["bigtable"].locations["us-central1"].prices


def _typed(usd: dict[str, float], **store: Any) -> dict[str, Any]:
    where = {"source": "typed in the test", "as_of": "2026-01-01"}
    return {"title": "t", "billing": "operations", "default_location": "here", **store,
            "locations": {"here": {"type": "regional", **{name: {"usd": v, **where} for name, v in usd.items()}}}}


#: List prices typed in here, unlike keyramp's table on purpose (a cost that read the table would not match);
#: how each store bills keyramp's increment, typed in too.
TYPED = Prices.from_json({"schema": 1, "version": "test", "label": "typed", "stores": {
    "firestore": _typed({"reads_per_100k": 0.05, "writes_per_100k": 0.20, "deletes_per_100k": 0.02,
                         "storage_gib_month": 1.0}, backends=["firestore"], billed_as={"increment": {
                             "reads": 0, "writes": 1, "source": "typed", "as_of": "2026-01-01"}}),
    "datastore": _typed({"reads_per_100k": 0.07, "writes_per_100k": 0.30, "deletes_per_100k": 0.04,
                         "storage_gib_month": 1.0}, backends=["datastore", "firestore-datastore"])}}, src="typed")
OPS = ("insert", "read", "update", "delete", "batch_write", "batch_read", "scan", "transaction")


def _workload(**fields: Any) -> WorkloadSettings:
    """A run's ``[workload]`` as the forecast reads it (typed, from a resolved table)."""
    table = {"ops": {"insert": 1.0}, "batch_size": 10, "scan_length": 20, "value_size": 256, **fields}
    settings = read_settings({"name": "cost", "workload": table})
    assert settings is not None
    return settings.workload


def _mix(counts: dict[str, float], **fields: Any) -> OpMix:
    return op_mix(counts, _workload(**fields))


counts_st = st.dictionaries(st.sampled_from(OPS), st.floats(min_value=1, max_value=1e6), min_size=1)
backend_st = st.sampled_from(["firestore", "datastore", "firestore-datastore", "bigtable"])


@settings(max_examples=60, deadline=None)
@given(counts=counts_st, backend=st.sampled_from(["firestore", "datastore", "firestore-datastore"]),
       rate=st.floats(min_value=1, max_value=1e5), k=st.floats(min_value=0.01, max_value=100),
       location=st.sampled_from(["us-central1", "nam5"]))
def test_serverless_cost_is_linear_in_rate(counts: dict[str, float], backend: str, rate: float, k: float,
                                           location: str) -> None:
    mix = _mix(counts)
    one = cell_cost(backend=backend, mix=mix, target_ops_per_s=rate, prices=PRICES, location=location)
    scaled = cell_cost(backend=backend, mix=mix, target_ops_per_s=k * rate, prices=PRICES, location=location)
    assert scaled.launch_usd_per_hour == pytest.approx(k * one.launch_usd_per_hour, rel=1e-9)
    assert one.launch_usd_per_hour > 0


@settings(max_examples=60, deadline=None)
@given(counts=counts_st, backend=backend_st, rate=st.floats(min_value=1, max_value=2e5),
       seconds=st.integers(min_value=60, max_value=7200), k=st.integers(min_value=2, max_value=12),
       nodes=st.integers(min_value=1, max_value=40))
def test_ramp_cost_is_linear_in_duration(counts: dict[str, float], backend: str, rate: float, seconds: int,
                                         k: int, nodes: int) -> None:
    """A constant ramp of k × the duration costs k × as much (Bigtable: the same nodes, pro rata)."""
    mix = _mix(counts)
    ramp = make_schedule({"kind": "constant", "rate": rate}, horizon=seconds * k)
    short = cell_cost(backend=backend, mix=mix, target_ops_per_s=rate, prices=PRICES, ramp=ramp, ramp_s=seconds,
                      nodes=nodes)
    long = cell_cost(backend=backend, mix=mix, target_ops_per_s=rate, prices=PRICES, ramp=ramp, ramp_s=seconds * k,
                     nodes=nodes)
    assert short.ramp_usd is not None and long.ramp_usd is not None
    assert long.ramp_usd == pytest.approx(k * short.ramp_usd, rel=1e-9)
    assert long.nodes == short.nodes


@settings(max_examples=40, deadline=None)
@given(counts=counts_st, backend=backend_st, rate=st.floats(min_value=1, max_value=2e5))
def test_an_hour_of_ramp_at_the_target_is_the_launch_hour(counts: dict[str, float], backend: str,
                                                          rate: float) -> None:
    """Two paths to one figure: the launch hour (rate × 3600) and a constant ramp integrated over an hour."""
    ramp = make_schedule({"kind": "constant", "rate": rate}, horizon=3600)
    cost = cell_cost(backend=backend, mix=_mix(counts), target_ops_per_s=rate, prices=PRICES, ramp=ramp,
                     ramp_s=3600)
    assert cost.ramp_usd == pytest.approx(cost.launch_usd_per_hour, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(start=st.floats(min_value=50, max_value=500), steps=st.integers(min_value=1, max_value=12),
       step_s=st.sampled_from([60, 300, 600]), backend=st.sampled_from(["firestore", "datastore"]))
def test_ramp_cost_is_the_integral_of_the_500_50_5_steps(start: float, steps: int, step_s: int, backend: str) -> None:
    """Against a sum computed another way: each step's rate × its length × what an operation of a mixed op mix
    bills at prices typed into this test (per 100,000: reads, writes, deletes)."""
    ramp = make_schedule({"kind": "ramp_500_50_5", "start_ops": start, "step": f"{step_s}s"},
                         horizon=steps * step_s)
    target = start * 1.5 ** (steps - 1)
    mix = _mix({"insert": 5, "read": 3, "update": 1, "delete": 1})
    cost = cell_cost(backend=backend, mix=mix, target_ops_per_s=target, prices=TYPED, ramp=ramp,
                     ramp_s=steps * step_s)
    operations = sum(start * 1.5**i * step_s for i in range(steps))
    reads, writes, deletes = {"firestore": (0.05, 0.20, 0.02), "datastore": (0.07, 0.30, 0.04)}[backend]
    per_op = (0.3 * reads + 0.6 * writes + 0.1 * deletes) / 1e5
    assert cost.ramp_usd == pytest.approx(operations * per_op, rel=1e-9)


def test_an_increment_bills_what_the_store_bills_for_it() -> None:
    """Firestore: a field transform, one write and no read (``billed_as``); Datastore mode, without it:
    keyramp's lookup and upsert, a read and a write. Typed prices: $ per 100,000 reads / writes."""
    def hour(backend: str, counts: dict[str, float], **kw: Any) -> float:
        return cell_cost(backend=backend, mix=_mix(counts), target_ops_per_s=1000, prices=TYPED,
                         **kw).launch_usd_per_hour

    assert hour("firestore", {"increment": 1}) == pytest.approx(36 * 0.20)  # 3.6 M writes, no read
    # A Python workload's method named increment is its own code: one read, as the forecast counts it.
    user = _mix({"increment": 5}, user="/app/wl.py:Counter", ops={"increment": 1.0}, insert_ops=[])
    assert cell_cost(backend="firestore", mix=user, target_ops_per_s=1000, prices=TYPED,
                     python_workload=True).launch_usd_per_hour == pytest.approx(36 * 0.05)
    assert hour("datastore", {"increment": 1}) == pytest.approx(36 * (0.07 + 0.30))
    cost = cell_cost(backend="firestore", mix=_mix({"increment": 1, "read": 1}), target_ops_per_s=1000, prices=TYPED)
    assert any(note.startswith("an increment bills 0 reads and 1 write") for note in cost.notes)


def test_batch_operations_count_their_rows_and_deletes_bill_as_deletes() -> None:
    def hour(counts: dict[str, float], **fields: Any) -> float:
        return cell_cost(backend="firestore", mix=_mix(counts, **fields), target_ops_per_s=1000,
                         prices=PRICES).launch_usd_per_hour

    writes = 3.6e6 / 1e5 * FS["writes_per_100k"].usd
    assert hour({"insert": 1}) == pytest.approx(writes)
    assert hour({"batch_write": 1}, batch_size=25) == pytest.approx(25 * writes)
    assert hour({"delete": 1}) == pytest.approx(3.6e6 / 1e5 * FS["deletes_per_100k"].usd)
    assert hour({"delete": 1}) < hour({"update": 1}) / 5  # a delete is not billed as a write
    assert hour({"transaction": 1}) == pytest.approx(hour({"read": 1}) + hour({"update": 1}))
    assert hour({"scan": 1}, scan_length=50) == pytest.approx(50 * hour({"read": 1}))


def test_index_fan_out_does_not_change_a_firestore_bill_only_its_storage() -> None:
    """Design constraint, from Google's page (prices.json cites it): index entry writes are not billed."""
    plain = {"id": {"type": "string", "size": 12}, "blob": {"type": "bytes", "size": 200, "indexed": False}}
    wide = {**plain, **{f"tag{i}": {"type": "string", "size": 12} for i in range(40)}}
    costs = [cell_cost(backend="firestore", mix=_mix({"insert": 1}, document=doc), target_ops_per_s=500,
                       prices=PRICES, bytes_per_record=record_bytes(_workload(document=doc)))
             for doc in (plain, wide)]
    assert costs[0].launch_usd_per_hour == costs[1].launch_usd_per_hour
    hour = [c.breakdown["launch_hour"] for c in costs]
    assert hour[1].storage_usd_per_month > hour[0].storage_usd_per_month > 0
    assert any("index entry writes are not billed" in note for note in costs[0].notes)


def test_the_data_an_hour_adds_is_priced_per_month_to_keep() -> None:
    cost = cell_cost(backend="firestore", mix=_mix({"insert": 1}), target_ops_per_s=1000, prices=PRICES,
                     bytes_per_record=1024)
    hour = cost.breakdown["launch_hour"]
    gib = 3.6e6 * 1024 / 2**30
    assert hour.stored_gib == pytest.approx(gib)
    assert hour.storage_usd_per_month == pytest.approx(gib * FS["storage_gib_month"].usd)
    assert hour.usd == cost.launch_usd_per_hour  # storage is not part of the hour's bill


def test_bigtable_bills_nodes_not_operations() -> None:
    mix = _mix({"insert": 1})
    low, high = (cell_cost(backend="bigtable", mix=mix, target_ops_per_s=r, prices=PRICES, nodes=3)
                 for r in (100, 30_000))
    assert low.nodes == 3 and low.launch_usd_per_hour == pytest.approx(3 * BT["node_hour_ssd"].usd)
    assert high.nodes == 3  # 30,000 writes/s fit on 3 nodes at 14,000 rows/s each (Google's maximum)
    hdd = cell_cost(backend="bigtable", mix=mix, target_ops_per_s=100, prices=PRICES, nodes=3, storage="hdd")
    assert hdd.storage == "hdd" and hdd.launch_usd_per_hour == pytest.approx(3 * BT["node_hour_hdd"].usd)
    assert any("at least one hour" in note for note in low.notes)


def test_bigtable_is_priced_at_no_fewer_nodes_than_the_peak_needs() -> None:
    """Google's published example, not a figure the model was given: a 10-node SSD cluster serves
    up to 140,000 rows/s of a write-only (or read-only) workload."""
    writes, reads = _mix({"insert": 1}), _mix({"read": 1})
    assert min_nodes("bigtable", writes, 140_000) == 10 and min_nodes("bigtable", writes, 140_001) == 11
    assert min_nodes("bigtable", reads, 170_000) == 10
    assert min_nodes("bigtable", reads, 5_000, "hdd") == 10  # HDD: up to 500 reads/s per node
    cost = cell_cost(backend="bigtable", mix=writes, target_ops_per_s=140_001, prices=PRICES, nodes=3)
    assert cost.nodes == 11 and cost.launch_usd_per_hour == pytest.approx(11 * BT["node_hour_ssd"].usd)


@settings(max_examples=40, deadline=None)
@given(counts=counts_st, r1=st.floats(min_value=1, max_value=5e5), r2=st.floats(min_value=1, max_value=5e5),
       storage=st.sampled_from(["ssd", "hdd"]))
def test_bigtable_cost_never_falls_as_the_rate_rises(counts: dict[str, float], r1: float, r2: float,
                                                     storage: str) -> None:
    mix = _mix(counts)
    a, b = (cell_cost(backend="bigtable", mix=mix, target_ops_per_s=r, prices=PRICES, storage=storage)
            for r in sorted((r1, r2)))
    assert a.nodes is not None and b.nodes is not None and a.nodes <= b.nodes
    assert a.launch_usd_per_hour <= b.launch_usd_per_hour


def test_an_override_changes_the_cost_it_names(tmp_path: Path) -> None:
    path = tmp_path / "ours.json"
    path.write_text(json.dumps({"stores": {"datastore": {"locations": {"us-central1": {
        "reads_per_100k": {"usd": FS["reads_per_100k"].usd * 2, "source": "our contract", "as_of": "2026-10-01"}}}}}}))
    ours = load_prices(path)
    mix = _mix({"read": 3, "insert": 1})
    base, over = (cell_cost(backend="datastore", mix=mix, target_ops_per_s=800, prices=p) for p in (PRICES, ours))
    reads = 800 * 3600 * 0.75 / 1e5 * FS["reads_per_100k"].usd
    assert over.launch_usd_per_hour - base.launch_usd_per_hour == pytest.approx(reads)
    # The writes' price is still the table's, which its source does not date: the cost is no newer.
    assert over.prices.source.endswith(str(path)) and over.prices.as_of == "undated"
    writes = {"usd": 0.2, "source": "our contract", "as_of": "2026-09-15"}
    path.write_text(json.dumps({"stores": {"datastore": {"locations": {"us-central1": {
        "reads_per_100k": {"usd": 0.1, "source": "our contract", "as_of": "2026-10-01"},
        "writes_per_100k": writes}}}}}))
    dated = cell_cost(backend="datastore", mix=mix, target_ops_per_s=800, prices=load_prices(path))
    assert dated.prices.as_of == "2026-09-15"  # the oldest date among the prices the cost used
    # Firestore's prices were not named: unchanged.
    assert cell_cost(backend="firestore", mix=mix, target_ops_per_s=800, prices=ours).launch_usd_per_hour == \
        cell_cost(backend="firestore", mix=mix, target_ops_per_s=800, prices=PRICES).launch_usd_per_hour


def test_the_cost_says_what_it_is_and_what_it_left_out() -> None:
    cost = cell_cost(backend="firestore", mix=_mix({"insert": 1, "query": 1}), target_ops_per_s=100, prices=PRICES,
                     location="nam5")
    doc = cost.to_json()
    assert doc["label"] == LABEL == "estimate at list prices, before free tier and discounts"
    assert doc["modelled"] is True and doc["not_priced"] == ["query"]
    assert doc["prices"] == {"source": PRICES.source, "as_of": "undated", "location": "nam5",
                             "location_type": "multi-region"}
    line = doc["breakdown"]["launch_hour"]["lines"][0]
    assert line["as_of"] == "undated" and "no date" in line["why_undated"]
    assert set(doc) >= {"launch_usd_per_hour", "ramp_usd", "breakdown", "prices"} and doc["ramp_usd"] is None
    assert CellCost.from_json(json.loads(json.dumps(doc))).to_json() == doc


def test_unknown_location_backend_or_storage_is_one_line() -> None:
    mix = _mix({"insert": 1})
    cases: list[tuple[dict[str, Any], str]] = [
        ({"backend": "bigtable", "location": "nam5"}, "no prices for location 'nam5' (known: us-central1"),
        ({"backend": "emulator-only"}, "no prices for backend 'emulator-only'"),
        ({"backend": "bigtable", "storage": "tape"}, "--storage: one of ssd, hdd"),
    ]
    for kwargs, message in cases:
        with pytest.raises(UsageError) as exc:
            cell_cost(mix=mix, target_ops_per_s=10, prices=PRICES, **kwargs)
        assert message in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(UsageError):
        cell_cost(backend="firestore", mix=mix, target_ops_per_s=math.nan, prices=PRICES)


def test_op_mix_tells_deletes_from_writes_for_built_in_ops_only() -> None:
    mix = _mix({"delete": 1, "update": 1, "insert": 2})
    assert mix.deletes_per_op == pytest.approx(0.25) and mix.writes_per_op == pytest.approx(1.0)
    # A Python workload's method named "delete" is its own code: counted as one read, as the forecast does.
    user = op_mix({"delete": 5}, _workload(user="/app/wl.py:Orders", ops={"delete": 1.0}, insert_ops=[]))
    assert user.deletes_per_op == 0 and user.reads_per_op == 1
