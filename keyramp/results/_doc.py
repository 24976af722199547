"""The machinery under the results model (``_summary``): JSON documents as dataclasses.

A ``JsonDoc`` subclass declares its fields once, typed; ``from_json`` / ``to_json`` and the
JSON Schema (``json_schema``) are derived from those declarations, so the three cannot
drift apart. Reading is lossless, because a run directory outlives the keyramp that wrote
it: keys the model does not know are kept in ``extra``, and a document read and written
again keeps its keys, their order and their explicit nulls, so ``to_json(from_json(d)) == d``
for every document of the current version (the runner writes through the model on that
promise). A field absent from the input is its default and is written back only when it
was given another value.
"""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Self

__all__ = ["DocError", "JsonDoc", "json_schema"]


class DocError(ValueError):
    """A document that does not have the model's shape; the message names the field."""


@dataclass(kw_only=True)
class JsonDoc:
    """Base of the results model's documents."""

    #: Keys this model does not declare (newer writers, hand additions), kept as they were.
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: The input's keys in their order (empty for a document built in code).
    _keys: tuple[str, ...] = field(default=(), repr=False, compare=False)
    #: Fields written even when they hold their default (``reason: null``).
    ALWAYS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_json(cls, data: Any, *, where: str = "") -> Self:
        """Read ``data`` (parsed JSON); ``DocError`` naming the field when its shape is wrong."""
        where = where or cls.__name__
        if not isinstance(data, dict):
            raise DocError(f"{where}: expected an object, got {_kind(data)}")
        data = cls.upgrade(dict(data))
        hints = _hints(cls)
        values: dict[str, Any] = {}
        for name, hint in hints.items():
            if name in data:
                values[name] = _read(hint, data[name], f"{where}.{name}")
        missing = [f.name for f in fields(cls) if f.name in hints and f.name not in values and _default(f) is MISSING]
        if missing:
            raise DocError(f"{where}: missing {', '.join(missing)}")
        extra = {k: v for k, v in data.items() if k not in hints}
        return cls(**values, extra=extra, _keys=tuple(data))

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Bring an older document to this version (before the fields are read); a subclass's hook."""
        return data

    def to_json(self) -> dict[str, Any]:
        """JSON-ready data: the input's keys in their order, then fields set since, declaration order."""
        hints = _hints(type(self))
        out: dict[str, Any] = {}
        for key in self._keys:
            if key in hints:
                out[key] = _write(getattr(self, key))
            elif key in self.extra:
                out[key] = self.extra[key]
        for f in fields(self):
            if f.name in hints and f.name not in out:
                value = getattr(self, f.name)
                if f.name in self.ALWAYS or value != _default(f):
                    out[f.name] = _write(value)
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


def _default(f: Any) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def _hints(cls: type) -> dict[str, Any]:
    """The declared fields' types (``extra``/``_keys`` are the base's bookkeeping, not fields)."""
    cached = cls.__dict__.get("_hints_cache")
    if cached is None:
        all_hints = typing.get_type_hints(cls)
        cached = {f.name: all_hints[f.name] for f in fields(cls) if f.name not in ("extra", "_keys")}
        type.__setattr__(cls, "_hints_cache", cached)
    return cached


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    named = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return named.get(type(value), type(value).__name__)


def _parts(hint: Any) -> tuple[Any, bool]:
    """``X | None`` -> (X, True)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        return (args[0] if len(args) == 1 else typing.Union[tuple(args)]), nullable  # noqa: UP007
    return hint, False


def _read(hint: Any, value: Any, where: str) -> Any:
    inner, nullable = _parts(hint)
    if value is None:
        if nullable or inner is Any:
            return None
        raise DocError(f"{where}: expected {_describe(inner)}, got null")
    if inner is Any:
        return value
    origin = typing.get_origin(inner)
    if isinstance(inner, type) and issubclass(inner, JsonDoc):
        return inner.from_json(value, where=where)
    if origin is dict:
        if not isinstance(value, dict):
            raise DocError(f"{where}: expected an object, got {_kind(value)}")
        item = typing.get_args(inner)[1]
        return {k: _read(item, v, f"{where}.{k}") for k, v in value.items()}
    if origin is list:
        if not isinstance(value, list):
            raise DocError(f"{where}: expected a list, got {_kind(value)}")
        item = typing.get_args(inner)[0]
        return [_read(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if not _leaf_ok(inner, value):
        raise DocError(f"{where}: expected {_describe(inner)}, got {_kind(value)}")
    return value


def _leaf_ok(hint: Any, value: Any) -> bool:
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    for option in options:
        if option is bool and isinstance(value, bool):
            return True
        if option in (int, float) and isinstance(value, int | float) and not isinstance(value, bool):
            return True  # JSON does not tell 4 from 4.0
        if option is str and isinstance(value, str):
            return True
    return False


def _describe(hint: Any) -> str:
    return {str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(hint, "a value")


def _write(value: Any) -> Any:
    if isinstance(value, JsonDoc):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _write(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_write(v) for v in value]
    return value


# -- JSON Schema ----------------------------------------------------------------------------
_LEAVES = {str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"}, bool: {"type": "boolean"}}


def _schema_of(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    inner, nullable = _parts(hint)
    out = _schema_inner(inner, defs)
    if nullable and set(out) == {"type"}:
        return {"type": [out["type"], "null"]}
    if nullable and out:
        return {"anyOf": [out, {"type": "null"}]}
    return out


def _schema_inner(inner: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if inner is Any:
        return {}
    if isinstance(inner, type) and issubclass(inner, JsonDoc):
        _define(inner, defs)
        return {"$ref": f"#/$defs/{inner.__name__}"}
    origin = typing.get_origin(inner)
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(typing.get_args(inner)[1], defs)}
    if origin is list:
        return {"type": "array", "items": _schema_of(typing.get_args(inner)[0], defs)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_schema_inner(a, defs) for a in typing.get_args(inner)]}
    return dict(_LEAVES[inner])


def _define(cls: type[JsonDoc], defs: dict[str, Any]) -> None:
    if cls.__name__ in defs:
        return
    defs[cls.__name__] = {}  # placeholder: a recursive reference stops here
    props: dict[str, Any] = {}
    required = []
    for f in fields(cls):
        if f.name not in _hints(cls):
            continue
        prop = _schema_of(_hints(cls)[f.name], defs)
        if f.metadata.get("doc"):
            prop = {**prop, "description": f.metadata["doc"]}
        props[f.name] = prop
        if _default(f) is MISSING:
            required.append(f.name)
    doc = " ".join((cls.__doc__ or "").split())
    defs[cls.__name__] = {"type": "object", "description": doc, "properties": props,
                          **({"required": required} if required else {}), "additionalProperties": True}


def json_schema(root: type[JsonDoc], *, title: str, schema_id: str) -> dict[str, Any]:
    """A JSON Schema (2020-12) of ``root`` and every document it holds, from their declarations."""
    defs: dict[str, Any] = {}
    _define(root, defs)
    top = defs.pop(root.__name__)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema_id, "title": title,
            **top, "$defs": dict(sorted(defs.items()))}
