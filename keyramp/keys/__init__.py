"""Key strategies, request distributions and record values (registries: name -> class)."""

from __future__ import annotations

from keyramp.keys._base import Distribution, KeyStrategy, KeyTraits
from keyramp.keys._distributions import DISTRIBUTIONS, hottest_share, make_distribution
from keyramp.keys._make import make_strategy
from keyramp.keys._shape import DocumentShape, Property, parse_shape, shape_problem
from keyramp.keys._strategies import STRATEGIES, key_problem
from keyramp.keys._template import TemplateError, TemplatePlan, TemplateStrategy
from keyramp.keys._values import INDEXED_VALUES, RecordFactory, entity_group_key

__all__ = [
    "DISTRIBUTIONS",
    "INDEXED_VALUES",
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
    "hottest_share",
    "key_problem",
    "make_distribution",
    "make_strategy",
    "parse_shape",
    "shape_problem",
]
