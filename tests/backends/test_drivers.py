"""Drivers by name, and ``driver = "grpc"`` through the real CLI on every store."""

from __future__ import annotations

from pathlib import Path

import pytest
from _runs import assert_rate_held, emulator_env, keyramp, load, only_run_dir, write_profile

from keyramp.backends import BACKENDS, spec_for
from keyramp.backends._rpc import GrpcBackend
from keyramp.core._errors import UsageError
from keyramp.targets._emulators import RunningEmulator

STORES = ["datastore", "firestore", "firestore-datastore", "bigtable"]


@pytest.mark.parametrize("store", STORES)
def test_every_store_has_both_drivers(store: str) -> None:
    spec = spec_for(store)
    assert spec.default_driver == "client" and spec.driver() is BACKENDS[store]
    grpc_class = spec.driver("grpc")
    # The same store name: the spec (features, limits, key rules) applies to both drivers.
    assert issubclass(grpc_class, GrpcBackend) and grpc_class.name == store
    with pytest.raises(UsageError, match="unknown driver 'http'"):
        spec.driver("http")


@pytest.mark.emulator
def test_grpc_driver_runs_every_op_on_every_store(tmp_path: Path, datastore_emulator: RunningEmulator,
                                                 firestore_emulator: RunningEmulator,
                                                 firestore_datastore_emulator: RunningEmulator,
                                                 bigtable_emulator: RunningEmulator) -> None:
    """One run, four cells: the recorder sees every operation, no errors, the manifest names the driver."""
    env = emulator_env(datastore_emulator, firestore_emulator, firestore_datastore_emulator, bigtable_emulator)
    ops = {"insert": 0.3, "read": 0.2, "update": 0.1, "delete": 0.05, "scan": 0.05, "query": 0.05,
           "batch_write": 0.05, "batch_read": 0.1, "transaction": 0.05, "increment": 0.05}
    profile = write_profile(
        tmp_path / "p.toml", {"name": "grpc-driver", "backend": STORES, "driver": "grpc", "duration": "2s"},
        workload={"ops": ops, "record_count": 100, "batch_size": 5},
        keys={"strategy": ["hashed_prefix"]}, schedule={"kind": "constant", "rate": 150, "warmup": "0s"},
    )
    result = keyramp("run", str(profile), "--out", str(tmp_path / "out"), "--quiet", env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    run_dir = only_run_dir(tmp_path / "out")
    assert {c["driver"] for c in load(run_dir, "manifest.json")["cells"]} == {"grpc"}
    cells = load(run_dir, "summary.json")["cells"]
    assert len(cells) == 4
    for cell_id, cell in cells.items():
        kept_up = assert_rate_held(cell)  # 150 ops/s for 2 s, or the lateness that held it back is recorded
        # No errors but the odd ABORTED: writes to the same few keys contend, the more so when a
        # busy machine slows the emulator (longer transactions overlap more): the store's answer.
        total = cell["total"]
        assert set(total["errors_by_class"]) <= {"ABORTED"}, (cell_id, total["errors_by_class"])
        assert total["errors"] <= 0.05 * total["count"], (cell_id, total["errors_by_class"])
        # Every operation ran (the rarest ones at least once in 2 s at 150 ops/s, when it kept up).
        seen = {op: stats["count"] for op, stats in cell["operations"].items()}
        assert set(seen) == set(ops) if kept_up else set(seen) <= set(ops), (cell_id, seen)
