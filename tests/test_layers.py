"""The layer order: the one docs/architecture.md states is the one the import contract in
pyproject.toml enforces (``lint-imports``, in the README's test command), and it covers every
package and core module, so nothing new escapes it unnoticed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "keyramp"


def _contract_layers() -> list[list[str]]:
    """The contract's layers, lowest first, each a list of names relative to ``keyramp``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [[name.strip().removeprefix("keyramp.") for name in re.split(r"[|:]", line)]
            for line in reversed(contract["layers"])]


def _documented_order() -> list[list[str]]:
    """The order in docs/architecture.md's Layers section, lowest first (``core`` stands for the
    core modules, ``a | b``: one layer)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"^## Layers\n.*?```\n(.*?)```", text, re.S | re.M)
    assert block, "docs/architecture.md has no Layers section with the order"
    steps = block.group(1).replace("core (keyramp/_*.py)", "core").split("→")
    return [[name.strip() for name in step.split("|")] for step in steps]


def test_the_documented_order_is_the_enforced_one() -> None:
    contract = _contract_layers()
    core, packages = contract[0], contract[1:]
    assert all(name.startswith("_") for name in core)
    assert _documented_order() == [["core"], *packages]


def test_every_package_and_core_module_is_in_a_layer() -> None:
    layered = {name for layer in _contract_layers() for name in layer}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    core = {p.stem for p in PACKAGE.glob("_*.py")} - {"__init__", "__main__"}
    assert packages | core == layered
