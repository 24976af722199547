"""docker-compose.yml: validated by ``docker compose config`` where a compose CLI exists
(it needs no engine), and always read as YAML so the checks never depend on Docker.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from keyramp.cli._main import build_parser
from keyramp.targets._emulators import EMULATORS

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
EMULATOR_IMAGE = "gcr.io/google.com/cloudsdktool/google-cloud-cli:emulators"
KEYRAMP_SERVICES = ("master", "worker", "ui")


def _compose_cli() -> list[str] | None:
    """``docker compose`` (v2 plugin) or the standalone ``docker-compose``; None if neither runs."""
    candidates = []
    if shutil.which("docker"):
        candidates.append(["docker", "compose"])
    if shutil.which("docker-compose"):
        candidates.append(["docker-compose"])
    for cli in candidates:
        try:
            ok = subprocess.run([*cli, "version"], check=False, capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return cli
    return None


def _yaml() -> Any:
    return pytest.importorskip("yaml", reason="PyYAML is not installed (test extra)")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _yaml().safe_load(COMPOSE.read_text(encoding="utf-8"))


def _published(service: dict[str, Any]) -> list[str]:
    return [str(p) for p in service.get("ports", [])]


def test_compose_config_validates_and_interpolates() -> None:
    cli = _compose_cli()
    if cli is None:
        pytest.skip("no docker compose / docker-compose CLI on this machine")
    env = {**os.environ, "KEYRAMP_WORKERS": "3", "KEYRAMP_PROFILE": "profiles/examples/x.toml"}
    out = subprocess.run([*cli, "-f", str(COMPOSE), "--project-directory", str(ROOT), "config"],
                         check=False, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    resolved = _yaml().safe_load(out.stdout)["services"]
    master = [str(a) for a in resolved["master"]["command"]]
    assert master[:3] == ["keyramp", "run", "profiles/examples/x.toml"]
    assert master[master.index("--expect-workers") + 1] == "3"
    assert int(resolved["worker"]["deploy"]["replicas"]) == 3  # the master waits for what is started


def test_services_and_images(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(EMULATORS) | {"emulators", "install", *KEYRAMP_SERVICES} <= set(services)
    for kind in EMULATORS:
        assert services[kind]["image"] == EMULATOR_IMAGE
        assert "healthcheck" in services[kind]
        # the Datastore emulator's WEB-INF/ goes to a scratch directory, not a mounted one
        assert services[kind]["working_dir"] == "/tmp" and not services[kind].get("volumes")
    assert set(services["emulators"]["depends_on"]) == set(EMULATORS)


def test_emulators_listen_where_the_env_vars_point(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in KEYRAMP_SERVICES:
        env = services[name]["environment"]
        for kind, spec in EMULATORS.items():
            # e.g. DATASTORE_EMULATOR_HOST=datastore:8081: the service of that emulator, on the
            # port its command binds (inside the network) and publishes (on the host).
            assert env[spec.env_var] == f"{kind}:{spec.compose_port}", (name, spec.env_var)
            assert f"--host-port=0.0.0.0:{spec.compose_port}" in services[kind]["command"]
            assert _published(services[kind]) == [f"127.0.0.1:{spec.compose_port}:{spec.compose_port}"]


def test_master_worker_and_ui_commands(compose: dict[str, Any]) -> None:
    services = compose["services"]
    master = [str(a) for a in services["master"]["command"]]
    assert master[:2] == ["keyramp", "run"] and "--master" in master
    port = master[master.index("--master-port") + 1]
    assert master[master.index("--master-bind-host") + 1] == "0.0.0.0"
    assert master[master.index("--expect-workers") + 1] == "${KEYRAMP_WORKERS:-4}"
    assert str(services["worker"]["deploy"]["replicas"]) == "${KEYRAMP_WORKERS:-4}"
    metrics_port = master[master.index("--metrics") + 1].split(":")[-1]
    assert master[master.index("--metrics") + 1] == f"0.0.0.0:{metrics_port}"
    assert [str(p) for p in services["master"]["expose"]] == [port, metrics_port]
    assert not _published(services["master"])
    worker = [str(a) for a in services["worker"]["command"]]
    assert worker[:3] == ["keyramp", "run", "--worker"]
    assert worker[worker.index("--master-host") + 1] == "master"
    assert worker[worker.index("--master-port") + 1] == port
    # A scalable service must not pin host ports or a container name (replicas would clash).
    assert not _published(services["worker"]) and "container_name" not in services["worker"]
    ui = [str(a) for a in services["ui"]["command"]]
    ui_port = ui[ui.index("--port") + 1]
    assert ui[:2] == ["keyramp", "ui"] and ui[ui.index("--host") + 1] == "0.0.0.0"
    assert _published(services["ui"]) == [f"127.0.0.1:{ui_port}:{ui_port}"]
    conditions = {k: v["condition"] for k, v in services["master"]["depends_on"].items()}
    assert conditions == {"install": "service_completed_successfully", **{k: "service_healthy" for k in EMULATORS}}


def test_every_published_port_is_loopback_only(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for port in _published(service):
            assert port.startswith("127.0.0.1:"), (name, port)


def test_keyramp_services_run_the_installed_keyramp(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in KEYRAMP_SERVICES:
        assert "keyramp:/opt/keyramp:ro" in services[name]["volumes"]
        assert services[name]["environment"]["PATH"].startswith("/opt/keyramp/bin:")
    assert "keyramp:/opt/keyramp" in services["install"]["volumes"]
    assert "keyramp" in compose["volumes"]


def test_ui_command_parses_with_the_real_cli(compose: dict[str, Any]) -> None:
    args = build_parser().parse_args([str(a) for a in compose["services"]["ui"]["command"][1:]])
    assert (args.host, args.port, args.results) == ("0.0.0.0", 8765, "results")


def test_master_and_worker_commands_parse_with_the_real_cli(compose: dict[str, Any]) -> None:
    parser = build_parser()
    master = [str(a).replace("${KEYRAMP_WORKERS:-4}", "4").replace("${KEYRAMP_PROFILE:-profiles/quickstart.toml}",
                                                                  "profiles/quickstart.toml")
              for a in compose["services"]["master"]["command"][1:]]
    args = parser.parse_args(master)
    assert args.master and args.expect_workers == 4
    args = parser.parse_args([str(a) for a in compose["services"]["worker"]["command"][1:]])
    assert args.worker and args.master_host == "master"


def test_metrics_services_scrape_the_master_and_load_the_dashboard(compose: dict[str, Any]) -> None:
    import json
    import re

    services = compose["services"]
    assert services["prometheus"]["profiles"] == services["grafana"]["profiles"] == ["metrics"]
    master = [str(a) for a in services["master"]["command"]]
    metrics_port = master[master.index("--metrics") + 1].split(":")[-1]
    mounts = {v.split(":")[1]: ROOT / v.split(":")[0] for v in services["prometheus"]["volumes"]}
    prom = _yaml().safe_load(mounts["/etc/prometheus/prometheus.yml"].read_text())
    assert prom["scrape_configs"][0]["static_configs"][0]["targets"] == [f"master:{metrics_port}"]
    grafana = {v.split(":")[1]: ROOT / v.split(":")[0] for v in services["grafana"]["volumes"]}
    datasource = _yaml().safe_load((grafana["/etc/grafana/provisioning"] / "datasources" / "prometheus.yml")
                                   .read_text())["datasources"][0]
    assert datasource["url"] == "http://prometheus:9090"
    provider = _yaml().safe_load((grafana["/etc/grafana/provisioning"] / "dashboards" / "keyramp.yml").read_text())
    dashboards = grafana[provider["providers"][0]["options"]["path"]]
    dashboard = json.loads((dashboards / "keyramp-dashboard.json").read_text())
    uids = {p["datasource"]["uid"] for p in dashboard["panels"]}
    uids |= {t["datasource"]["uid"] for p in dashboard["panels"] for t in p["targets"]}
    assert uids == {datasource["uid"]}
    # every metric the dashboard queries is one the exporter serves (design check: names only;
    # tests/metrics/test_prometheus.py runs the queries against a real Prometheus)
    from keyramp.metrics._exposition import FAMILIES

    served = {re.sub(r"_total$", "", name) for name, _, _ in FAMILIES}
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["query"]["query"] for v in dashboard["templating"]["list"]]
    used = {re.sub(r"_(total|bucket|sum|count)$", "", m) for e in exprs for m in re.findall(r"keyramp_\w+", e)}
    assert used and used <= served, used - served
