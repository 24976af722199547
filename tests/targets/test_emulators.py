"""Emulator lifecycle: up/status/down through the state file, reset, error messages, CLI."""

from __future__ import annotations

import argparse
import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import TEST_PROJECT

from keyramp.backends import Backend
from keyramp.cli._emulators import register
from keyramp.core._errors import EmulatorError, UsageError
from keyramp.targets._emulators import (
    EMULATORS,
    EmulatorManager,
    default_state_dir,
    endpoints_from_env,
    reset,
)


def _tree(pid: int) -> list[psutil.Process]:
    proc = psutil.Process(pid)
    return [proc, *proc.children(recursive=True)]


def _gone(procs: list[psutil.Process]) -> bool:
    return not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in procs)


@pytest.mark.emulator
@pytest.mark.slow
def test_up_status_down_through_state_file(tmp_path: Path) -> None:
    manager = EmulatorManager(state_dir=tmp_path)
    try:
        first = manager.up(["datastore", "bigtable"], consistency=0.5)
        assert set(first) == {"datastore", "bigtable"}
        cmdline = psutil.Process(first["datastore"].pid).cmdline()
        assert "--consistency=0.5" in cmdline and "--host=127.0.0.1" in cmdline
        procs = _tree(first["datastore"].pid) + _tree(first["bigtable"].pid)

        # A second manager (another process in real life) sees and reuses them.
        other = EmulatorManager(state_dir=tmp_path)
        again = other.up(["bigtable", "datastore"])
        assert {k: v.pid for k, v in again.items()} == {k: v.pid for k, v in first.items()}
        status = {e.kind: e for e in other.status()}
        assert set(status) == {"datastore", "bigtable"} and all(e.alive() for e in status.values())
        with pytest.raises(EmulatorError, match="consistency"):
            other.up(["datastore"], consistency=0.9)

        assert sorted(other.down()) == ["bigtable", "datastore"]
        assert _gone(procs), "an emulator process (or JVM child) survived down()"
        assert manager.status() == []
        assert json.loads((tmp_path / "emulators.json").read_text()) == {"emulators": {}}
    finally:
        manager.down()


@pytest.mark.emulator
def test_up_replaces_a_dead_emulator(tmp_path: Path) -> None:
    manager = EmulatorManager(state_dir=tmp_path)
    try:
        old = manager.up(["bigtable"])["bigtable"]
        psutil.Process(old.pid).kill()
        psutil.Process(old.pid).wait(5)
        assert not manager.status()[0].alive()
        new = manager.up(["bigtable"])["bigtable"]
        assert new.pid != old.pid and new.alive()
    finally:
        manager.down()


@pytest.mark.emulator
def test_concurrent_runs_never_share_an_emulator(tmp_path: Path) -> None:
    """A run resets its store before each cell: two runs on one emulator would wipe each
    other's data. A run leases a shared emulator only when no other live run holds it, and
    otherwise starts its own, which its release (or, after a crash, the next ``up``) stops."""
    shared = EmulatorManager(state_dir=tmp_path)
    first, second = EmulatorManager(state_dir=tmp_path), EmulatorManager(state_dir=tmp_path)
    try:
        common = shared.up(["bigtable"])["bigtable"]  # `keyramp emulators up`
        a = first.up(["bigtable"], for_run=True)["bigtable"]
        assert a.pid == common.pid and first.last_started == []  # the idle shared one is leased
        b = second.up(["bigtable"], for_run=True)["bigtable"]
        assert b.pid != common.pid and second.last_started == ["bigtable"]  # held: a private one
        owners = {e.pid: e.owner for e in shared.status()}
        assert owners[common.pid] is None and owners[b.pid] is not None
        assert second.release() == ["bigtable"] and not b.alive()  # its own: stopped
        assert first.release() == [] and common.alive()  # the shared one outlives its runs
        third = EmulatorManager(state_dir=tmp_path)
        assert third.up(["bigtable"], for_run=True)["bigtable"].pid == common.pid  # free again
        third.release()
    finally:
        for m in (first, second, shared):
            m.release()
        shared.down()


@pytest.mark.emulator
def test_an_emulator_of_a_run_that_died_is_stopped_by_the_next_up(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import os, sys; from keyramp.targets._emulators import EmulatorManager\n"
            "emu = EmulatorManager(state_dir=sys.argv[1]).up(['bigtable'], for_run=True)['bigtable']\n"
            "print(emu.pid, flush=True); os._exit(0)  # a run killed before its release\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    orphan = psutil.Process(int(out.stdout.split()[0]))
    procs = _tree(orphan.pid)
    manager = EmulatorManager(state_dir=tmp_path)
    try:
        assert [e.orphaned() for e in manager.status()] == [True]
        fresh = manager.up(["bigtable"], for_run=True)["bigtable"]
        assert fresh.pid != orphan.pid and _gone(procs)
        assert [e.pid for e in manager.status()] == [fresh.pid]
    finally:
        manager.release()


def _reset_cases() -> list[str]:
    return ["datastore", "firestore-datastore", "firestore", "bigtable"]


@pytest.mark.emulator
@pytest.mark.parametrize("name", _reset_cases())
def test_reset_clears_data(backend_factory: Callable[..., Backend], name: str) -> None:
    b = backend_factory(name)
    b.insert("a", {"n": 1})
    assert b.read("a")
    reset(name, b.target.endpoint or "", project=TEST_PROJECT, table=b.target.namespace,
          instance=b.target.instance)
    if name == "bigtable":  # the table is dropped; prepare() brings it back empty
        type(b).prepare(b.target)
    assert not b.read("a")


def _fake_sdk(root: Path, script: str) -> Path:
    binary = root / EMULATORS["bigtable"].artifact
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n" + script)
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    return binary


def test_startup_timeout_reports_log_tail_and_kills(tmp_path: Path) -> None:
    binary = _fake_sdk(tmp_path / "sdk", 'echo "fake emulator booting on $2:$4"\n'
                       'echo $$ > "$(dirname "$0")/pid"\nexec sleep 60\n')
    manager = EmulatorManager(state_dir=tmp_path / "state", sdk_root=tmp_path / "sdk", startup_timeout_s=1.5)
    with pytest.raises(EmulatorError) as err:
        manager.up(["bigtable"])
    message = str(err.value)
    assert "not ready after 1.5s" in message and "fake emulator booting on 127.0.0.1:" in message
    assert "\n" not in message
    pid = int((binary.parent / "pid").read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert manager.status() == []


def test_early_exit_reports_exit_code_and_log(tmp_path: Path) -> None:
    _fake_sdk(tmp_path / "sdk", 'echo "flag provided but not defined: -bogus" >&2\nexit 3\n')
    manager = EmulatorManager(state_dir=tmp_path / "state", sdk_root=tmp_path / "sdk")
    with pytest.raises(EmulatorError, match=r"exited with code 3: .*flag provided but not defined"):
        manager.up(["bigtable"])


def test_missing_sdk_points_at_docker_compose(tmp_path: Path) -> None:
    manager = EmulatorManager(state_dir=tmp_path / "state", sdk_root=tmp_path / "no-sdk")
    with pytest.raises(EmulatorError) as err:
        manager.up(["datastore"])
    message = str(err.value)
    assert "docker compose up emulators" in message and "DATASTORE_EMULATOR_HOST" in message
    assert "BIGTABLE_EMULATOR_HOST" in message and "\n" not in message


def test_sdk_root_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from keyramp.targets._emulators import sdk_root

    monkeypatch.setenv("KEYRAMP_CLOUD_SDK_ROOT", str(tmp_path))
    assert sdk_root() == tmp_path
    monkeypatch.delenv("KEYRAMP_CLOUD_SDK_ROOT")
    assert (sdk_root() / EMULATORS["bigtable"].artifact).exists()  # gcloud info on this machine


def test_unknown_kind_and_bad_consistency_are_usage_errors(tmp_path: Path) -> None:
    manager = EmulatorManager(state_dir=tmp_path)
    with pytest.raises(UsageError, match="unknown emulator 'spanner'"):
        manager.up(["spanner"])
    with pytest.raises(UsageError, match="consistency"):
        manager.up(["datastore"], consistency=1.5)


def test_endpoints_from_env() -> None:
    env = {"DATASTORE_EMULATOR_HOST": "h:1", "FIRESTORE_EMULATOR_HOST": "h:2",
           "KEYRAMP_FIRESTORE_DATASTORE_EMULATOR_HOST": "h:3", "BIGTABLE_EMULATOR_HOST": "h:4",
           "PUBSUB_EMULATOR_HOST": "h:5", "DATASTORE_DATASET": "x"}
    assert endpoints_from_env(env) == {"datastore": "h:1", "firestore": "h:2",
                                       "firestore-datastore": "h:3", "bigtable": "h:4"}
    assert endpoints_from_env({"BIGTABLE_EMULATOR_HOST": ""}) == {}


def test_default_state_dir_precedence() -> None:
    assert default_state_dir({"KEYRAMP_STATE_DIR": "/a", "XDG_STATE_HOME": "/b"}) == Path("/a")
    assert default_state_dir({"XDG_STATE_HOME": "/b"}) == Path("/b/keyramp")
    assert default_state_dir({}) == Path.home() / ".local/state/keyramp"


def _cli(argv: list[str]) -> tuple[int, Any]:
    parser = argparse.ArgumentParser(prog="keyramp")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args), args


@pytest.mark.emulator
def test_cli_up_status_down(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sd = ["--state-dir", str(tmp_path)]
    try:
        assert _cli(["emulators", "up", "bigtable", *sd])[0] == 0
        line = capsys.readouterr().out.strip()
        assert line.startswith("export BIGTABLE_EMULATOR_HOST=127.0.0.1:")
        endpoint = line.split("=", 1)[1]

        assert _cli(["emulators", "status", "--json", *sd])[0] == 0
        rows = json.loads(capsys.readouterr().out)
        assert [(r["kind"], r["endpoint"], r["alive"]) for r in rows] == [("bigtable", endpoint, True)]
        assert _cli(["emulators", "status", *sd])[0] == 0
        table = capsys.readouterr().out
        assert "KIND" in table and endpoint in table and "yes" in table
        pid = rows[0]["pid"]
    finally:
        assert _cli(["emulators", "down", *sd])[0] == 0
    assert "stopped: bigtable" in capsys.readouterr().out
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    with pytest.raises(SystemExit):
        _cli(["emulators", "up", "--bogus", *sd])


def test_docker_compose_file_matches_emulator_ports() -> None:
    text = (Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text()
    assert "gcr.io/google.com/cloudsdktool/google-cloud-cli:emulators" in text
    for spec in EMULATORS.values():
        assert f"{spec.compose_port}:{spec.compose_port}" in text, spec.kind


@pytest.mark.emulator
def test_the_datastore_emulator_writes_its_artefacts_in_keyramps_own_directory(
        emulator_manager: EmulatorManager, datastore_emulator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    monkeypatch.setenv("DATASTORE_EMULATOR_HOST", datastore_emulator.endpoint)
    # The legacy Datastore emulator writes WEB-INF/appengine-generated/ into its working
    # directory: that is <state dir>/work/<kind>-<port>/, never the directory keyramp runs in.
    from google.cloud import datastore

    client = datastore.Client(project=TEST_PROJECT, namespace="artefacts")
    client.put(datastore.Entity(client.key("K", 1)))
    list(client.query(kind="K").fetch(limit=1))  # a query makes it note its auto indexes
    work = emulator_manager.state_dir / "work" / f"datastore-{datastore_emulator.port}"
    assert list(work.glob("WEB-INF/appengine-generated/*.xml"))
    assert psutil.Process(datastore_emulator.pid).cwd() == str(work.resolve())
    assert not (Path.cwd() / "WEB-INF").exists()
    repo = Path(__file__).resolve().parents[2]
    tracked = subprocess.run(["git", "ls-files", "WEB-INF"], cwd=repo, capture_output=True, text=True)
    if tracked.returncode == 0:  # a git checkout: never committed again, and ignored
        assert tracked.stdout == ""
        ignored = subprocess.run(["git", "check-ignore", "-q", "WEB-INF/appengine-generated/x.xml"], cwd=repo)
        assert ignored.returncode == 0
