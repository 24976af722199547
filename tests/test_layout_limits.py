"""Small modules, short functions: no module in keyramp/ over 450 lines, no function over 80
(the brief's limits, issue 29). ``python tests/test_layout_limits.py`` lists the offenders."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "keyramp"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def long_modules() -> list[tuple[str, int]]:
    """(module, lines) for every module over the limit."""
    found = []
    for path in _modules():
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            found.append((str(path.relative_to(PACKAGE.parent)), lines))
    return found


def long_functions() -> list[tuple[str, int]]:
    """(module:line name, lines) for every function or method over the limit, decorators and
    docstring included."""
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = (node.end_lineno or node.lineno) - start + 1
                if lines > MAX_FUNCTION_LINES:
                    where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}"
                    found.append((where, lines))
    return found


def test_no_module_over_the_limit() -> None:
    assert long_modules() == []


def test_no_function_over_the_limit() -> None:
    assert long_functions() == []


def test_the_scan_sees_the_package() -> None:
    # Guards the two tests above against passing vacuously on an empty or moved tree.
    assert len(_modules()) > 100
    assert PACKAGE / "__init__.py" in _modules()


if __name__ == "__main__":
    for where, lines in long_modules() + long_functions():
        print(f"{where}: {lines}")
