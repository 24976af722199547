"""One vocabulary for a limited cell (issue 39): the words are defined once, in
``keyramp.results._generator`` (``GENERATOR_LIMITED``, ``MACHINE_LIMITED``), and every view takes
them from there. A view that writes its own variant ("Machine-limited", "generator limited") fails."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "keyramp"
WORD = re.compile(r"(?i)\b(generator|machine)[- ]limited\b")
#: Where the words may be written: their one definition.
HOME = ROOT / "results" / "_generator.py"


def _strings(path: Path) -> list[tuple[int, str]]:
    """A module's string literals (f-string parts included), its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs]


def test_no_view_writes_its_own_word_for_a_limited_cell() -> None:
    stray = []
    for path in sorted(ROOT.rglob("*.py")):
        if path == HOME:
            continue
        stray += [f"{path.relative_to(ROOT)}:{line}: {text!r}" for line, text in _strings(path) if WORD.search(text)]
    for path in sorted([*ROOT.rglob("*.html"), *ROOT.rglob("*.js")]):
        text = re.sub(r"\{#.*?#\}", "", path.read_text(encoding="utf-8"), flags=re.S)  # Jinja comments
        stray += [f"{path.relative_to(ROOT)}: {m.group(0)!r}" for m in WORD.finditer(text)]
    assert stray == []


def test_the_words_are_defined_once() -> None:
    from keyramp.results._generator import GENERATOR_LIMITED, LIMIT_WORDS, MACHINE_LIMITED

    assert list(LIMIT_WORDS) == [GENERATOR_LIMITED, MACHINE_LIMITED] == ["generator-limited", "machine-limited"]
    defined = [text for _, text in _strings(HOME) if WORD.search(text)]
    assert sorted(defined) == ["generator-limited", "machine-limited"]
