"""Document shape: the application's properties (types, sizes, indexed or not, arrays, maps).

``[workload.document]`` in a profile replaces the N random bytes of ``value_size`` with the
application's real record, so index fan-out (BP-IDX-1) and entity size follow its shape::

    [workload.document]
    room    = { type = "string", values = 1000 }          # room0000 … room0999
    sent_at = "timestamp"                                  # the virtual clock (monotonic)
    text    = { type = "string", size = 200, indexed = false }
    tags    = { type = "array", of = "string", items = 3, values = 50 }
    sender  = { type = "map", fields = { id = "int", name = { type = "string", size = 20 } } }

The shape compiles once into ``record(index)``: one closure per property over buffers and
pools made up front, so a record costs a dict and a few slices. Each store maps the shape
to its own form: Datastore ``exclude_from_indexes`` (nested maps become embedded entities
with their own exclusions), Firestore maps and arrays, Bigtable one column per property
(maps flattened to ``map.field`` columns, arrays packed into one cell, BP-SIZE-3).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from keyramp.core import UsageError
from keyramp.keys._strategies import _M64, mix64

__all__ = ["TYPES", "DocumentShape", "Property", "parse_shape", "shape_problem"]

SCALARS: Final = ("string", "bytes", "int", "float", "bool", "timestamp")
TYPES: Final = (*SCALARS, "array", "map")
_DEFAULT_SIZE: Final = {"string": 16, "bytes": 256}
#: What each type accepts besides ``type`` and ``indexed``.
_FIELDS: Final[Mapping[str, frozenset[str]]] = {
    "string": frozenset({"size", "values"}),
    "bytes": frozenset({"size"}),
    "int": frozenset({"values"}),
    "float": frozenset(),
    "bool": frozenset(),
    "timestamp": frozenset(),
    "array": frozenset({"of", "items", "size", "values"}),
    "map": frozenset({"fields"}),
}
_MAX_DEPTH: Final = 4
_SLACK: Final = 4096
_UTC: Final = UTC


@dataclass(frozen=True, kw_only=True)
class Property:
    name: str
    type: str
    size: int = 0  # string characters / bytes length (array: per element)
    values: int | None = None  # distinct values (None: every record its own value)
    items: int = 0  # array length
    of: str = ""  # array element type
    fields: tuple[Property, ...] = ()  # map subfields
    #: ``None``: the store's default (indexed); ``False``: excluded from indexes.
    indexed: bool | None = None

    @property
    def is_indexed(self) -> bool:
        return self.indexed is not False

    def value_bytes(self) -> int:
        """Stored size of the value (Firestore's storage-size rules; close for Datastore)."""
        kind = self.of if self.type == "array" else self.type
        one = {"string": self.size + 1, "bytes": self.size, "int": 8, "float": 8, "bool": 1, "timestamp": 8}.get(
            kind, 0
        )
        if self.type == "array":
            return one * self.items
        if self.type == "map":
            return sum(len(f.name.encode()) + 1 + f.value_bytes() for f in self.fields)
        return one

    def index_entries(self, *, parent_indexed: bool = True) -> int:
        """Single-field index entries one write adds: ascending + descending per scalar,
        one array-contains entry per element (Firestore); maps per subfield."""
        if not (parent_indexed and self.is_indexed):
            return 0
        if self.type == "array":
            return self.items
        if self.type == "map":
            return sum(f.index_entries() for f in self.fields)
        return 2


@dataclass(frozen=True, kw_only=True)
class DocumentShape:
    properties: tuple[Property, ...]

    def __bool__(self) -> bool:
        return bool(self.properties)

    def size_bytes(self) -> int:
        """Property names + values (Firestore's storage-size formula without the document name)."""
        return sum(len(p.name.encode()) + 1 + p.value_bytes() for p in self.properties) + 32

    def index_entries(self) -> int:
        return sum(p.index_entries() for p in self.properties)

    def unindexed(self) -> frozenset[str]:
        """Excluded properties: top-level names, and ``map.field`` for excluded subfields."""
        out: set[str] = set()

        def walk(props: tuple[Property, ...], prefix: str) -> None:
            for p in props:
                if not p.is_indexed:
                    out.add(prefix + p.name)
                elif p.type == "map":
                    walk(p.fields, f"{prefix}{p.name}.")

        walk(self.properties, "")
        return frozenset(out)

    def monotonic_indexed(self) -> list[str]:
        """Indexed properties whose value grows with every insert (BP-RATE-2)."""
        return [p.name for p in self.properties if p.type == "timestamp" and p.is_indexed]

    def large_indexed(self, limit: int) -> list[str]:
        """Indexed strings/blobs (or their array elements) over ``limit`` bytes (Datastore rejects them)."""
        out = []
        for p in self.properties:
            kind = p.of if p.type == "array" else p.type
            if p.is_indexed and kind in ("string", "bytes") and p.size > limit:
                out.append(p.name)
        return out

    def types(self) -> dict[str, str]:
        """Value type -> the first property (dotted for map subfields) that uses it; an array
        uses ``array`` and its element type."""
        out: dict[str, str] = {}

        def walk(props: tuple[Property, ...], prefix: str) -> None:
            for p in props:
                for kind in (p.type, p.of) if p.type == "array" else (p.type,):
                    out.setdefault(kind, prefix + p.name)
                walk(p.fields, f"{prefix}{p.name}.fields.")

        walk(self.properties, "")
        return out

    def explicit_indexed(self) -> list[str]:
        """Properties that set ``indexed`` (dotted for map subfields)."""
        out: list[str] = []

        def walk(props: tuple[Property, ...], prefix: str) -> None:
            for p in props:
                if p.indexed is not None:
                    out.append(prefix + p.name)
                walk(p.fields, f"{prefix}{p.name}.fields.")

        walk(self.properties, "")
        return out

    def compile(self, *, seed: int, created: Callable[[int], int]) -> Callable[[int], dict[str, Any]]:
        """``record(index)`` for this shape; ``created`` is the virtual clock for timestamps."""
        return _compile_map(self.properties, seed=seed, created=created, salt=1)


def shape_problem(shape: DocumentShape, limits: Any, store: str) -> str | None:
    """Why ``store`` would reject records of ``shape`` (one line), or ``None``. ``limits`` is the
    store spec's ``RecordLimits`` (``max_bytes``, ``indexed_value_max_bytes``, ``index_entries_max``)."""
    if not shape:
        return None
    size = shape.size_bytes()
    if limits.max_bytes is not None and size > limits.max_bytes:
        return f"a record is ~{size:,} bytes, over {store}'s {limits.max_bytes:,} ({limits.source})"
    if limits.indexed_value_max_bytes is not None:
        large = shape.large_indexed(limits.indexed_value_max_bytes)
        if large:
            return (f"property '{large[0]}' is indexed and over {limits.indexed_value_max_bytes:,} bytes, which "
                    f"{store} rejects: set indexed = false")
    entries = shape.index_entries()
    if limits.index_entries_max is not None and entries > limits.index_entries_max:
        return (f"{entries:,} index entries per document, over {store}'s {limits.index_entries_max:,}: "
                "exempt properties (indexed = false)")
    return None


# -- parsing ------------------------------------------------------------------------------------


def _fail(where: str, message: str) -> UsageError:
    return UsageError(f"{where}: {message}")


def _int(spec: Mapping[str, Any], name: str, where: str, *, minimum: int, default: int | None = None) -> int:
    value = spec.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(f"{where}.{name}", f"must be an integer ≥ {minimum}, got {value!r}")
    return value


def _property(name: str, spec: Any, where: str, depth: int) -> Property:
    if not name or "." in name or name.startswith("__") or any(c in name for c in "[]*`"):
        # BP-KEY-10: no dots in property names; Firestore reserves __.*__ and these characters.
        raise _fail(where, "property names must be plain words (no '.', '[', ']', '*', '`', no leading '__')")
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, Mapping):
        raise _fail(where, 'a type name ("string") or a table ({ type = "string", size = 40 })')
    kind = spec.get("type")
    if kind not in TYPES:
        raise _fail(f"{where}.type", f"one of {', '.join(TYPES)}, got {kind!r}")
    unknown = sorted(set(spec) - {"type", "indexed"} - _FIELDS[kind])
    if unknown:
        allowed = ", ".join(sorted({"type", "indexed"} | _FIELDS[kind]))
        raise _fail(f"{where}.{unknown[0]}", f"does not apply to {kind} properties (allowed: {allowed})")
    indexed = spec.get("indexed")
    if indexed is not None and not isinstance(indexed, bool):
        raise _fail(f"{where}.indexed", "true or false")
    values = None
    if "values" in spec:
        values = _int(spec, "values", where, minimum=1)
    if kind == "map":
        fields = spec.get("fields")
        if not isinstance(fields, Mapping) or not fields:
            raise _fail(f"{where}.fields", "a table of subfields, e.g. { id = \"int\", name = \"string\" }")
        if depth >= _MAX_DEPTH:
            raise _fail(where, f"maps nest at most {_MAX_DEPTH} deep")
        subs = tuple(_property(n, s, f"{where}.fields.{n}", depth + 1) for n, s in fields.items())
        return Property(name=name, type=kind, fields=subs, indexed=indexed)
    if kind == "array":
        of = spec.get("of", "string")
        if of not in SCALARS:
            raise _fail(f"{where}.of", f"array elements are one of {', '.join(SCALARS)}, got {of!r}")
        if values is not None and of not in ("string", "int"):
            raise _fail(f"{where}.values", f"applies to string and int elements, not {of}")
        size = _int(spec, "size", where, minimum=0, default=_DEFAULT_SIZE.get(of, 0)) if of in _DEFAULT_SIZE else 0
        if "size" in spec and of not in _DEFAULT_SIZE:
            raise _fail(f"{where}.size", f"does not apply to {of} elements")
        items = _int(spec, "items", where, minimum=0, default=3)
        return Property(name=name, type=kind, of=of, items=items, size=size, values=values, indexed=indexed)
    size = 0
    if kind in _DEFAULT_SIZE:
        if kind == "string" and values is not None and "size" in spec:
            raise _fail(f"{where}.size", f"with values, value k is the text '{name}<k>': drop size or values")
        size = _int(spec, "size", where, minimum=0, default=_DEFAULT_SIZE[kind])
    return Property(name=name, type=kind, size=size, values=values, indexed=indexed)


def parse_shape(table: Any, *, where: str = "workload.document") -> DocumentShape:
    """``[workload.document]`` -> ``DocumentShape`` (empty table: no shape); one-line errors."""
    if not isinstance(table, Mapping):
        raise _fail(where, "must be a table ([workload.document])")
    return DocumentShape(properties=tuple(_property(n, s, f"{where}.{n}", 0) for n, s in table.items()))


# -- compiled records (hot path) ----------------------------------------------------------------


def _text_buffer(rng: random.Random, size: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz     ABCDEFGHIJ0123456789"
    return "".join(rng.choices(alphabet, k=size + _SLACK))


#: Fibonacci hashing (one multiply): enough to scatter value picks; mix64 costs 4x more.
_GOLDEN: Final = 0x9E3779B97F4A7C15


def _scalar(kind: str, *, size: int, values: int | None, name: str, rng: random.Random, salt: int,
            created: Callable[[int], int]) -> Callable[[int], Any]:
    """Element ``i``'s value (``i`` is the insert index, or index × items + j for array elements)."""
    if kind == "timestamp":
        fromts = datetime.fromtimestamp
        return lambda i: fromts(created(i) / 1000.0, _UTC)
    if kind == "bool":
        return lambda i: bool((((i + salt) * _GOLDEN) >> 40) & 1)
    if kind == "float":
        scale = 1000.0 / (1 << 64)
        return lambda i: (((i + salt) * _GOLDEN) & _M64) * scale
    if kind == "int":
        if values is not None:
            return lambda i: ((((i + salt) * _GOLDEN) & _M64) >> 20) % values
        return lambda i: (((i + salt) * _GOLDEN) & _M64) >> 1
    if kind == "string" and values is not None:
        pool = tuple(f"{name}{k:0{max(4, len(str(values - 1)))}d}" for k in range(values))
        return lambda i: pool[((((i + salt) * _GOLDEN) & _M64) >> 20) % values]
    # Slices of one buffer at varied offsets (Knuth's multiplicative hash): records differ
    # without generating random text per write.
    buf: Any = _text_buffer(rng, size) if kind == "string" else rng.randbytes(size + _SLACK)

    def sliced(i: int) -> Any:
        offset = (i * 2654435761 + salt) % _SLACK
        return buf[offset:offset + size]

    return sliced


def _literal(template: str, env: dict[str, Any]) -> Callable[[int], Any]:
    """``lambda i: <template>`` over the closures in ``env``: a dict or list *display* builds
    records several times faster than a comprehension. The source holds only ``repr``'d
    names and our own variable names."""
    return eval(f"lambda i: {template}", {"__builtins__": {}, **env})


def _compile_map(props: tuple[Property, ...], *, seed: int, created: Callable[[int], int],
                 salt: int) -> Callable[[int], dict[str, Any]]:
    env: dict[str, Any] = {}
    entries: list[str] = []
    for n, p in enumerate(props):
        s = mix64((seed * 1_000_003 + salt * 131 + n) & _M64)
        rng = random.Random(s)
        var = f"f{n}"
        if p.type == "map":
            env[var] = _compile_map(p.fields, seed=seed, created=created, salt=s)
        elif p.type == "array":
            elem = _scalar(p.of, size=p.size, values=p.values, name=p.name, rng=rng, salt=s, created=created)
            if p.items <= 32:
                env[var] = _literal("[" + ", ".join(f"e(i * {p.items} + {j})" for j in range(p.items)) + "]",
                                    {"e": elem})
            else:
                env[var] = lambda i, e=elem, k=p.items: [e(i * k + j) for j in range(k)]
        else:
            env[var] = _scalar(p.type, size=p.size, values=p.values, name=p.name, rng=rng, salt=s, created=created)
        entries.append(f"{p.name!r}: {var}(i)")
    return _literal("{" + ", ".join(entries) + "}", env)
