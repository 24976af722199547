"""docs/workloads.md's transaction example, as written there, on the Firestore emulator (issue 39):
public API only, and the store's aborts recorded and named — in summary.json, the terminal, the
table and report.txt — with a limited-cell diagnosis that does not blame the generator for them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from _runs import emulator_env, keyramp, load, only_run_dir

from keyramp.results._generator import ERROR_GAPS, ERROR_SHARE, error_gaps, starved_reason
from keyramp.results._summary import CellSummary

pytestmark = pytest.mark.emulator

DOC = Path(__file__).resolve().parents[2] / "docs" / "workloads.md"


def _block(lang: str, name: str) -> str:
    match = re.search(rf"```{lang}\n# {re.escape(name)}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert match, name
    return f"# {name}\n" + match.group(1)


def test_the_cart_transaction_example_records_its_aborts_by_name(firestore_emulator: Any, tmp_path: Path) -> None:
    code = _block("python", "cart.py")
    assert "_begin" not in code and "_commit" not in code and "firestore.transactional" in code  # public API
    (tmp_path / "cart.py").write_text(code, encoding="utf-8")
    # briefly: a 5 s cell (--duration) without the 2 s warm-up, on 2 carts rather than 20 and at 300
    # ops/s: aborts need transactions that overlap, and at 100 ops/s an operation of ~2 ms overlaps
    # another too rarely (20 carts: 6 aborts in 125 checkouts, and 0 in a CI run; 2 carts: 0 in 131
    # checkouts once in four runs)
    toml = _block("toml", "cart.toml").replace("rate = 100\n", 'rate = 300\nwarmup = "0s"\n', 1)
    toml = toml.replace("record_count = 20 ", "record_count = 2 ", 1)
    assert 'warmup = "0s"' in toml and "record_count = 2 " in toml and "rate = 300" in toml
    (tmp_path / "cart.toml").write_text(toml, encoding="utf-8")
    out = tmp_path / "out"
    result = keyramp("run", str(tmp_path / "cart.toml"), "--out", str(out), "--duration", "5s",
                     env=emulator_env(firestore_emulator))
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: its error-rate threshold
    run_dir = only_run_dir(out)
    cell_id, raw = next(iter(load(run_dir, "summary.json")["cells"].items()))
    cell = CellSummary.from_json(raw)
    checkout = cell.operations["checkout"]
    aborted = checkout.errors_by_class.get("ABORTED")
    assert aborted is not None and aborted.count > 0, checkout.errors_by_class  # recorded, as the store's
    assert not [c for c in checkout.errors_by_class if c.startswith("CLIENT_")]  # never a workload error

    # named, with its share, where a person looks: the finished-cell line, the table, report.txt
    named = re.compile(r"\d+(?:\.\d+)? % ABORTED")
    terminal = result.stdout + result.stderr
    assert re.search(rf"✓ 1/1 {cell_id}: .*errors [\d,]+ \(.*ABORTED", terminal), terminal[-6000:]
    row = next(line for line in (run_dir / "report.txt").read_text().splitlines() if line.startswith(f"│ {cell_id}"))
    assert named.search(row), row
    assert named.search(next(line for line in result.stdout.splitlines() if f"│ {cell_id}" in line))

    # the diagnosis: when the lost seconds were the seconds the store aborted, it is the store's
    gaps, with_errors = error_gaps(cell)
    total = cell.total
    assert total is not None and cell.generator is not None
    stalled = gaps and with_errors >= ERROR_GAPS * gaps and (total.error_rate or 0) >= ERROR_SHARE
    if stalled and not starved_reason(cell):
        assert cell.generator.store_errors and not cell.generator_limited and "ABORTED" in (cell.generator.reason or "")
        assert 'lower the rate, use driver = "grpc"' not in terminal
    print(f"cart example: {checkout.count} checkouts, {aborted.count} ABORTED; {gaps} throughput gaps, "
          f"{with_errors} with errors; generator: {cell.generator.reason}")
