from __future__ import annotations

from pathlib import Path

import pytest

from keyramp.core._errors import UsageError
from keyramp.profile._files import collect_profiles, load_profile
from keyramp.profile._model import Settings
from keyramp.profile._profile import parse_profile

REPO = Path(__file__).resolve().parents[2]

BASE = {
    "name": "t",
    "backend": ["datastore", "bigtable"],
    "duration": "5s",
    "workload": {"ops": {"insert": 0.5, "read": 0.5}},
    "keys": {"strategy": ["sequential", "random", "hashed_prefix"]},
    "schedule": {"kind": "constant", "rate": 100},
}


def test_matrix_expands_backend_times_strategy() -> None:
    profile = parse_profile(BASE)
    assert len(profile.cells) == 6
    assert [c.id for c in profile.cells][:3] == [
        "c00-datastore-sequential", "c01-datastore-random", "c02-datastore-hashed-prefix"]
    assert profile.cells[-1].backend == "bigtable"
    assert profile.cells[0].duration_s == 5.0
    assert profile.data["workload"]["record_count"] == 1000  # defaults filled in
    assert profile.data["schedule"]["time_scale"] == 1.0


def test_driver_defaults_to_the_client_and_reaches_every_cell() -> None:
    assert parse_profile(BASE).driver == "client"
    profile = parse_profile({**BASE, "driver": "grpc"})
    assert profile.driver == "grpc" and profile.data["driver"] == "grpc"
    assert {c.manifest_entry()["driver"] for c in profile.cells} == {"grpc"}
    # A resolved table written before drivers existed (an old run's manifest) reads as the client.
    old = {k: v for k, v in profile.data.items() if k != "driver"}
    assert Settings.from_data(old).driver == "client"


def test_quickstart_profile_is_4_backends_by_3_strategies() -> None:
    profile = load_profile(REPO / "profiles" / "quickstart.toml")
    assert len(profile.cells) == 12
    assert {c.backend for c in profile.cells} == {"datastore", "firestore", "firestore-datastore", "bigtable"}


def test_time_scale_sets_the_schedule_horizon() -> None:
    profile = parse_profile({**BASE, "schedule": {"kind": "ramp_500_50_5", "start_ops": 100, "time_scale": 60}})
    cell = profile.cells[0]
    assert cell.horizon_s == 300
    assert cell.schedule.rate(cell.horizon_s - 1) == 100


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"colour": "blue"}, "unknown field 'colour'"),
        ({"backend": "spanner"}, "unknown backend 'spanner'"),
        ({"driver": "raw"}, "driver: datastore has no driver 'raw' (one of: client, grpc)"),
        ({"keys": {"strategy": "bogus"}}, "unknown key strategy 'bogus'"),
        ({"workload": {"ops": {"insert": 0.5, "read": 0.4}}}, "sum to 1"),
        ({"workload": {"ops": {"fly": 1.0}}}, "unknown operation 'fly'"),
        ({"workload": {"ops": {"insert": 1.0}, "speed": 3}}, "unknown field 'speed'"),
        ({"duration": "0s"}, "duration"),
        ({"duration": "-3s"}, "duration"),
        ({"schedule": {"kind": "constant", "rate": 0}}, "rate"),
        ({"schedule": {"kind": "constant", "rate": -5}}, "rate"),
        ({"schedule": {"kind": "warp"}}, "unknown kind"),
        ({"name": ""}, "'name' is required"),
        ({"target": "prod"}, "target"),
        ({"backend": "bigtable", "keys": {"strategy": "server_allocated"}}, "server_allocated"),
        ({"backend": "datastore", "keys": {"strategy": "server_allocated"},
          "workload": {"ops": {"batch_write": 1.0}}}, "batch_write needs client-chosen keys"),
        ({"thresholds": {"insert.p99_ms": "fast"}}, "insert.p99_ms"),
    ],
)
def test_invalid_profiles_give_one_line_errors(patch: dict, needle: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_profile({**BASE, **patch}, source="bad.toml")
    message = str(info.value)
    assert "\n" not in message
    assert needle in message
    assert message.startswith("bad.toml")


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such profile file"):
        load_profile(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [unclosed")
    with pytest.raises(UsageError, match="invalid TOML"):
        load_profile(bad)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UsageError, match="cannot read"):
        load_profile(binary)


def test_collect_profiles_reads_directories(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('name = "a"\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "b.toml").write_text('name = "b"\n')
    assert [p.name for p in collect_profiles([str(tmp_path)])] == ["a", "b"]
    with pytest.raises(UsageError, match=r"no \*\.toml"):
        collect_profiles([str(REPO / "docs")])


@pytest.mark.parametrize(
    ("schedule", "needle"),
    [
        # the two cases a user hit: each ran silently at a rate the profile never asked for
        ({"kind": "constant", "start_ops": 900}, "schedule.start_ops: not used by kind 'constant' (it takes rate"),
        (
            {"kind": "ramp_500_50_5", "rate": 100},
            "schedule.rate: not used by kind 'ramp_500_50_5' (it takes ceiling, growth, start_ops, step",
        ),
        ({"start_ops": 900}, "not used by kind 'constant'"),  # kind defaults to constant
        ({"kind": "soak", "rate": 5, "growth": 0.5}, "schedule.growth: not used by kind 'soak'"),
        ({"kind": "linear", "start_ops": 1, "end_ops": 2, "step": "1m"}, "schedule.step: not used by kind 'linear'"),
        ({"kind": "spike", "rate": 1, "burst_ops": 9, "ceiling": 5}, "schedule.ceiling: not used by kind 'spike'"),
        (
            {"kind": "step", "steps": [10, 20], "start_ops": 5},
            "schedule.start_ops: not used by kind 'step' when 'steps'",
        ),
        ({"kind": "users", "users": 4, "max_users": 10}, "schedule.max_users: not used by kind 'users'"),
        ({"kind": "users", "users": 4, "time_scale": 10}, "schedule.time_scale: not used by kind 'users'"),
        (
            {"kind": "users", "users": 4, "rate": 10},
            "schedule.rate: not used by kind 'users' (it takes spawn_rate, users)",
        ),
    ],
)
def test_a_schedule_field_the_kind_does_not_use_is_an_error(schedule: dict, needle: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_profile({**BASE, "schedule": schedule}, source="bad.toml")
    message = str(info.value)
    assert "\n" not in message and message.startswith("bad.toml: ") and needle in message


def test_every_kind_accepts_its_own_fields() -> None:
    for schedule in (
        {"kind": "constant", "rate": 5, "time_scale": 2, "max_users": 3, "drop_after": "2s", "warmup": "0s"},
        {"kind": "step", "steps": [1, 2], "step": "5s"},
        {"kind": "step", "start_ops": 1, "increment": 2, "step": "5s"},
        {"kind": "ramp_500_50_5", "start_ops": 5, "growth": 0.2, "step": "1m", "ceiling": 50},
        {"kind": "spike", "rate": 1, "burst_ops": 9, "burst_at": "1s", "burst_for": "1s"},
        {"kind": "users", "users": 2, "spawn_rate": 2, "warmup": "1s"},
    ):
        assert parse_profile({**BASE, "schedule": schedule}).cells


def test_shipped_profiles_all_load() -> None:
    files = [REPO / "profiles" / "quickstart.toml", *sorted((REPO / "profiles" / "scenarios").glob("*.toml"))]
    assert len(files) > 20
    for file in files:
        assert load_profile(file).cells, file


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[schedule]\nkind = "constant"\nstart_ops = 900\n',
         "schedule.start_ops: not used by kind 'constant' (it takes rate; and time_scale, max_users, drop_after)"),
        # issue 28 let it through: Firestore cells then wrote "<parent>#<id>" document ids no one asked for
        ('backend = ["datastore", "firestore"]\n[workload]\nentity_group_size = 10\n',
         "workload.entity_group_size: does not apply to firestore: firestore has no ancestor queries"),
    ],
    ids=["stray-schedule-field", "entity-group-on-firestore"],
)
def test_a_field_that_does_not_apply_exits_2_before_any_load(tmp_path: Path, text: str, error: str) -> None:
    import subprocess
    import sys

    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n' + text)
    out = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "keyramp", "run", str(bad), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith(f"keyramp: {bad}: {error}")
    assert not out.exists()  # refused before a run directory (or an emulator) existed


_SHAPES = {
    "timestamp": {"when": "timestamp"},
    "array": {"tags": {"type": "array", "of": "string", "items": 2}},
    "map": {"sender": {"type": "map", "fields": {"id": "int"}}},
}


def _grpc_writes(backend: str, record: dict) -> bool:
    """Whether the raw-gRPC driver of ``backend`` can encode ``record`` (its own encoders, no server)."""
    from keyramp.backends.bigtable._client import encode_value
    from keyramp.backends.bigtable._grpc import cell_value
    from keyramp.backends.datastore._grpc import value_pb as datastore_value
    from keyramp.backends.firestore._grpc import value_pb as firestore_value

    encode = {"bigtable": lambda v: cell_value(encode_value(v)), "firestore": firestore_value}.get(
        backend, datastore_value)
    try:
        for value in record.values():
            encode(value)
    except UsageError:
        return False
    return True


@pytest.mark.parametrize("backend", ["datastore", "firestore-datastore", "firestore", "bigtable"])
@pytest.mark.parametrize("kind", sorted(_SHAPES))
def test_a_document_the_grpc_driver_cannot_write_is_refused_before_any_load(backend: str, kind: str) -> None:
    from keyramp.keys import parse_shape

    raw = {**BASE, "backend": backend, "keys": {"strategy": "random"}, "driver": "grpc",
           "workload": {"ops": {"insert": 1.0}, "document": _SHAPES[kind]}}
    record = parse_shape(_SHAPES[kind]).compile(seed=1, created=lambda i: 1_700_000_000_000)(0)
    # The spec's declaration agrees with what the driver's encoders really do.
    if _grpc_writes(backend, record):
        assert parse_profile(raw).cells
    else:
        field = next(iter(_SHAPES[kind]))
        with pytest.raises(UsageError, match=rf"workload\.document\.{field}: the grpc driver of {backend} "
                                             rf"cannot write {kind} values yet \(use driver = \"client\"\)"):
            parse_profile(raw)
    # The client driver writes every type.
    assert parse_profile({**raw, "driver": "client"}).cells
