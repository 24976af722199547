"""Small modules, short functions: no module in keyramp/ over 450 lines, no function over 80, and
a function-local import only to defer start-up cost, saying so (``# deferred: start-up cost (…)``),
never to hide a dependency or dodge a cycle (issue 29). The one other reason accepted is import
order (``# deferred: import order``): gRPC's gevent hook must be imported after Locust has
monkey-patched the standard library.
``python tests/test_layout_limits.py`` lists the offenders."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "keyramp"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
DEFERRED = "# deferred: start-up cost"
REASONS = (DEFERRED, "# deferred: import order")


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


def unmarked_local_imports() -> list[str]:
    """``module:line`` of every import inside a function whose statement lacks the marker."""
    found = []
    for path in _modules():
        text = path.read_text()
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    statement = "\n".join(lines[node.lineno - 1:node.end_lineno])
                    if not any(reason in statement for reason in REASONS):
                        found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return sorted(set(found))  # a nested function's import is seen from each enclosing one


def test_no_module_over_the_limit() -> None:
    assert long_modules() == []


def test_no_function_over_the_limit() -> None:
    assert long_functions() == []


def test_function_local_imports_say_they_defer_start_up_cost() -> None:
    assert unmarked_local_imports() == []


def test_the_scan_sees_the_package() -> None:
    # Guards the two tests above against passing vacuously on an empty or moved tree.
    assert len(_modules()) > 100
    assert PACKAGE / "__init__.py" in _modules()
    # ... and finds the marked local imports it accepts (matplotlib, deferred in the heatmap).
    heatmap = (PACKAGE / "keyspace" / "_heatmap.py").read_text()
    assert f"import matplotlib  {DEFERRED}" in heatmap


if __name__ == "__main__":
    for where, lines in long_modules() + long_functions():
        print(f"{where}: {lines} lines")
    for where in unmarked_local_imports():
        print(f"{where}: function-local import without '{DEFERRED}'")
