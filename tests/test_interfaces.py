"""Interfaces that are used (docs/architecture.md#package-interfaces): a module imports another
package only through that package's ``__init__`` (``from keyramp.results import RunSummary``, never
``keyramp.results._summary``), and each package's interface is declared once, in its ``__init__``
(``keyramp/core/_lazy.py``): every name it exports resolves, ``dir()`` and ``__all__`` agree."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "keyramp"
PACKAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())


def _package_of(path: Path, package: Path) -> str:
    """The top-level package a module belongs to (``""``: the facade and ``__main__``)."""
    parts = path.relative_to(package).parts
    return parts[0] if len(parts) > 1 else ""


def _targets(node: ast.stmt) -> list[str]:
    """The modules an import statement imports (``from keyramp.results import _baselines``: the module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        modules = [a.name for a in node.names if a.name.startswith("_") and not a.name.endswith("__")]
        return [node.module, *(f"{node.module}.{name}" for name in modules)]
    return []


def reaching_in(package: Path = PACKAGE) -> list[str]:
    """``module:line imported`` for each import of a module inside another package (top-level,
    function-local and ``if TYPE_CHECKING:`` imports alike): only ``keyramp.<package>`` itself may be
    imported from outside it."""
    found = []
    for path in sorted(package.rglob("*.py")):
        here = _package_of(path, package)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for name in _targets(node):  # type: ignore[arg-type]
                parts = name.split(".")
                inside = len(parts) > 2 or (len(parts) == 2 and parts[1].startswith("_"))
                if parts[0] == package.name and inside and parts[1] != here:
                    found.append(f"{path.relative_to(package.parent)}:{node.lineno} {name}")  # type: ignore[attr-defined]
    return found


def test_cross_package_imports_go_through_the_package() -> None:
    assert reaching_in() == []


def test_the_scan_finds_a_planted_import(tmp_path: Path) -> None:
    package = tmp_path / "keyramp"
    (package / "web").mkdir(parents=True)
    (package / "results").mkdir()
    (package / "web" / "_view.py").write_text(
        "from keyramp.results import RunSummary\n"  # through the package: fine
        "from keyramp.web._model import view\n"  # inside its own package: fine
        "from keyramp.results._summary import CellSummary\n"
        "from keyramp.results import _baselines\n"
        "def f():\n    import keyramp.results._catalog as catalog  # deferred: start-up cost\n")
    assert reaching_in(package) == ["keyramp/web/_view.py:3 keyramp.results._summary",
                                    "keyramp/web/_view.py:4 keyramp.results._baselines",
                                    "keyramp/web/_view.py:6 keyramp.results._catalog"]


@pytest.mark.parametrize("name", PACKAGES)
def test_a_packages_interface_is_declared_once_and_resolves(name: str) -> None:
    package = importlib.import_module(f"keyramp.{name}")
    exported = package.__all__
    assert exported and len(set(exported)) == len(exported) and dir(package) == sorted(exported)
    assert "__getattr__" in vars(package), "declare the interface through lazy_exports (docs/architecture.md)"
    for export in exported:
        if name != "run":  # run's names import Locust: resolved in a child process below
            assert getattr(package, export) is not None, export


def test_the_run_interface_resolves_with_locust_first() -> None:
    code = ("import locust, keyramp.run as run\n"
            "assert all(getattr(run, n) is not None for n in run.__all__)\n"
            "print(len(run.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0 and int(out.stdout) > 5, out.stderr[-2000:]
