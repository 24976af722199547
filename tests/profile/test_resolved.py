"""A run's profile read back, typed (profile/_resolved.py): what every reader of a finished run gets."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from keyramp.profile import Settings, parse_profile, read_launch, read_settings, run_cell

ROOT = Path(__file__).resolve().parents[2] / "keyramp"


def _resolved() -> dict:
    profile = parse_profile({"name": "r", "backend": ["firestore", "bigtable"], "duration": "20s", "seed": 9,
                             "workload": {"ops": {"insert": 0.7, "read": 0.3}, "record_count": 800},
                             "keys": {"strategy": ["sequential", "shard(4)#timestamp"]},
                             "schedule": {"kind": "ramp_500_50_5", "ceiling": 2000, "time_scale": 5},
                             "launch": {"kind": "constant", "rate": 5000, "duration": "30m"}})
    return json.loads(json.dumps(profile.data))  # as manifest.json keeps it


def test_a_manifests_profile_reads_back_as_the_settings_it_was_resolved_from() -> None:
    data = _resolved()
    settings = read_settings(data)
    assert isinstance(settings, Settings) and settings == Settings.from_data(data)
    assert settings.workload.record_count == 800 and settings.keys.strategies == ("sequential", "shard(4)#timestamp")
    launch = read_launch(data)
    assert launch is not None and launch.peak == 5000 and launch.duration_s == 1800
    cell = run_cell(settings, index=1, cell_id="c01", backend="firestore", strategy="shard(4)#timestamp")
    assert cell.horizon_s == 100.0 and cell.schedule.rate(0.0) == 500.0  # time_scale 5: 20 s cover 100 s
    assert settings.resolved == data  # the wire form, for a worker's plan or a profile written back


def test_an_older_runs_table_reads_with_the_fields_it_lacks_at_their_defaults() -> None:
    """A manifest written before fields existed (here: the workload's insert_ops and document, the emulator
    section, the schedule's drop_after): read, each missing field at its default, nothing else changed."""
    old = _resolved()
    for name in ("insert_ops", "document", "key_samples_per_s"):
        old["workload"].pop(name)
    old.pop("emulator")
    old["schedule"].pop("drop_after_s", None)
    settings = read_settings(old)
    assert settings is not None
    assert settings.workload.insert_ops == () and settings.workload.key_samples_per_s == 100  # its default
    assert settings.workload.record_count == 800 and settings.schedule.kind == "ramp_500_50_5"
    assert settings.emulator.consistency == 1.0


def test_a_table_that_does_not_read_gives_none_not_a_guess() -> None:
    assert read_settings(None) is None and read_settings({"workload": "not a table"}) is None
    assert read_launch({"launch": {"kind": "users", "users": 3}}) is None and read_launch({}) is None


def test_no_signature_takes_the_profile_as_a_dict() -> None:
    """The profile is typed from start to end (issue 40): no function in keyramp/ takes
    ``profile: Mapping[str, Any]`` (or a dict) to parse again further down."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in [*node.args.args, *node.args.kwonlyargs]:
                    note = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                    if arg.arg == "profile" and ("Mapping" in note or "dict" in note):
                        found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}")
    assert found == []
