"""The cloud target up to the network call: refusals, the plan, the caps, the guard, ADC.

Nothing here talks to Google: plans and refusals are computed from the profile alone
(a test blocks every socket to prove it), credentials are checked in a subprocess with
a controlled environment. Clean-up against the emulators is in test_cloud_backends.py.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from keyramp.backends import Target
from keyramp.core._errors import UsageError
from keyramp.profile._profile import Profile, parse_profile
from keyramp.targets._cloud import Caps, check_opt_in, preflight, print_budgets, render_budget, run_budget
from keyramp.targets._cloud_target import CloudGuard, CloudTarget, check_credentials

PROJECT = "acme-load-test"
NO_EMULATORS: dict[str, str] = {}


def _profile(**fields: Any) -> Profile:
    raw: dict[str, Any] = {"name": "cloudy", "target": "cloud", "project": PROJECT, "backend": "datastore",
                           "duration": "60s", "schedule": {"kind": "constant", "rate": 200},
                           "workload": {"ops": {"insert": 1.0}, "record_count": 0}}
    raw.update(fields)
    return parse_profile({k: v for k, v in raw.items() if v is not None}, source="cloudy.toml")


def _one_line(exc: pytest.ExceptionInfo[UsageError]) -> str:
    message = str(exc.value)
    assert "\n" not in message and message.strip() == message
    return message


# -- refusals ----------------------------------------------------------------------------------
def test_cloud_profile_without_the_flag_is_refused() -> None:
    with pytest.raises(UsageError) as exc:
        preflight(_profile(), allow_cloud=None, environ=NO_EMULATORS)
    assert _one_line(exc) == ("cloudy: target = 'cloud' runs only with --allow-cloud acme-load-test "
                              "(the profile's project, typed out as a deliberate opt-in)")


def test_flag_naming_another_project_is_refused() -> None:
    with pytest.raises(UsageError) as exc:
        preflight(_profile(), allow_cloud="acme-prod", environ=NO_EMULATORS)
    assert _one_line(exc) == ("cloudy: --allow-cloud names project 'acme-prod' but the profile targets "
                              "'acme-load-test'; refusing")


@pytest.mark.parametrize("var", ["DATASTORE_EMULATOR_HOST", "FIRESTORE_EMULATOR_HOST", "BIGTABLE_EMULATOR_HOST",
                                 "KEYRAMP_FIRESTORE_DATASTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST"])
def test_emulator_variables_refuse_a_cloud_run(var: str) -> None:
    with pytest.raises(UsageError) as exc:
        preflight(_profile(), allow_cloud=PROJECT, environ={var: "127.0.0.1:8081", "HOME": "/root"})
    assert _one_line(exc) == (f"cloudy: cloud run refused: {var}=127.0.0.1:8081 is set, so the clients would talk "
                              f"to an emulator, not to acme-load-test; unset {var}")


def test_even_an_empty_emulator_variable_is_a_refusal() -> None:
    # The Datastore client checks `is not None`: an empty value still switches it to emulator mode.
    with pytest.raises(UsageError) as exc:
        preflight(_profile(), allow_cloud=PROJECT, environ={"DATASTORE_EMULATOR_HOST": ""})
    assert "DATASTORE_EMULATOR_HOST= is set" in _one_line(exc)


def test_allow_cloud_on_an_emulator_profile_is_refused() -> None:
    with pytest.raises(UsageError) as exc:
        preflight(_profile(target="emulator"), allow_cloud=PROJECT, environ=NO_EMULATORS)
    assert _one_line(exc) == ("cloudy: --allow-cloud given but the profile targets the emulators "
                              "(target = 'emulator'); drop the flag or set target = 'cloud'")
    assert preflight(_profile(target="emulator"), allow_cloud=None, environ=NO_EMULATORS) is None


def test_cloud_profile_needs_an_explicit_project() -> None:
    with pytest.raises(UsageError) as exc:
        _profile(project=None)
    assert _one_line(exc) == "cloudy.toml: target = 'cloud' needs an explicit project = \"<project id>\""
    assert _profile(project=None, target="emulator").data["project"] == "keyramp-local"  # emulators keep a default


def test_cloud_bigtable_needs_an_instance() -> None:
    with pytest.raises(UsageError) as exc:
        _profile(backend="bigtable")
    assert _one_line(exc) == "cloudy.toml: cloud: instance is required for bigtable with target = 'cloud'"
    assert _profile(backend="bigtable", cloud={"instance": "load-test-1"}).data["cloud"]["instance"] == "load-test-1"


@pytest.mark.parametrize(("table", "message"), [
    ({"colour": 1}, ("cloudy.toml: cloud: unknown field 'colour' (allowed: cleanup, database, instance, "
                     "max_duration, max_ops_per_s)")),
    ({"instance": "Bad_Instance"}, "cloudy.toml: cloud: instance: not a valid Bigtable instance id: 'Bad_Instance'"),
    ({"database": "x"}, "cloudy.toml: cloud: database: not a valid database id: 'x'"),
    ({"max_ops_per_s": 0}, "cloudy.toml: cloud: max_ops_per_s: must be a positive number, got 0"),
    ({"max_duration": "soon"}, ("cloudy.toml: cloud.max_duration: cannot read 'soon' as a duration "
                                "(use e.g. '90s', '5m', '1h')")),
    ({"cleanup": "yes"}, "cloudy.toml: cloud: cleanup must be true or false"),
])
def test_cloud_table_validation(table: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as exc:
        _profile(cloud=table)
    assert _one_line(exc) == message


def test_cloud_table_defaults_are_conservative() -> None:
    cloud = _profile().data["cloud"]
    assert cloud == {"instance": "", "database": "(default)", "max_ops_per_s": 1000.0, "max_duration_s": 600.0,
                     "cleanup": True}


def test_plan_above_the_rate_cap_is_refused() -> None:
    profile = _profile(schedule={"kind": "constant", "rate": 1500})
    with pytest.raises(UsageError) as exc:
        preflight(profile, allow_cloud=PROJECT, environ=NO_EMULATORS)
    assert _one_line(exc) == ("cloudy: plan exceeds the cloud caps: c00-datastore-random peaks at 1,500 ops/s > "
                              "max_ops_per_s 1,000 (lower the schedule or raise [cloud] caps)")
    # A higher cap in the profile, or on the command line, lets the same plan through.
    assert preflight(_profile(schedule={"kind": "constant", "rate": 1500}, cloud={"max_ops_per_s": 2000}),
                     allow_cloud=PROJECT, environ=NO_EMULATORS) is not None
    assert preflight(profile, allow_cloud=PROJECT, environ=NO_EMULATORS, max_ops_per_s=1500) is not None


def test_plan_above_the_duration_cap_is_refused() -> None:
    with pytest.raises(UsageError) as exc:
        preflight(_profile(duration="10m"), allow_cloud=PROJECT, environ=NO_EMULATORS)
    # 10 min measured + 2 s warm-up > 10 min for the whole run.
    assert _one_line(exc) == ("cloudy: plan exceeds the cloud caps: the run lasts 10m2s > max_duration 10m "
                              "(lower the schedule or raise [cloud] caps)")
    with pytest.raises(UsageError) as exc:
        preflight(_profile(duration="60s"), allow_cloud=PROJECT, environ=NO_EMULATORS, max_duration_s=30)
    assert "the run lasts 1m2s > max_duration 30s" in _one_line(exc)


def test_bad_cap_override_is_refused() -> None:
    with pytest.raises(UsageError) as exc:
        Caps.of(_profile(), max_ops_per_s=-5)
    assert _one_line(exc) == "--max-ops-per-s: must be a positive number, got -5"


def test_check_opt_in_accepts_the_deliberate_command_line() -> None:
    assert check_opt_in(_profile(), allow_cloud=PROJECT, environ={"HOME": "/root"}) is True


# -- plan numbers (hand-computed) ---------------------------------------------------------------
def test_plan_constant_schedule() -> None:
    plan = run_budget(_profile(duration="60s", schedule={"kind": "constant", "rate": 200}))
    (cell,) = plan.cells
    assert cell.peak_ops_per_s == 200
    assert cell.total_ops == pytest.approx(200 * 60)
    assert cell.warmup_ops == pytest.approx(200 * 2)  # default 2 s warm-up at the starting rate
    assert plan.total_ops == pytest.approx(12_400)
    assert plan.duration_s == 62


def test_plan_step_schedule() -> None:
    plan = run_budget(_profile(duration="30s", schedule={"kind": "step", "steps": [100, 200, 300], "step": "10s",
                                                         "warmup": "0s"}))
    (cell,) = plan.cells
    assert cell.peak_ops_per_s == 300
    assert cell.total_ops == pytest.approx(10 * 100 + 10 * 200 + 10 * 300)
    assert plan.total_ops == pytest.approx(6_000)


def test_plan_500_50_5_schedule_real_time() -> None:
    # 5 min at 500, 5 min at 750, 5 min at 1,125 ops/s.
    profile = _profile(duration="15m", schedule={"kind": "ramp_500_50_5", "warmup": "0s"})
    plan = run_budget(profile, Caps(max_ops_per_s=2000, max_duration_s=3600))
    (cell,) = plan.cells
    assert cell.peak_ops_per_s == pytest.approx(1125)
    assert cell.total_ops == pytest.approx(300 * (500 + 750 + 1125))  # 712,500
    assert plan.violations() == []
    assert run_budget(profile).violations() == [
        "c00-datastore-random peaks at 1,125 ops/s > max_ops_per_s 1,000", "the run lasts 15m > max_duration 10m"]


def test_plan_500_50_5_time_scale_undone() -> None:
    # time_scale 100: 15 min of schedule in 9 s of wall time. Rates stay real ops/s, so the
    # peak is unchanged, but each step lasts 3 s: 3 × (500 + 750 + 1,125) operations.
    plan = run_budget(_profile(duration="9s", schedule={"kind": "ramp_500_50_5", "time_scale": 100, "warmup": "0s"}))
    (cell,) = plan.cells
    assert cell.peak_ops_per_s == pytest.approx(1125)
    assert cell.total_ops == pytest.approx(3 * (500 + 750 + 1125))  # 7,125
    assert "time_scale ≠ 1 compresses the ramp" in render_budget(plan)


def test_plan_matrix_totals_and_closed_model() -> None:
    plan = run_budget(_profile(backend=["datastore", "firestore"], keys={"strategy": ["random", "sequential"]},
                               duration="20s", workload={"ops": {"insert": 1.0}, "record_count": 100}))
    assert len(plan.cells) == 4
    assert plan.total_ops == pytest.approx(4 * (200 * 20 + 200 * 2))
    assert plan.duration_s == 4 * 22 and plan.preload_records == 400
    closed = run_budget(_profile(schedule={"kind": "users", "users": 5}, duration="30s"))
    assert closed.cells[0].peak_ops_per_s is None and closed.total_ops is None
    text = render_budget(closed)
    assert "peak unbounded (closed model), capped at 1,000 ops/s" in text
    assert "operations unbounded, capped at 32,000" in text  # 1,000 ops/s × (30 s + 2 s warm-up)
    assert closed.violations() == []  # the guard enforces the rate at run time


def test_render_plan_names_what_is_written_and_deleted() -> None:
    profile = _profile(backend=["datastore", "bigtable"], cloud={"instance": "load-test-1", "database": "loadtest"})
    plan = run_budget(profile, namespaces={"c00-datastore-random": "kr_ab12_00_random",
                                           "c01-bigtable-random": "kr_ab12_01_random"})
    text = render_budget(plan)
    assert text.splitlines()[0] == "cloud budget: cloudy → project acme-load-test"
    assert "caps: 1,000 ops/s in any second, 10m for the whole run" in text
    assert "c00-datastore-random: constant 200 ops/s; peak 200 ops/s; 12,000 operations + 400 warm-up; 1m + 2s" in text
    assert "writes under Datastore kind kr_ab12_00_random (database loadtest)" in text
    assert "writes under Bigtable table projects/acme-load-test/instances/load-test-1/tables/kr_ab12_01_random" in text
    assert "total: peak 200 ops/s; 24,800 operations + 0 preloaded records; 2m4s" in text
    assert ("afterwards: each cell's data is deleted and the delete verified (kr_ab12_00_random, kr_ab12_01_random)"
            in text)
    kept = render_budget(run_budget(_profile(cloud={"cleanup": False})))
    assert "afterwards: nothing is deleted ([cloud] cleanup = false): delete kr_<run>_00_random yourself" in kept


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("network call during planning")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_print_plans_is_offline_and_exits_zero(no_network: None) -> None:
    out = io.StringIO()
    assert print_budgets([_profile()], allow_cloud=PROJECT, out=out, environ=NO_EMULATORS) == 0
    assert out.getvalue().startswith("cloud budget: cloudy → project acme-load-test\n")
    assert "REFUSED" not in out.getvalue()


def test_print_plans_prints_then_refuses(no_network: None) -> None:
    out = io.StringIO()
    with pytest.raises(UsageError) as exc:
        print_budgets([_profile(schedule={"kind": "constant", "rate": 5000})], allow_cloud=PROJECT, out=out,
                      environ=NO_EMULATORS)
    assert "REFUSED: c00-datastore-random peaks at 5,000 ops/s > max_ops_per_s 1,000" in out.getvalue()
    assert _one_line(exc).startswith("cloudy: plan exceeds the cloud caps: ")


# -- guard ----------------------------------------------------------------------------------------
def test_guard_passes_a_run_within_the_caps() -> None:
    guard = CloudGuard(max_ops_per_s=1000, max_duration_s=60)
    assert all(guard.check(elapsed_s=t, ops_last_second=1000 if t % 2 else 1090) is None for t in range(60))


def test_guard_aborts_on_one_second_far_above_the_cap() -> None:
    guard = CloudGuard(max_ops_per_s=1000, max_duration_s=60)
    assert guard.check(elapsed_s=1, ops_last_second=900) is None
    reason = guard.check(elapsed_s=2, ops_last_second=1101)
    assert reason == "cloud cap: 1,101 ops/s in the last second > max_ops_per_s 1,000 (+10% tolerance); aborted"
    assert guard.check(elapsed_s=3, ops_last_second=0) == reason  # tripped stays tripped


def test_guard_aborts_when_slightly_above_the_cap_for_three_seconds() -> None:
    guard = CloudGuard(max_ops_per_s=1000, max_duration_s=60)
    assert guard.check(elapsed_s=1, ops_last_second=1050) is None
    assert guard.check(elapsed_s=2, ops_last_second=1050) is None
    assert guard.check(elapsed_s=3, ops_last_second=999) is None  # back under: the count restarts
    assert guard.check(elapsed_s=4, ops_last_second=1050) is None
    assert guard.check(elapsed_s=5, ops_last_second=1050) is None
    assert guard.check(elapsed_s=6, ops_last_second=1050) == (
        "cloud cap: above max_ops_per_s 1,000 for 3 s (last 1,050 ops/s); aborted")


def test_guard_aborts_past_the_duration_cap() -> None:
    guard = CloudGuard(max_ops_per_s=1000, max_duration_s=600)
    assert guard.check(elapsed_s=600, ops_last_second=10) is None
    assert guard.check(elapsed_s=601, ops_last_second=10) == (
        "cloud cap: the run exceeded max_duration 10m (elapsed 10m1s); aborted")


# -- credentials and the session --------------------------------------------------------------------
def _adc_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_EMULATOR_HOST")
           and not k.startswith(("GOOGLE_", "CLOUDSDK_"))}
    # An empty HOME and gcloud config: no well-known ADC file; no metadata-server probe.
    env.update(HOME=str(home), CLOUDSDK_CONFIG=str(home / "gcloud"), NO_GCE_CHECK="true", **extra)
    return env


_CHECK = ("from keyramp.targets._cloud_target import check_credentials\n"
          "from keyramp.core._errors import UsageError\n"
          "try:\n    print('ok', check_credentials())\n"
          "except UsageError as exc:\n    print('refused', exc)\n")


def test_missing_credentials_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    env = _adc_env(tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(missing))
    out = subprocess.run([sys.executable, "-c", _CHECK], check=False, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout == ("refused cloud: no Application Default Credentials (run `gcloud auth "
                          "application-default login` or set GOOGLE_APPLICATION_CREDENTIALS): File "
                          f"{missing} was not found.\n"), out.stderr


def test_no_credentials_anywhere_is_one_line(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", _CHECK], check=False, env=_adc_env(tmp_path), capture_output=True,
                         text=True, timeout=60)
    lines = out.stdout.splitlines()
    assert len(lines) == 1, out.stdout + out.stderr
    assert lines[0].startswith("refused cloud: no Application Default Credentials (run `gcloud auth "
                               "application-default login` or set GOOGLE_APPLICATION_CREDENTIALS): ")


def _authorized_user_file(tmp_path: Path) -> Path:
    # The shape `gcloud auth application-default login` writes; loading it needs no network.
    path = tmp_path / "adc.json"
    path.write_text(json.dumps({"type": "authorized_user", "client_id": "id.apps.example", "client_secret": "s",
                                "refresh_token": "r", "quota_project_id": PROJECT}))
    return path


def test_credentials_found_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_authorized_user_file(tmp_path)))
    assert check_credentials().startswith("Credentials")


def test_session_plan_guard_and_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in [k for k in os.environ if k.endswith("_EMULATOR_HOST")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_authorized_user_file(tmp_path)))
    profile = _profile(backend=["firestore", "bigtable"], cloud={"instance": "load-test-1", "database": "loadtest",
                                                                 "max_duration": "3m"})
    session = CloudTarget(profile, allow_cloud=PROJECT)
    printed: list[str] = []
    assert session.check(ops_last_second=10**6) is None  # not started: no clock yet
    session.open(say=printed.append, note=printed.append, namespaces={"c00-firestore-random": "kr_ab12_00_random"})
    assert "writes under Firestore collection kr_ab12_00_random (database loadtest)" in printed[0]
    assert printed[1].startswith("cloud: credentials Credentials")
    assert session.started is not None
    assert session.check(ops_last_second=100, now=session.started + 30) is None
    assert session.check(ops_last_second=100, now=session.started + 181) == (
        "cloud cap: the run exceeded max_duration 3m (elapsed 3m1s); aborted")

    emulator = Target(backend="firestore", project=PROJECT, endpoint="127.0.0.1:8082", namespace="kr_ab12_00_random")
    cloud = session.address(profile.cells[0], emulator)
    assert (cloud.endpoint, cloud.instance, cloud.database, cloud.namespace) == (
        None, "load-test-1", "loadtest", "kr_ab12_00_random")
    # The clients pick the database up (constructing them makes no call).
    from keyramp.backends.datastore._client import make_datastore_client
    from keyramp.backends.firestore._client import make_firestore_client

    assert make_firestore_client(cloud)._database == "loadtest"
    assert make_datastore_client(cloud).database == "loadtest"
    plain = _profile()
    assert make_datastore_client(CloudTarget(plain, allow_cloud=PROJECT).address(plain.cells[0], emulator)).database \
        in ("", None)


def test_session_refuses_an_emulator_profile() -> None:
    with pytest.raises(UsageError) as exc:
        CloudTarget(_profile(target="emulator"), allow_cloud=None, environ=NO_EMULATORS)
    assert _one_line(exc) == "cloudy: not a cloud profile (target = 'emulator')"


def test_plan_peak_of_a_linear_ramp_is_its_end_rate() -> None:
    plan = run_budget(_profile(duration="10s", schedule={"kind": "linear", "start_ops": 100, "end_ops": 300,
                                                         "warmup": "0s"}))
    assert plan.cells[0].peak_ops_per_s == pytest.approx(300)
    assert plan.cells[0].total_ops == pytest.approx(2_000)  # mean 200 ops/s × 10 s


class _Leftovers:
    """Stands in for a backend class whose namespace still holds data (no store needed)."""

    name = "leftovers"

    @classmethod
    def cleanup(cls, target: Target) -> int:
        return 0

    @classmethod
    def remaining(cls, target: Target) -> int:
        return 7


def test_session_cell_hooks_refuse_foreign_data_and_report_failed_cleanup() -> None:
    from keyramp.core._errors import RunFailed

    profile = _profile()
    session = CloudTarget(profile, allow_cloud=PROJECT, environ=NO_EMULATORS)
    session.cleanup_pause_s = 0
    target = Target(backend="datastore", project=PROJECT, endpoint=None, namespace="kr_ab12_00_random")
    with pytest.raises(RunFailed) as exc:
        session.before_cell(profile.cells[0], _Leftovers, target, print)  # type: ignore[arg-type]
    assert str(exc.value) == ("kr_ab12_00_random already holds 7 entities/rows: refusing to write into "
                              "(and later delete) data this run did not create")
    with pytest.raises(RunFailed):
        session.after_cell(_Leftovers, target, failed=False)  # type: ignore[arg-type]
    recorded = session.after_cell(_Leftovers, target, failed=True)  # type: ignore[arg-type]
    assert recorded == {"namespace": "kr_ab12_00_random", "error": (
        "RunFailed: clean-up of kr_ab12_00_random not verified: 7 entities/rows remain after 3 attempts "
        "(delete them by hand: see docs/cloud.md)")}
    kept = CloudTarget(_profile(cloud={"cleanup": False}), allow_cloud=PROJECT, environ=NO_EMULATORS)
    assert kept.after_cell(_Leftovers, target, failed=False) is None  # type: ignore[arg-type]


def test_plan_of_an_emulator_profile_shows_numbers_only() -> None:
    text = render_budget(run_budget(_profile(target="emulator", schedule={"kind": "constant", "rate": 5000})))
    assert text.splitlines()[0] == "plan: cloudy → the emulators (caps and clean-up apply to target = 'cloud' only)"
    assert "peak 5,000 ops/s" in text
    assert "REFUSED" not in text and "afterwards" not in text and "caps:" not in text


def test_a_worker_refuses_a_cloud_cell_when_an_emulator_variable_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # A distributed worker gets a frozen plan with the cell's address; the master's opt-in
    # checks ran on another host, so the worker checks its own environment.
    from keyramp.targets import target_class

    for name in [k for k in os.environ if k.endswith("_EMULATOR_HOST")]:
        monkeypatch.delenv(name)
    target_class("cloud").check_host(os.environ)
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", "127.0.0.1:8086")
    with pytest.raises(UsageError) as exc:
        target_class("cloud").check_host(os.environ)
    assert str(exc.value) == ("target = 'cloud' but BIGTABLE_EMULATOR_HOST is set on this host: "
                              "its clients would silently go to an emulator")


def test_emulator_plan_shows_real_paths_and_the_warm_up_the_run_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run --plan` on the emulators: Bigtable tables under the instance the run uses (never
    `instances//`), and the first cell on each emulator warms as the runner's rule says
    (`cell_warmup`: a cold JVM's 10 s at least, then until settled) — not the profile's 2 s."""
    for name in [k for k in os.environ if k.endswith("_EMULATOR_HOST")]:
        monkeypatch.delenv(name)
    profile = _profile(target="emulator", project=None, backend=["datastore", "bigtable"],
                       keys={"strategy": ["random", "sequential"]}, duration="10s")
    plan = run_budget(profile)
    warm = {c.cell_id: (c.warmup_s, c.settles_on) for c in plan.cells}
    assert warm == {"c00-datastore-random": (10.0, "datastore"), "c01-datastore-sequential": (2.0, None),
                    "c02-bigtable-random": (10.0, "bigtable"), "c03-bigtable-sequential": (2.0, None)}
    assert plan.duration_s == 4 * 10 + 10 + 2 + 10 + 2
    text = render_budget(plan)
    assert "instances//" not in text and f"instances/{Target.instance}/tables/kr_<run>_02_random" in text
    assert "10s + ≥ 10s warm-up (the first cell on the bigtable emulator" in text
    assert "c01-datastore-sequential: constant 200 ops/s; peak 200 ops/s; 2,000 operations + 400 warm-up; 10s + 2s" \
        in text
    assert text.splitlines()[-1].endswith("; ≥ 1m4s")
    # an emulator the user started and named is reused: no cold JVM, the profile's warm-up (then settling)
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", "127.0.0.1:1")
    assert [c.warmup_s for c in run_budget(profile).cells] == [10.0, 2.0, 2.0, 2.0]
