"""A cloud run's own cost, printed with its plan before anything runs (forecast/_run_cost.py,
the ``costs`` hook of targets/_cloud.print_budgets, ``keyramp run --plan``). No network: the
CLI test runs with every socket call refused."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _runs import keyramp

from keyramp.core._errors import UsageError
from keyramp.forecast._prices import load_prices
from keyramp.forecast._run_cost import RunCost, budget_costs, run_cost
from keyramp.profile._profile import Profile, parse_profile
from keyramp.targets._cloud import print_budgets, run_budget
from keyramp.targets._cloud_target import CloudTarget

PROJECT = "acme-load-test"
PRICES = load_prices()
US = PRICES.stores["datastore"].locations["us-central1"].prices


def _profile(**fields: Any) -> Profile:
    raw: dict[str, Any] = {"name": "cloudy", "target": "cloud", "project": PROJECT, "backend": "datastore",
                           "duration": "60s", "schedule": {"kind": "constant", "rate": 200},
                           "workload": {"ops": {"insert": 1.0}, "record_count": 0}}
    raw.update(fields)
    return parse_profile(raw, source="cloudy.toml")


def _usd(count: float, price: str) -> float:
    return count / 1e5 * US[price].usd


def test_a_datastore_run_pays_its_writes_and_its_clean_up() -> None:
    profile = _profile(workload={"ops": {"insert": 1.0}, "record_count": 1000})
    cost = run_cost(profile, run_budget(profile), PRICES)
    (cell,) = cost.cells
    # 200 ops/s × (60 s + 2 s warm-up) inserts, 1,000 preloaded; the clean-up deletes all of them.
    assert cell.ops == pytest.approx(12_400) and cell.cleanup_deletes == pytest.approx(13_400)
    assert cell.cleanup_reads == 0  # Datastore mode lists keys only: free small operations
    assert cost.usd == pytest.approx(_usd(13_400, "writes_per_100k") + _usd(13_400, "deletes_per_100k"))
    assert RunCost.from_json(cost.to_json()).to_json() == cost.to_json()


def test_reads_updates_and_a_kept_namespace() -> None:
    profile = _profile(workload={"ops": {"read": 0.75, "update": 0.25}, "record_count": 500},
                       cloud={"cleanup": False})
    cost = run_cost(profile, run_budget(profile), PRICES, location="nam5")
    nam5 = PRICES.stores["datastore"].locations["nam5"].prices
    ops = 12_400
    expected = (ops * 0.75 * nam5["reads_per_100k"].usd + (ops * 0.25 + 500) * nam5["writes_per_100k"].usd) / 1e5
    assert cost.usd == pytest.approx(expected) and cost.cells[0].cleanup_deletes == 0
    assert cost.keeps_data and cost.storage_usd_per_month > 0  # the preloaded records stay


def test_firestore_clean_up_lists_documents_at_a_read_each() -> None:
    profile = _profile(backend="firestore")
    (cell,) = run_cost(profile, run_budget(profile), PRICES).cells
    assert cell.cleanup_reads == cell.cleanup_deletes == pytest.approx(12_400)


def test_a_closed_model_cell_is_priced_at_its_cap() -> None:
    profile = _profile(schedule={"kind": "users", "users": 5}, duration="30s")
    (cell,) = run_cost(profile, run_budget(profile), PRICES).cells
    assert cell.capped and cell.ops == pytest.approx(1000 * 32)  # max_ops_per_s × (30 s + 2 s warm-up)


def test_a_bigtable_run_bills_its_nodes_for_at_least_an_hour() -> None:
    profile = _profile(backend="bigtable", cloud={"instance": "load-test-1"})
    (cell,) = run_cost(profile, run_budget(profile), PRICES).cells
    node = PRICES.stores["bigtable"].locations["us-central1"].prices["node_hour_ssd"].usd
    assert cell.nodes == cell.needed_nodes == 1 and cell.cost.usd == pytest.approx(node)
    launch = _profile(backend="bigtable", cloud={"instance": "load-test-1"},
                      launch={"kind": "constant", "rate": 5000, "nodes": 4, "storage": "hdd"})
    (cell,) = run_cost(launch, run_budget(launch), PRICES).cells
    assert (cell.nodes, cell.needed_nodes, cell.storage) == (4, 1, "hdd")


def test_print_plans_shows_the_cost_under_a_cloud_plan_only() -> None:
    out = io.StringIO()
    print_budgets([_profile()], allow_cloud=PROJECT, out=out, environ={}, costs=budget_costs(PRICES))
    text = out.getvalue()
    assert "cost: $0.0124 (estimate at list prices, before free tier and discounts" in text
    assert "c00-datastore-random: $0.0124 = 12,400 writes $0.0112 + 12,400 deletes $0.00124; us-central1 (regional)" \
        in text
    emulator = io.StringIO()
    print_budgets([_profile(target="emulator", project="keyramp-local")], allow_cloud=None, out=emulator,
                  costs=budget_costs(PRICES))
    assert "cost" not in emulator.getvalue()


def test_the_real_run_prices_its_plan_before_it_starts() -> None:
    session = CloudTarget(_profile(), allow_cloud=PROJECT, environ={}, budget_costs=budget_costs(PRICES))
    assert session.cost_text is not None and session.cost_text.startswith("cost: $0.0124")
    with pytest.raises(UsageError) as exc:  # a location the table lacks: refused at construction
        CloudTarget(_profile(backend="bigtable", cloud={"instance": "load-test-1"}), allow_cloud=PROJECT, environ={},
                    budget_costs=budget_costs(PRICES, location="nam5"))
    assert "no prices for location 'nam5'" in str(exc.value)


_OFFLINE = """
import socket, sys
def refuse(*a, **k):
    raise AssertionError("network call during planning")
socket.socket.connect = socket.socket.connect_ex = refuse
socket.create_connection = socket.getaddrinfo = refuse
from keyramp.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def test_run_plan_prints_the_cost_offline(tmp_path: Path) -> None:
    profile = tmp_path / "cloudy.toml"
    profile.write_text(f'name = "cloudy"\ntarget = "cloud"\nproject = "{PROJECT}"\nbackend = ["datastore", '
                       '"bigtable"]\nduration = "60s"\n[schedule]\nkind = "constant"\nrate = 200\n'
                       '[cloud]\ninstance = "load-test-1"\n')
    # No emulator variables and no credentials: a client that tried to reach Google would fail too.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_GCE_CHECK": "true"}
    result = subprocess.run([sys.executable, "-c", _OFFLINE, "run", str(profile), "--allow-cloud", PROJECT,
                             "--plan"], capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path,
                            check=False)
    assert result.returncode == 0, result.stderr
    # The default workload: half reads, half inserts, 1,000 records preloaded. Datastore mode: 6,200 reads,
    # 6,200 + 1,000 writes, and the clean-up deletes the 7,200 records; Bigtable: one node, one hour.
    assert "cost: $0.659 (estimate at list prices, before free tier and discounts" in result.stdout
    assert ("c00-datastore-random: $0.00906 = 6,200 reads $0.00186 + 7,200 writes $0.00648 + 7,200 deletes $0.00072"
            in result.stdout)
    assert "c01-bigtable-random: $0.65 = 1 ssd node-hours $0.65" in result.stdout
    assert result.stdout.index("total: peak") < result.stdout.index("cost: $")


def test_prices_for_an_emulator_run_are_refused(tmp_path: Path) -> None:
    profile = tmp_path / "local.toml"
    profile.write_text('name = "local"\nbackend = "datastore"\nduration = "5s"\n')
    result = keyramp("run", str(profile), "--plan", "--location", "nam5", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "keyramp: --location: applies to target = 'cloud' profiles, and none is given"
