"""A store is one package (docs/stores.md "Checks"): outside ``keyramp/backends/`` no file of keyramp
names a store, no code names a store's user class, nothing dispatches on an operation's name, and
each built-in store's package holds what keyramp knows about it (price sheet, user class,
locustfile). The toy store (``tests/backends/test_fourth_store.py``) shows the seam from outside."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from keyramp.backends import STORES

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "keyramp"
STORE_PACKAGES = PACKAGE / "backends"


def _outside_the_store_packages(package: Path) -> list[Path]:
    """Every file of ``package`` outside its ``backends/`` (code, templates, data)."""
    return sorted(p for p in package.rglob("*") if p.is_file() and p.suffix != ".pyc"
                  and package / "backends" not in p.parents)


def files_naming_a_store(names: tuple[str, ...], package: Path = PACKAGE) -> list[str]:
    """``file: "name"`` for each quoted store name outside the store packages (docs/stores.md's grep)."""
    quoted = re.compile("[\"'](" + "|".join(map(re.escape, names)) + ")[\"']")
    found = []
    for path in _outside_the_store_packages(package):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file (an icon) names nothing
        found += [f"{path.relative_to(package.parent)}: {m.group(0)}" for m in quoted.finditer(text)]
    return found


def code_naming(identifiers: set[str], package: Path = PACKAGE) -> list[str]:
    """``module:line name`` where code outside the store packages uses one of ``identifiers``
    (a name, an attribute, an import, a string) — docstrings and comments may mention them."""
    found = []
    for path in _outside_the_store_packages(package):
        if path.suffix != ".py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                    else node.name if isinstance(node, ast.alias)
                    else node.value if isinstance(node, ast.Constant) and id(node) not in docstrings else None)
            if isinstance(name, str) and any(re.search(rf"\b{i}\b", name) for i in identifiers):
                found.append(f"{path.relative_to(package.parent)}:{getattr(node, 'lineno', '?')} {name}")
    return found


def builtin_names() -> tuple[str, ...]:
    return tuple(spec.name for spec in STORES.specs())


def test_outside_the_store_packages_nothing_names_a_store() -> None:
    assert len(builtin_names()) >= 4
    assert files_naming_a_store(builtin_names()) == []


def test_nor_a_stores_user_class() -> None:
    assert code_naming(set(STORES.users())) == []


def test_no_operation_dispatch() -> None:
    # docs/stores.md: "grep -rn 'op == \"' keyramp" finds nothing: operations are a table.
    found = [f"{p.relative_to(ROOT)}" for p in PACKAGE.rglob("*.py") if 'op == "' in p.read_text(encoding="utf-8")]
    assert found == []


def test_the_checks_find_a_planted_leak(tmp_path: Path) -> None:
    package = tmp_path / "keyramp"
    (package / "backends" / "bigtable").mkdir(parents=True)
    (package / "backends" / "bigtable" / "_spec.py").write_text('NAME = "bigtable"\n')  # where it belongs
    (package / "web" / "templates").mkdir(parents=True)
    (package / "web" / "_leak.py").write_text('"""Mentions keyramp.BigtableUser."""\n\nimport keyramp\n\n'
                                              'if backend == "bigtable":\n    cls = keyramp.BigtableUser\n')
    (package / "web" / "templates" / "leak.html").write_text("{% if backend == 'bigtable' %}{% endif %}")
    assert files_naming_a_store(("bigtable",), package) == [
        'keyramp/web/_leak.py: "bigtable"', "keyramp/web/templates/leak.html: 'bigtable'"]
    assert code_naming({"BigtableUser"}, package) == ["keyramp/web/_leak.py:6 BigtableUser"]


@pytest.mark.parametrize("spec", STORES.specs(), ids=lambda s: s.name)
def test_each_store_package_holds_its_knowledge(spec) -> None:  # type: ignore[no-untyped-def]
    package = next(p for p in STORE_PACKAGES.iterdir()
                   if (p / "__init__.py").is_file()
                   and spec in getattr(importlib.import_module(f"keyramp.backends.{p.name}"), "SPECS", ()))
    assert spec.prices is not None and spec.prices.file.parent == package  # its price sheet
    assert spec.user is not None  # its Python-workload user class (keyramp.<name>)
    # Its locustfile (plain `locust -f`): one per user class, named after the class's store.
    locustfile = ROOT / "locustfiles" / f"{spec.user.store}.py"
    text = locustfile.read_text()
    assert f'{spec.user.name} = make_user(os.environ.get("KEYRAMP_BACKEND", "{spec.user.store}"))' in text
    assert spec.user.store in STORES.users()[spec.user.name][1] and (
        spec.name == spec.user.store or f"KEYRAMP_BACKEND={spec.name} locust -f locustfiles/" in text)
