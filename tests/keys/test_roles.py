"""A key design's facts in one place: what lint, the scenarios, the forecast and the planner know of
a strategy comes from what it declares (``keys``), never from a list of names kept elsewhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from keyramp.backends import STORES
from keyramp.keys import (
    ANTI_PATTERN,
    BEST_PRACTICE,
    KEY_RULES,
    STRATEGIES,
    fix_strategies,
    make_strategy,
    rule_role,
    rule_strategies,
    shard_template,
)

ROOT = Path(__file__).resolve().parents[2] / "keyramp"


def _named(node: ast.AST) -> list[str]:
    """The strategy names among a literal collection's string elements (a dict's keys and values)."""
    items: list[ast.AST] = []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = list(node.elts)
    elif isinstance(node, ast.Dict):
        items = [k for k in node.keys if k is not None] + list(node.values)
    return [i.value for i in items if isinstance(i, ast.Constant) and i.value in STRATEGIES]


def strategy_sets(root: Path = ROOT) -> list[str]:
    """``file:line`` of every literal collection of two or more strategy names outside ``keys/``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if "keys" in path.relative_to(root).parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if len(_named(node)) >= 2:
                found.append(f"{path.relative_to(root.parent)}:{getattr(node, 'lineno', 0)}")
    return found


def test_no_module_outside_keys_names_sets_of_strategies() -> None:
    """Lint's and the scenarios' ``_MONOTONIC``, the planner's shard bases and the stores' hotspot fixes
    were such lists, and they disagreed (issue 40): the strategies declare it now."""
    assert strategy_sets() == []


def test_the_check_finds_a_planted_list(tmp_path: Path) -> None:
    (tmp_path / "lint.py").write_text('_MONOTONIC = frozenset({"sequential", "timestamp_first"})\n')
    (tmp_path / "plan.py").write_text('BASES = {"sequential": "seq", "sharded": "seq"}\n')
    found = [s.split(":")[0] for s in strategy_sets(tmp_path)]
    assert found == [f"{tmp_path.name}/lint.py", f"{tmp_path.name}/plan.py"]


def test_one_definition_of_monotonic_drives_every_rule_role() -> None:
    for name, cls in STRATEGIES.items():
        assert (rule_role(cls, "BP-KEY-1") == ANTI_PATTERN) == cls.traits.monotonic, name
        assert (rule_role(cls, "BP-KEY-5") == ANTI_PATTERN) == cls.traits.time_first, name


def test_every_key_rule_compares_an_anti_pattern_with_a_best_practice() -> None:
    for rule in KEY_RULES:
        roles = set(rule_strategies(rule).values())
        assert roles == {ANTI_PATTERN, BEST_PRACTICE}, rule


def test_a_templates_role_follows_its_format() -> None:
    assert rule_role(make_strategy("yyyymmddhh#seq"), "BP-KEY-1") == ANTI_PATTERN
    assert rule_role(make_strategy("tenant(20)#yyyymmddhh#seq"), "BP-KEY-1") is None
    assert rule_role(make_strategy("timestamp#device"), "BP-KEY-5") == ANTI_PATTERN


@pytest.mark.parametrize("store", sorted(STORES.names()))
def test_each_stores_hotspot_fix_spreads_the_keys(store: str) -> None:
    spec = STORES.get(store)
    fixes = fix_strategies(spec.hotspot_fix, readable="BP-KEY-8" in spec.rules)
    assert fixes, store
    for name in fixes:
        assert STRATEGIES[name].traits.spreads and not STRATEGIES[name].traits.monotonic, (store, name)


@pytest.mark.parametrize(("design", "shards", "template"), [
    ("sequential", 8, "shard(8)#seq"), ("timestamp_first", 4, "shard(4)#timestamp#seq"),
    ("shard(4)#timestamp", 16, "shard(16)#timestamp"), ("tenant(20)#yyyymmddhh#seq", 3,
                                                        "shard(3)#tenant(20)#yyyymmddhh#seq"),
    ("random", 8, None), ("time_bucket_shard", 8, None), ("uuid", 2, None),
])
def test_shard_templates_come_from_the_strategy(design: str, shards: int, template: str | None) -> None:
    assert shard_template(design, shards) == template
