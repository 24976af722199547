"""Key strategies, request distributions and record values (registries: name -> class)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
