"""The CLI is a thin layer: argparse is imported only under ``keyramp/cli/`` (issue 29)."""

from __future__ import annotations

import ast
from pathlib import Path

import keyramp

_PACKAGE = Path(keyramp.__file__).resolve().parent


def _imports_argparse(tree: ast.AST) -> bool:
    for node in ast.walk(tree):  # every import: top-level, function-local and TYPE_CHECKING ones
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "argparse" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "argparse":
            return True
    return False


def test_argparse_is_imported_only_by_the_cli() -> None:
    outside = sorted(
        str(path.relative_to(_PACKAGE.parent))
        for path in _PACKAGE.rglob("*.py")
        if _PACKAGE / "cli" not in path.parents and _imports_argparse(ast.parse(path.read_text(encoding="utf-8")))
    )
    assert outside == []
    # The scan sees an import where there is one: the CLI's own verbs import argparse.
    assert _imports_argparse(ast.parse((_PACKAGE / "cli" / "_run.py").read_text(encoding="utf-8")))


def test_every_verb_is_a_module_of_the_cli() -> None:
    from keyramp.cli._main import _VERBS

    assert all(module.startswith("keyramp.cli._") for module in _VERBS.values())
    assert {"run", "lint", "compare", "list", "forecast", "ui"} <= set(_VERBS)
