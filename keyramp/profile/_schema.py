"""The profile schema, declared once.

Each section of a profile (the top level, ``[workload]``, ``[schedule]``, ``[cloud]`` …) is
a frozen dataclass whose fields are declared with ``option(...)``: the TOML name, the
default, the ``Check`` that validates a value (and says what is allowed), one line of
documentation and what the field applies to. From that one declaration come

- the section's **defaults** and its **resolved table** (every default filled in): the
  manifest and wire format, from which workers rebuild ``Settings``;
- its **validation**: an unknown field, a field that does not apply, or a value its check
  refuses is one line naming the file and the field (``UsageError``: exit 2), before any load;
- the **typed object** the code reads (``Section.from_data``);
- the **field reference** in docs/profiles.md (``python -m keyramp.profile._docs``).

Rules that span fields (``paginate`` needs ``page``; a Bigtable-only field in a profile
without Bigtable) are the section's ``finish`` hook. Messages keep their established
wording (scripts and tests match them): some sections name a field ``cloud: instance``,
others ``schedule.time_scale`` (``Section.COLON``).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, TypeVar

from keyramp.backends import STORES, spec_for
from keyramp.core import UsageError, known_names
from keyramp.profile._checks import MISSING, Check, Context, Table, Where

__all__ = ["Option", "Section", "Sub", "option", "stores_with"]


@dataclass(frozen=True, kw_only=True)
class Option:
    """One field as declared: see ``option``."""

    check: Check
    doc: str
    default: Any = MISSING
    toml: str = ""
    wire: str = ""
    attr: str = ""
    #: Not a TOML field: the section's rules compute it into the resolved table.
    derived: bool = False
    #: The typed value when an older resolved table (a manifest) lacks the key.
    legacy: Any = MISSING
    #: Other fields of the section beside which this one does not apply (``workload.user``).
    not_with: tuple[str, ...] = ()
    #: Schedule kinds that read the field -> its default there (``MISSING``: required or none).
    kinds: Mapping[str, Any] | None = None
    #: Where else it applies, in words, for the reference ("Bigtable").
    applies: str = ""
    #: A store feature (``keyramp.backends.FEATURES``) every backend of the profile must have:
    #: given beside a store without it, the field is an error (``entity_group_size``: ancestor paths).
    needs: str = ""
    #: Bad values beyond its check's own (for ``Free`` fields, which a rule validates).
    bad: tuple[Any, ...] = ()

    def default_value(self) -> Any:
        return copy.deepcopy(self.default)

    def default_of(self, kind: str) -> Any:
        """The default where schedule kind ``kind`` reads the field (``MISSING``: none declared)."""
        return (self.kinds or {}).get(kind, MISSING)

    def bad_values(self) -> tuple[Any, ...]:
        return (*self.check.bad, *self.bad)


_OPTION = "keyramp.option"


def option(check: Check, doc: str, **more: Any) -> dict[str, Option]:
    """The metadata that makes a dataclass field a profile field: ``field(metadata=option(...))``.
    The TOML name (``toml``) and the resolved table's key (``wire``) are the attribute's name
    unless given; ``default`` is in TOML form (the check resolves it like a written value)."""
    return {_OPTION: Option(check=check, doc=doc, **more)}


_S = TypeVar("_S", bound="Section")


class Section:
    """A declared section: its options are the dataclass fields made with ``option``."""

    #: Dotted TOML name ("" for the top level).
    TABLE: ClassVar[str] = ""
    #: Value errors read ``p.toml: cloud: instance: …`` rather than ``p.toml: cloud.instance: …``.
    COLON: ClassVar[bool] = False

    @classmethod
    def options(cls) -> tuple[Option, ...]:
        """The declared fields, in declaration order (the resolved table's and the reference's)."""
        return _options(cls)  # type: ignore[arg-type]  # (mypy: a class is hashable)

    @classmethod
    def toml_names(cls) -> tuple[str, ...]:
        return tuple(o.toml for o in cls.options() if not o.derived)

    @classmethod
    def where(cls, ctx: Context, name: str) -> Where:
        return Where(ctx, cls.TABLE, name, cls.COLON)

    @classmethod
    def reject_unknown(cls, given: Mapping[str, Any], ctx: Context) -> None:
        allowed = set(cls.toml_names())
        unknown = sorted(set(given) - allowed)
        if unknown:
            where = f"{ctx.src}: {cls.TABLE}" if cls.TABLE else ctx.src
            raise UsageError(f"{where}: unknown field {unknown[0]!r} "
                             f"{known_names(unknown[0], sorted(allowed), label='allowed')}")

    @classmethod
    def resolve(cls, given: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
        """``given`` (the TOML table) validated, with every default filled in: the resolved table."""
        cls.reject_unknown(given, ctx)
        cls.reject_stores(given, ctx)
        cls.applies(given, ctx)
        out = cls.resolve_options(given, ctx, (o for o in cls.options() if not o.derived))
        cls.finish(out, given, ctx)
        return out

    @classmethod
    def reject_stores(cls, given: Mapping[str, Any], ctx: Context) -> None:
        """Refuse a field (``Option.needs``) given beside a backend without the store feature it
        needs: in that store's cells it would ask for what the store cannot do (one store lacking it is enough)."""
        for opt in cls.options():
            if not opt.needs or opt.toml not in given:
                continue
            for backend in ctx.resolved.get("backend", ()):
                spec = spec_for(backend)
                if not spec.has(opt.needs):
                    raise UsageError(f"{cls.where(ctx, opt.toml).path}: does not apply to {backend}: "
                                     f"{spec.why_not(opt.needs)} (it applies to {', '.join(stores_with(opt.needs))})")

    @classmethod
    def applies(cls, given: Mapping[str, Any], ctx: Context) -> None:
        """Refuse a field given where it does not apply (before any value is checked)."""

    @classmethod
    def resolve_options(cls, given: Mapping[str, Any], ctx: Context, options: Iterable[Option],
                        into: dict[str, Any] | None = None) -> dict[str, Any]:
        """Each of ``options`` checked as given (or its default) into ``into``; absent without a
        default: left out, unless the check requires it (and says so)."""
        out = {} if into is None else into
        for opt in options:
            value = given[opt.toml] if opt.toml in given else opt.default_value()
            if value is MISSING and not opt.check.required:
                continue
            out[opt.wire] = opt.check.resolve(value, cls.where(ctx, opt.toml))
            if not cls.TABLE:  # the top level: later sections' rules read it
                ctx.resolved[opt.wire] = out[opt.wire]
        return out

    @classmethod
    def finish(cls, out: dict[str, Any], given: Mapping[str, Any], ctx: Context) -> None:
        """Rules across fields; may complete ``out`` (the resolved table)."""

    @classmethod
    def from_data(cls: type[_S], data: Mapping[str, Any]) -> _S:
        """The typed section from its resolved table (the profile's, or a manifest's)."""
        return cls(**cls.typed_fields(data))

    @classmethod
    def typed_fields(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for opt in cls.options():
            if opt.wire in data:
                out[opt.attr] = opt.check.typed(data[opt.wire])
            elif opt.legacy is not MISSING:
                out[opt.attr] = copy.deepcopy(opt.legacy)
            else:
                raise KeyError(opt.wire)
        return out


def stores_with(feature: str) -> tuple[str, ...]:
    """The registered stores that have ``feature`` (where an ``Option.needs`` field applies)."""
    return tuple(name for name in STORES.names() if spec_for(name).has(feature))


@functools.cache
def _options(section: type[Section]) -> tuple[Option, ...]:
    out = []
    for f in fields(section):  # type: ignore[arg-type]
        opt = f.metadata.get(_OPTION)
        if opt is not None:
            out.append(replace(opt, attr=f.name, toml=opt.toml or f.name, wire=opt.wire or f.name))
    return tuple(out)


@dataclass(frozen=True)
class Sub(Check):
    """A sub-table declared as a section of its own (``[workload.query]``, ``[cloud]`` …)."""

    section: type[Section]
    bad: ClassVar = (5, "x")

    def resolve(self, value: Any, at: Where) -> Any:
        Table(bracket=True).resolve(value, at)
        return self.section.resolve(value, at.ctx)

    def typed(self, value: Any) -> Any:
        return self.section.from_data(value)

    def describe(self) -> str:
        return f"table (`[{self.section.TABLE}]`)"
