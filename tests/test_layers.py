"""The layer order: the one docs/architecture.md states is the one the import contract in
pyproject.toml enforces (``lint-imports``, in the README's test command), and it covers every
package and core module, so nothing new escapes it unnoticed."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "keyramp"


def _contract_layers() -> list[list[str]]:
    """The contract's layers, lowest first, each a list of names relative to ``keyramp``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["id"] == "layers"]
    return [[name.strip().removeprefix("keyramp.") for name in re.split(r"[|:]", line)]
            for line in reversed(contract["layers"])]


def _documented_order() -> list[list[str]]:
    """The order in docs/architecture.md's Layers section, lowest first (``core`` stands for the
    core modules, ``a | b``: one layer)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"^## Layers\n.*?```\n(.*?)```", text, re.S | re.M)
    assert block, "docs/architecture.md has no Layers section with the order"
    steps = block.group(1).replace("core (keyramp/core/)", "core").split("→")
    return [[name.strip() for name in step.split("|")] for step in steps]


def test_the_documented_order_is_the_enforced_one() -> None:
    assert _documented_order() == _contract_layers()


def test_every_package_and_core_module_is_in_a_layer() -> None:
    layered = {name for layer in _contract_layers() for name in layer}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == layered
    assert {p.name for p in PACKAGE.glob("*.py")} == {"__init__.py", "__main__.py"}  # the root: facade, entry point


def _contract(contract_id: str) -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["id"] == contract_id]
    return contract


@pytest.mark.parametrize(("contract_id", "allowed"), [("locust", {"run", "cli"}), ("flask", {"web"}),
                                                      ("argparse", {"cli"})])
def test_a_forbidden_library_is_forbidden_everywhere_else(contract_id: str, allowed: set[str]) -> None:
    # A new package is forbidden the library too, or this fails: the lists are written out in the contract.
    contract = _contract(contract_id)
    layered = {name for layer in _contract_layers() for name in layer}
    assert {m.removeprefix("keyramp.") for m in contract["source_modules"]} == layered - allowed
    assert contract["forbidden_modules"] == [contract_id]


@pytest.mark.parametrize("package", ["run", "results"])
def test_inside_a_package_every_module_has_a_layer(package: str) -> None:
    # exhaustive: lint-imports itself fails on a module of the package that no layer names.
    contract = _contract(f"{package}-layers")
    assert contract["containers"] == [f"keyramp.{package}"] and contract["exhaustive"] is True


def _strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant in a module's code (docstrings left out)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def _layer_of(module: str) -> int | None:
    part = module.split(".")[1] if module.count(".") else ""
    for index, layer in enumerate(_contract_layers()):
        if part in layer:
            return index
    return None


def modules_named_above() -> list[str]:
    """``file:line name`` where a module names, in a string, a keyramp module of a higher layer: a
    subprocess (``python -m …``), ``importlib.import_module``, a driver path. grimp cannot see
    these, so the layers contract cannot either."""
    found = []
    named = re.compile(r"keyramp(\.[A-Za-z_]\w*)+")
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        here = _layer_of(module)
        for line, text in _strings(path):
            match = named.fullmatch(text.partition(":")[0])
            there = _layer_of(text) if match else None
            if here is not None and there is not None and there > here:
                found.append(f"{path.relative_to(ROOT)}:{line} {text}")
    return found


def test_subprocesses_and_dynamic_imports_do_not_climb_the_layers() -> None:
    assert modules_named_above() == []
    # Its own entry points are what lower layers start: a worker, the latency proxy, a store proxy.
    assert all((PACKAGE / m).is_file() for m in ("run/worker.py", "targets/netem.py", "targets/proxy.py"))
    assert _layer_of("keyramp.cli._main") == len(_contract_layers()) - 1 > _layer_of("keyramp.targets._netem")
