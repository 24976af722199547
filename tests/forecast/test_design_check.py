"""The regenerated stream is the recorded one, drawn again: the check on every cell (forecast/_design.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from keyramp.core._types import key_sort_text
from keyramp.forecast._forecast import forecast_cell
from keyramp.keyspace._load import CellKeys
from keyramp.profile import Profile
from keyramp.profile._profile import parse_profile
from keyramp.workload import CellWorkload


def _profile(strategy: str, ops: dict[str, float]) -> Profile:
    return parse_profile({"name": "c", "backend": "firestore", "duration": "10s", "seed": 4,
                          "workload": {"ops": ops, "record_count": 1000}, "keys": {"strategy": strategy},
                          "schedule": {"kind": "constant", "rate": 300},
                          "launch": {"kind": "constant", "rate": 2000, "duration": "30m"}})


def _forecast(profile: Profile, keys: list[str], ops: list[str], measured: dict[str, Any]) -> dict[str, Any]:
    t = np.linspace(0.0, 10.0, len(keys), endpoint=False)
    samples = CellKeys(cell="c", t=t, op=np.array([o.encode() for o in ops]),
                       key=np.array([k.encode() for k in keys]))
    counts: dict[str, int] = {}
    for o in ops:
        counts[o] = counts.get(o, 0) + 1
    summary = {"operations": {o: {"count": n} for o, n in counts.items()}, "keyspace": measured}
    cell = profile.cells[0]
    assert profile.launch is not None
    return forecast_cell(backend="firestore", strategy=cell.strategy, settings=profile, launch=profile.launch,
                         cell_summary=summary, samples=samples, cell_schedule=cell.schedule, horizon_s=10.0)


def test_a_key_hotter_than_the_design_can_make_it_switches_to_the_recording() -> None:
    """Uniform updates over 1,000 records: no record takes more than ~0.1 % of the writes. A recording in
    which one of the strategy's own keys takes half of them (the app updated a counter of its own) is not
    the design's stream: the recording is projected, and the check says which key share it saw."""
    profile = _profile("random", {"insert": 0.5, "update": 0.5})
    wl = CellWorkload(backend="firestore", strategy="random", settings=profile)
    rng = np.random.default_rng(2)
    keys, ops = [], []
    for i in range(3000):
        if i % 2:
            keys.append(key_sort_text(wl.key_of(1000 + i)))  # type: ignore[arg-type]
            ops.append("insert")
        else:
            hot = rng.random() < 0.5
            keys.append(key_sort_text(wl.key_of(0 if hot else int(rng.integers(0, 1000)))))  # type: ignore[arg-type]
            ops.append("update")
    measured = {"samples": 3000, "hottest_1pct_share": 0.26, "append_points": None}
    fc = _forecast(profile, keys, ops, measured)
    check = fc["projection"]["check"]
    assert check["agrees"] is False and check["measured_hottest_key_share"] > 0.2
    assert check["expected_hottest_key_share"] < 0.01
    assert fc["projection"]["keys"] == "recorded" and "hottest key" in fc["projection"]["why"]
    assert fc["verdict"] in ("hotspot", "at_risk-hotspot")  # 500 writes/s on one document: over its limit


def test_append_points_the_recording_cannot_show_are_not_held_against_the_design() -> None:
    """5,000 devices × time, 3,000 sampled inserts: under one insert a device, the recording cannot tell the
    design's points from spread keys (whatever its append-run count reads); it is not a disagreement."""
    profile = _profile("device(5000)#timestamp", {"insert": 1.0})
    wl = CellWorkload(backend="firestore", strategy="device(5000)#timestamp", settings=profile)
    keys = [key_sort_text(wl.key_of(1000 + i)) for i in range(3000)]  # type: ignore[arg-type]
    fc = _forecast(profile, keys, ["insert"] * 3000, {"samples": 3000, "hottest_1pct_share": 0.006,
                                                      "append_points": 55})
    check = fc["projection"]["check"]
    assert check["append_points_resolved"] is False and check["agrees"] is True
    assert fc["projection"]["keys"] == "regenerated" and fc["projection"]["append_points"] == 5000
