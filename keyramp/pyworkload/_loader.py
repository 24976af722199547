"""Load a Python workload named by a profile: ``[workload] user = "orders.py:Orders"``.

Everything that can be wrong with it is found here, when the profile is read (before any
emulator starts or anything is written), and said in one line naming the file: a missing
file, a module that fails to import (with the line), a missing class, a class that is not
a keyramp user, an op that is not a method.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from keyramp.backends import STORES
from keyramp.core import UsageError
from keyramp.pyworkload._base import WorkloadClass
from keyramp.pyworkload._ops import OpSpec, collect_ops

__all__ = ["LoadedUser", "load_user", "split_spec"]


@dataclass(frozen=True, kw_only=True)
class LoadedUser:
    path: Path  # absolute
    class_name: str
    cls: type[WorkloadClass]
    ops: dict[str, OpSpec]

    @property
    def spec(self) -> str:
        """``/abs/path/orders.py:Orders``: what the resolved profile stores (workers load it again)."""
        return f"{self.path}:{self.class_name}"

    @property
    def store(self) -> str:
        return self.cls.store

    @property
    def backends(self) -> frozenset[str]:
        return frozenset(self.cls.backends)

    def shares(self) -> dict[str, float]:
        total = sum(o.weight for o in self.ops.values())
        return {name: o.weight / total for name, o in self.ops.items()}

    def insert_ops(self) -> list[str]:
        return [name for name, o in self.ops.items() if o.inserts]


def split_spec(spec: object) -> tuple[str, str]:
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise UsageError(f'expected "file.py:ClassName", got {spec!r}')
    file, cls = spec.split(":")
    if not cls.isidentifier():
        raise UsageError(f"{cls!r} is not a class name")
    return file, cls


def _where_it_failed(exc: BaseException, path: Path) -> str:
    """`` (line N)`` of the deepest frame in the workload's own file, if any."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f" (line {exc.lineno})"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    return f" (line {frames[-1].lineno})" if frames else ""


def _import(path: Path) -> object:
    """Import ``path`` as its own module (cached in ``sys.modules`` under a name derived from
    the path, so the profile check and the run share one import); its directory goes on
    ``sys.path`` so it can import its neighbours, as Locust does for a locustfile."""
    name = f"keyramp_workload_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
    cached = sys.modules.get(name)
    if cached is not None:
        return cached
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except KeyboardInterrupt:
        del sys.modules[name]
        raise
    except BaseException as exc:  # noqa: BLE001 - a module calling sys.exit() failed to import too
        del sys.modules[name]
        text = str(exc).splitlines()[0] if str(exc) else ""
        if isinstance(exc, SyntaxError):
            text = exc.msg
        raise UsageError(f"{path}: import failed{_where_it_failed(exc, path)}: {type(exc).__name__}: {text}") from None
    return module


def load_user(spec: object, *, base_dir: Path) -> LoadedUser:
    """The workload user class named by ``spec`` (a path relative to ``base_dir``)."""
    file, class_name = split_spec(spec)
    path = (base_dir / file).resolve()
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    module = _import(path)
    cls = getattr(module, class_name, None)
    if cls is None:
        users = sorted(n for n, v in vars(module).items()
                       if isinstance(v, type) and issubclass(v, WorkloadClass) and not v.__dict__.get("abstract"))
        here = f" (keyramp users here: {', '.join(users)})" if users else ""
        raise UsageError(f"{path}: no class {class_name!r}{here}")
    if not isinstance(cls, type) or not issubclass(cls, WorkloadClass) or cls.__dict__.get("abstract"):
        classes = ", ".join(f"keyramp.{name}" for name in sorted(STORES.users()))  # the stores' own
        raise UsageError(f"{path}:{class_name} is not a subclass of a store's user class ({classes})")
    try:
        ops = collect_ops(cls)
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from None
    if not ops:
        raise UsageError(f"{path}:{class_name} has no @keyramp.op methods")
    return LoadedUser(path=path, class_name=class_name, cls=cls, ops=ops)
