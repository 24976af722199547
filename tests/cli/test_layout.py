"""The CLI is a thin layer: argparse is imported only under ``keyramp/cli/`` (issue 29), and
``keyramp --help`` stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
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


#: What a command that only parses, or lints a profile, must not load: Locust (it monkey-patches
#: the standard library), the store clients, the web and terminal UIs, and the numeric stack
#: (numpy, pyarrow, scipy, pandas: together most of a second of start-up on a busy machine).
_HEAVY = ("locust", "gevent", "grpc", "google", "flask", "werkzeug", "rich", "matplotlib",
          "numpy", "pyarrow", "scipy", "pandas")


def _heavy_loaded_by(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & {set(_HEAVY)!r})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.splitlines()[-1].split() if out.stdout.strip() else []


def test_help_loads_neither_locust_nor_a_store_client_nor_numpy() -> None:
    # `keyramp --help` imports every verb's module: their heavy imports are deferred to the
    # command that needs them (function-local, marked "# deferred: start-up cost").
    assert _heavy_loaded_by("from keyramp.cli._main import build_parser; build_parser()") == []
    # The probe sees a heavy import where there is one: running `keyramp compare` loads numpy.
    assert "numpy" in _heavy_loaded_by("from keyramp.compare import run_compare")


def test_linting_a_declarative_profile_stays_light() -> None:
    quickstart = _PACKAGE.parent / "profiles" / "quickstart.toml"
    code = (f"from keyramp.cli._main import main\ntry:\n    main(['lint', {str(quickstart)!r}])\n"
            "except SystemExit:\n    pass")
    assert _heavy_loaded_by(code) == []
