"""docs/architecture.md shows the house as it is: the "how to add a store" list (docs/stores.md)
and the "how to add a key strategy" list name files that exist, a store adds nothing to keyramp
outside its own package, and the toy store (tests/_memory.py) brings every part of a store
itself, from outside the package tree."""

from __future__ import annotations

import re
from pathlib import Path

import _memory
from _memory import PRICES, MemoryStore, memory_spec

from keyramp.backends import STORES

ROOT = Path(__file__).resolve().parents[1]
STORE_PACKAGES = sorted(p.name for p in (ROOT / "keyramp" / "backends").iterdir() if (p / "__init__.py").is_file())


def listed(marker: str, doc: Path) -> list[str]:
    """The file of each item of the list between ``<!-- marker… -->`` and ``<!-- /marker -->``
    (an item opens with its path in backticks: ``1. `keyramp/backends/<store>/_spec.py`: …``)."""
    text = doc.read_text(encoding="utf-8")
    found = re.search(rf"<!-- {marker}\b[^>]*-->\n(.*?)<!-- /{marker} -->", text, re.S)
    assert found, f"{doc.name} has no {marker} list"
    items = re.findall(r"^\d+\. `([^`]+)`", found.group(1), re.M)
    assert items, f"{doc.name}: the {marker} list has no items"
    return items


def _exists(path: str, placeholder: str, values: list[str]) -> bool:
    if placeholder in path:
        return any((ROOT / path.replace(placeholder, v)).exists() for v in values)
    return (ROOT / path).exists()


def test_the_add_a_store_list_names_what_exists() -> None:
    items = listed("add-a-store", ROOT / "docs" / "stores.md")
    missing = [p for p in items if not _exists(p, "<store>", STORE_PACKAGES)]
    assert missing == []
    # Every built-in store package has the files the list says a store adds there.
    for package in STORE_PACKAGES:
        for path in items:
            if path.startswith("keyramp/backends/<store>/"):
                assert (ROOT / path.replace("<store>", package)).is_file(), (package, path)


def test_a_store_adds_nothing_to_keyramp_outside_its_package() -> None:
    items = listed("add-a-store", ROOT / "docs" / "stores.md")
    shared = [p for p in items if p.startswith("keyramp/") and not p.startswith("keyramp/backends/<store>/")]
    assert shared == []


def test_the_toy_store_brings_its_parts_from_outside_the_package_tree() -> None:
    spec = memory_spec(MemoryStore())
    driver = spec.driver()
    assert spec.name not in STORES  # nothing in keyramp knows it until registered
    assert issubclass(driver, _memory._MemoryBackend) and spec.prices is not None and spec.prices.file == PRICES
    assert ROOT / "tests" in PRICES.parents and spec.user is not None and spec.tablets is not None
    # The toy store's test goes through lint, a run, the forecast, the plan and the UI.
    test = (ROOT / "tests" / "backends" / "test_fourth_store.py").read_text(encoding="utf-8")
    for step in ("lint_profile", '"run"', "forecast", '"plan"', "create_app"):
        assert step in test, step


def test_the_add_a_strategy_list_names_what_exists() -> None:
    items = listed("add-a-strategy", ROOT / "docs" / "architecture.md")
    assert [p for p in items if not _exists(p, "<store>", STORE_PACKAGES)] == []
    assert items[0].startswith("keyramp/keys/")  # a strategy is declared where the keys are


def test_the_lists_are_read_from_their_markers(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("x\n<!-- add-a-store: files -->\n1. `keyramp/a.py`: one\n   more\n2. `docs/b.md`: two\n"
                   "<!-- /add-a-store -->\n3. `not/listed.py`\n")
    assert listed("add-a-store", doc) == ["keyramp/a.py", "docs/b.md"]
