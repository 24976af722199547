"""``[launch]`` in a profile: strict validation, one line naming file and field (forecast/_launch.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from keyramp.core._errors import UsageError
from keyramp.forecast import Launch
from keyramp.profile._files import load_profile
from keyramp.profile._profile import parse_profile

BASE = {
    "name": "t",
    "backend": "firestore",
    "duration": "5s",
    "workload": {"ops": {"insert": 1.0}},
    "keys": {"strategy": "random"},
    "schedule": {"kind": "constant", "rate": 100},
}


def _with(launch: dict, **top) -> dict:
    return {**BASE, **top, "launch": launch}


def test_a_ramp_launch_is_resolved_in_real_time() -> None:
    profile = parse_profile(_with({"kind": "ramp_500_50_5", "ceiling": 5000, "duration": "90m"}))
    launch = profile.launch
    assert launch is not None and launch.duration_s == 5400.0
    assert launch.rate(0) == 500 and launch.rate(301) == 750 and launch.peak == 5000
    assert profile.data["launch"] == {"kind": "ramp_500_50_5", "ceiling": 5000, "duration_s": 5400.0, "plan": True}
    assert launch.plan and not parse_profile(_with({"kind": "constant", "rate": 9, "plan": False})).launch.plan  # type: ignore[union-attr]
    assert "nodes" not in launch.for_backend("firestore")
    json.dumps(profile.data)  # the resolved table goes into manifest.json as is


def test_bigtable_launch_fields_default_and_apply_per_store() -> None:
    profile = parse_profile(_with({"kind": "constant", "rate": 30000}, backend=["firestore", "bigtable"]))
    assert profile.launch is not None
    assert profile.launch.duration_s == 3600.0  # the default length
    assert profile.launch.for_backend("bigtable") | {} == {**profile.launch.for_backend("bigtable"),
                                                            "nodes": 1, "storage": "ssd"}
    assert "nodes" not in profile.launch.for_backend("firestore")


@pytest.mark.parametrize(
    ("launch", "top", "message"),
    [
        ({"kind": "constant", "rate": 100, "ceiling": 200}, {}, "launch.ceiling: not a field of a 'constant' launch"),
        ({"kind": "ramp_500_50_5", "rate": 100}, {}, "launch.rate: not a field of a 'ramp_500_50_5' launch"),
        ({"kind": "constant", "rate": 100, "time_scale": 60}, {}, "launch.time_scale: not a field"),
        ({"kind": "constant", "rate": 100, "warmup": "2s"}, {}, "launch.warmup: not a field"),
        ({"kind": "users", "users": 5}, {}, "launch.kind: 'users' is a closed model"),
        ({"kind": "zigzag"}, {}, "launch.kind: unknown kind 'zigzag'"),
        ({"kind": "constant", "rate": 100, "nodes": 3}, {}, r"launch.nodes: applies to stores with nodes \(bigtable\)"),
        ({"kind": "constant", "rate": 100, "storage": "ssd"}, {}, r"launch.storage: applies to stores with nodes"),
        ({"kind": "constant", "rate": 100, "nodes": 0}, {"backend": "bigtable"}, "launch.nodes: an integer from 1"),
        (
            {"kind": "constant", "rate": 100, "storage": "tape"},
            {"backend": "bigtable"},
            "launch.storage: one of hdd, ssd",
        ),
        ({"kind": "constant"}, {}, "launch.rate"),
        ({"kind": "constant", "rate": -5}, {}, "launch.rate: must be a positive number"),
        ({"kind": "constant", "rate": 100, "duration": "soon"}, {}, "launch.duration"),
        ({"kind": "constant", "rate": 100, "params": "nope.json"}, {}, "launch.params: .*no such parameter file"),
    ],
)
def test_bad_launch_tables_name_file_and_field(launch: dict, top: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        parse_profile(_with(launch, **top), source="p.toml")
    text = str(info.value)
    assert text.startswith("p.toml: ") and "\n" not in text


def test_forecast_thresholds_need_a_launch() -> None:
    with pytest.raises(UsageError, match=r"p.toml: thresholds.forecast.throttled_fraction: .*\[launch\]"):
        parse_profile({**BASE, "thresholds": {"forecast.throttled_fraction": 0.05}}, source="p.toml")
    ok = parse_profile(_with({"kind": "constant", "rate": 100}, thresholds={"forecast.throttled_fraction": 0.05}))
    assert ok.thresholds[0].bound == "high"


def test_params_file_is_relative_to_the_profile(tmp_path: Path) -> None:
    (tmp_path / "cal.json").write_text(json.dumps({"schema": 1, "stores": {"firestore": {
        "split_delay_s": {"low": 40, "mid": 60, "high": 90, "source": "keyramp calibrate run-1"}}}}))
    path = tmp_path / "p.toml"
    path.write_text('name = "t"\nbackend = "firestore"\n[workload]\nops = { insert = 1.0 }\n'
                    '[launch]\nkind = "constant"\nrate = 900\nparams = "cal.json"\n')
    launch = load_profile(path).launch
    assert launch is not None
    boxes = launch.boxes()
    assert boxes is not None and boxes["firestore"].ranges["split_delay_s"].mid == 60
    assert boxes["firestore"].origin == str(tmp_path / "cal.json")


def test_overrides_set_the_peak_nodes_and_length() -> None:
    ramp = Launch.from_resolved({"kind": "ramp_500_50_5", "ceiling": 5000, "duration_s": 3600})
    assert ramp.with_overrides(peak=20_000).peak == 20_000 and ramp.with_overrides(peak=20_000).rate(0) == 500
    spike = Launch.from_resolved({"kind": "spike", "rate": 100, "burst_ops": 1000, "duration_s": 600})
    scaled = spike.with_overrides(peak=4000)
    assert scaled.peak == pytest.approx(4000) and scaled.rate(0) == pytest.approx(400)
    assert ramp.with_overrides(nodes=3, duration_s=60).for_backend("bigtable")["nodes"] == 3
    with pytest.raises(UsageError, match="--rate"):
        ramp.with_overrides(peak=0)
