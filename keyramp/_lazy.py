"""Names a package exports but imports only on first use (PEP 562 module ``__getattr__``).

``keyramp`` itself must stay light (``keyramp --help``; Locust monkey-patches the standard
library on import), and a package with heavy modules can export their names without importing them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, namespace: dict[str, Any], where: Mapping[str, str],
                 public: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``where`` maps a public name to the module
    that defines it; a resolved name is cached in ``namespace`` (the package's globals)."""

    def getattr_(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(module), name)
        return value

    def dir_() -> list[str]:
        return sorted(public)

    return getattr_, dir_
