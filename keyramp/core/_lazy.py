"""A package's interface, declared once in its ``__init__.py``; names in its ``if TYPE_CHECKING:``
block load on first use (PEP 562 module ``__getattr__``).

``keyramp`` itself must stay light (``keyramp --help``; Locust monkey-patches the standard
library on import), and a package with heavy modules can export their names without importing
them. The one declaration is the ``__init__``'s own source, read once when a name is first looked
up: a package exports every public name its top level imports from its own modules or defines,
and every name its ``if TYPE_CHECKING:`` block imports from its own modules, which mypy reads as
it is (the facade, ``keyramp``, owns every module). Other packages' names there are for its own
annotations. ``__all__`` and ``dir()`` derive from the same list. The package calls this outside mypy's view
(``if not TYPE_CHECKING:``), so mypy still refuses a name the package does not export.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Interface", "More", "interface", "lazy_exports"]


@dataclass(frozen=True)
class More:
    """Names a package exports beyond its source, known only at run time (the facade's store user
    classes, which the registered stores declare): their names now, and how to resolve one."""

    names: Callable[[], Iterable[str]]
    resolve: Callable[[str], Any]


@dataclass(frozen=True)
class Interface:
    """What a package ``__init__`` exports: ``eager`` names (bound at import) and ``lazy`` ones
    (public name -> (the module its ``if TYPE_CHECKING:`` block imports it from, its name there;
    ``""``: the module itself, ``import keyramp.core._format as fmt``))."""

    eager: tuple[str, ...]
    lazy: Mapping[str, tuple[str, str]]

    @property
    def names(self) -> list[str]:
        return sorted({*self.eager, *self.lazy})


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _public(name: str) -> bool:
    return not name.startswith("_") or name == "__version__"


def _own(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _bound(node: ast.stmt, package: str) -> list[str]:
    """Names a top-level statement binds: an import from the package's own modules, a definition,
    an assignment."""
    if isinstance(node, ast.ImportFrom):
        return [a.asname or a.name for a in node.names] if _own(node.module or "", package) else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, ast.AnnAssign) else []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def interface(source: str, package: str) -> Interface:
    """The interface the ``__init__`` of ``package`` declares in ``source``."""
    eager: list[str] = []
    lazy: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if _is_type_checking(node):
            assert isinstance(node, ast.If)
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and _own(stmt.module or "", package):
                    lazy.update({a.asname or a.name: (stmt.module or "", a.name) for a in stmt.names})
                elif isinstance(stmt, ast.Import):
                    lazy.update({a.asname: (a.name, "") for a in stmt.names if a.asname and _own(a.name, package)})
        else:
            eager += [name for name in _bound(node, package) if _public(name)]
    return Interface(tuple(eager), lazy)


def lazy_exports(namespace: dict[str, Any], more: More | None = None,
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the package whose globals are ``namespace``: a lazy name
    is imported on first use and cached in ``namespace``; ``__all__`` is the interface's names
    (and ``more``'s)."""
    package: str = namespace["__name__"]
    found: list[Interface] = []  # read on first use: importing the package costs nothing more

    def declared() -> Interface:
        if not found:
            found.append(interface(Path(namespace["__file__"]).read_text(encoding="utf-8"), package))
        return found[0]

    def getattr_(name: str) -> Any:
        if name == "__all__":  # not cached: ``more``'s names depend on the stores registered now
            return sorted({*declared().names, *(more.names() if more else ())})
        if name in declared().lazy:
            module, attr = declared().lazy[name]
            imported = importlib.import_module(module)
            value = namespace[name] = getattr(imported, attr) if attr else imported
            return value
        if more is not None and name in more.names():
            return more.resolve(name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def dir_() -> list[str]:
        return list(getattr_("__all__"))

    return getattr_, dir_
