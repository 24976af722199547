"""The machinery under the results model (``_summary``): JSON documents as dataclasses.

A ``JsonDoc`` subclass declares its fields once, typed; ``from_json`` / ``to_json`` and the
JSON Schema (``json_schema``) are derived from those declarations, so the three cannot
drift apart. Reading is lossless, because a run directory outlives the keyramp that wrote
it: keys the model does not know are kept in ``extra``, and a document read and written
again keeps its keys, their order and their explicit nulls, so ``to_json(from_json(d)) == d``
for every document of the current version (the runner writes through the model on that
promise). A field absent from the input is its default and is written back only when it
was given another value.

A document built in code writes what it was given, as the dict literal it replaces would:
every field passed to its constructor or assigned since, even one equal to its default
(``CellSummary(operations={})`` writes ``"operations": {}``), in declaration order.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Self

__all__ = ["DocError", "JsonDoc", "doc", "json_schema"]


class DocError(ValueError):
    """A document that does not have the model's shape; the message names the field
    (``cells.c00-x.operations.insert.latency_ms.p99: expected a number, got a string``)."""

    def __init__(self, problem: str, path: tuple[str, ...] = ()) -> None:
        self.problem, self.path = problem, path
        where = "".join(p if p.startswith("[") else f".{p}" for p in path).lstrip(".")
        super().__init__(f"{where}: {problem}" if where else problem)

    def within(self, part: str) -> DocError:
        """The same problem one level up (the path is built only when something is wrong)."""
        return DocError(self.problem, (part, *self.path))


@dataclass(kw_only=True)
class JsonDoc:
    """Base of the results model's documents."""

    #: Keys this model does not declare (newer writers, hand additions), kept as they were.
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: The input's keys in their order (empty for a document built in code).
    _keys: tuple[str, ...] = field(default=(), repr=False, compare=False)
    #: Fields written even when they hold their default (``reason: null``).
    ALWAYS: ClassVar[tuple[str, ...]] = ()
    #: Built in code, a field given (or assigned since) is written even at its default. False: only
    #: values other than the default (and ``ALWAYS``), for writers that pass None for "none".
    WRITES_GIVEN: ClassVar[bool] = True

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        doc = super().__new__(cls)
        # Fields given to the constructor (the dataclass ``__init__`` cannot tell them from defaults).
        # A frozenset, replaced on assignment: ``copy.copy`` shares it with the original safely.
        object.__setattr__(doc, "_given", frozenset(kwargs))
        return doc

    def __post_init__(self) -> None:
        """The end of construction (a subclass's own ``__post_init__`` calls this last): assignments
        from here on are written. ``dataclasses.replace`` passes every field to the constructor, so
        its copy writes them all: copy with ``copy.copy`` and assign instead."""
        object.__setattr__(self, "_built", True)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        d = self.__dict__
        if "_built" in d:  # assigned after construction: written, like a dict's new key
            d["_given"] = d.get("_given", frozenset()) | {name}

    @classmethod
    def from_json(cls, data: Any, *, where: str = "") -> Self:
        """Read ``data`` (parsed JSON); ``DocError`` naming the field when its shape is wrong."""
        try:
            return cls._read_doc(data)
        except DocError as exc:
            raise exc.within(where or cls.__name__) from None

    @classmethod
    def _read_doc(cls, data: Any) -> Self:
        if not isinstance(data, dict):
            raise DocError(f"expected an object, got {_kind(data)}")
        data = cls.upgrade(data)  # never edits ``data``: a hook that changes it returns a copy
        values: dict[str, Any] = {}
        read_count = 0
        for name, read, default in _plan(cls):
            if name in data:
                try:
                    values[name] = read(data[name])
                except DocError as exc:
                    raise exc.within(name) from None
                read_count += 1
            elif default is None:
                raise DocError(f"missing {name}")
            else:
                values[name] = default()
        extra = {k: v for k, v in data.items() if k not in values} if read_count < len(data) else {}
        # Built without ``__init__``: reading is on every catalog load, and the fields read are
        # the input's keys (``_keys``), not constructor arguments to remember.
        doc = object.__new__(cls)
        doc.__dict__.update(values, extra=extra, _keys=tuple(data))
        doc.__post_init__()  # a subclass's own check, then built: what it normalises is not "given"
        return doc

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
        given = self.__dict__.get("_given", ()) if self.WRITES_GIVEN else ()
        for f in fields(self):
            if f.name in hints and f.name not in out:
                value = getattr(self, f.name)
                if f.name in self.ALWAYS or f.name in given or value != _default(f):
                    out[f.name] = _write(value)
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


def doc(text: str) -> Any:
    """A field's description (``field(metadata=doc("…"))``), written into the JSON Schema."""
    return {"doc": text}


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


_Reader = Callable[[Any], Any]


def _maker(f: Any) -> Callable[[], Any] | None:
    """What makes a field's default (None: the field is required)."""
    if f.default is not MISSING:
        value = f.default
        return lambda: value
    return None if f.default_factory is MISSING else f.default_factory


def _plan(cls: type[JsonDoc]) -> list[tuple[str, _Reader, Callable[[], Any] | None]]:
    """(field, reader, default maker or None when required) per declared field, built once per
    class: reading a summary is on every catalog load, so the type hints are not walked per value."""
    cached = cls.__dict__.get("_plan_cache")
    if cached is None:
        hints = _hints(cls)
        cached = [(f.name, _reader(hints[f.name]), _maker(f)) for f in fields(cls) if f.name in hints]
        type.__setattr__(cls, "_plan_cache", cached)
    return cached


def _identity(value: Any) -> Any:
    return value


def _reader(hint: Any) -> _Reader:
    inner, nullable = _parts(hint)
    if inner is Any:
        return _identity
    base = _base_reader(inner)

    def read(value: Any) -> Any:
        if value is None:
            if nullable:
                return None
            raise DocError(f"expected {_describe(inner)}, got null")
        return base(value)

    return read


def _base_reader(inner: Any) -> _Reader:
    if isinstance(inner, type) and issubclass(inner, JsonDoc):
        return inner._read_doc
    origin = typing.get_origin(inner)
    if origin is dict:
        item = _reader(typing.get_args(inner)[1])

        def read_dict(value: Any) -> Any:
            if not isinstance(value, dict):
                raise DocError(f"expected an object, got {_kind(value)}")
            out = {}
            for key, v in value.items():
                try:
                    out[key] = item(v)
                except DocError as exc:
                    raise exc.within(key) from None
            return out

        return read_dict
    if origin is list:
        item = _reader(typing.get_args(inner)[0])

        def read_list(value: Any) -> Any:
            if not isinstance(value, list):
                raise DocError(f"expected a list, got {_kind(value)}")
            out = []
            for i, v in enumerate(value):
                try:
                    out.append(item(v))
                except DocError as exc:
                    raise exc.within(f"[{i}]") from None
            return out

        return read_list
    accepted = _accepted(inner)

    def read_leaf(value: Any) -> Any:
        if type(value) in accepted:
            return value
        raise DocError(f"expected {_describe(inner)}, got {_kind(value)}")

    return read_leaf


def _accepted(hint: Any) -> frozenset[type]:
    """The Python types JSON gives for a leaf type (JSON does not tell 4 from 4.0)."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    out: set[type] = set()
    for option in options:
        out |= {int, float} if option in (int, float) else {option}
    return frozenset(out)


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
