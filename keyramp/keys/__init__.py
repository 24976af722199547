"""Key strategies, request distributions and record values (registries: name -> class)."""

from __future__ import annotations

from keyramp.keys._base import Distribution, KeyStrategy, KeyTraits
from keyramp.keys._distributions import DISTRIBUTIONS, hottest_share, make_distribution
from keyramp.keys._make import make_strategy
from keyramp.keys._roles import (
    ANTI_PATTERN,
    BEST_PRACTICE,
    KEY_RULES,
    fix_strategies,
    rule_role,
    rule_strategies,
    shard_template,
    strategy_of,
)
from keyramp.keys._shape import DocumentShape, Property, parse_shape, shape_problem
from keyramp.keys._strategies import STRATEGIES, key_problem
from keyramp.keys._template import TemplatePlan, TemplateStrategy
from keyramp.keys._template_syntax import TemplateError
from keyramp.keys._values import INDEXED_VALUES, RecordFactory, entity_group_key

__all__ = [
    "ANTI_PATTERN",
    "BEST_PRACTICE",
    "DISTRIBUTIONS",
    "INDEXED_VALUES",
    "KEY_RULES",
    "STRATEGIES",
    "Distribution",
    "DocumentShape",
    "KeyStrategy",
    "KeyTraits",
    "Property",
    "RecordFactory",
    "TemplateError",
    "TemplatePlan",
    "TemplateStrategy",
    "entity_group_key",
    "fix_strategies",
    "hottest_share",
    "key_problem",
    "make_distribution",
    "make_strategy",
    "parse_shape",
    "rule_role",
    "rule_strategies",
    "shape_problem",
    "shard_template",
    "strategy_of",
]
