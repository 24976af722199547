"""Defensive accessors of hand-editable JSON (summary.json, manifest.json): a wrong type reads as
empty or None, never a crash. Shared by the catalog, the generator verdict and the web view models.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["as_dict", "as_list", "num", "text"]


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)
