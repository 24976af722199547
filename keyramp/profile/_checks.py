"""The checks a profile field is declared with (``_schema.option``): each validates a value
with one line naming the file and the field, resolves it to its wire form, types it for
the settings objects and says what is allowed (for docs/profiles.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from keyramp.core import UsageError, known_names, parse_duration

__all__ = [
    "MISSING",
    "Bool",
    "Check",
    "Choice",
    "Context",
    "Duration",
    "Free",
    "Int",
    "Known",
    "Names",
    "Number",
    "Pattern",
    "Strings",
    "Table",
    "Text",
    "Where",
    "quoted",
]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"

    def __deepcopy__(self, memo: dict[int, Any]) -> _Missing:
        return self


#: No value: a field not given and without a default (required, or left out of the table).
MISSING: Any = _Missing()


@dataclass(frozen=True)
class Context:
    """What a section's rules may need besides its own table: the file, and the profile so far."""

    #: The profile file ("" where there is none: a schedule rebuilt from a manifest).
    src: str = ""
    #: Relative paths in the profile (``workload.user``, ``launch.params``) start here.
    base_dir: Path = Path()
    #: The whole profile as written.
    raw: Mapping[str, Any] = field(default_factory=dict)
    #: The top level resolved so far (sections resolve in declaration order).
    resolved: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Where:
    """One field of one section, for its error messages."""

    ctx: Context
    #: The section's dotted name: "" (top level), "workload", "workload.query".
    table: str
    name: str
    colon: bool = False

    @property
    def src(self) -> str:
        return self.ctx.src

    @property
    def dotted(self) -> str:
        return f"{self.table}.{self.name}" if self.table else self.name

    def _in_file(self, text: str) -> str:
        return f"{self.src}: {text}" if self.src else text

    @property
    def path(self) -> str:
        """``p.toml: workload.query.limit``."""
        return self._in_file(self.dotted)

    @property
    def label(self) -> str:
        """The section's style for a bad value: ``p.toml: cloud: instance`` or ``p.toml: schedule.rate``."""
        return self._in_file(f"{self.table}: {self.name}") if self.colon and self.table else self.path

    @property
    def subject(self) -> str:
        """For "… must be …" sentences: ``p.toml: 'description'``, ``p.toml: cloud: cleanup``."""
        return self._in_file(f"{self.table}: {self.name}" if self.table else f"'{self.name}'")


class Check:
    """How one field's value is validated and resolved (its wire form), typed, and described."""

    #: Values the check refuses (the schema's own tests give each to every field declared with it).
    bad: ClassVar[tuple[Any, ...]] = ()
    #: A field that must be given (its check words the error).
    required: bool = False

    def resolve(self, value: Any, at: Where) -> Any:
        return value

    def typed(self, value: Any) -> Any:
        return value

    def describe(self) -> str:
        return ""


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


@dataclass(frozen=True)
class Int(Check):
    minimum: int = 0
    maximum: int | None = None
    #: Instead of "an integer ≥ 1" (``schedule.users`` says "a positive integer").
    what: str = ""
    bad: ClassVar = ("x", 1.5, True)

    def resolve(self, value: Any, at: Where) -> Any:
        whole = _number(value) and isinstance(value, int)
        if self.maximum is not None and not (whole and self.minimum <= value <= self.maximum):
            raise UsageError(f"{at.path}: an integer from {self.minimum:,} to {self.maximum:,}, got {value!r}")
        if not (whole and value >= self.minimum):
            raise UsageError(f"{at.path}: must be {self.what or f'an integer ≥ {self.minimum}'}, got {value!r}")
        return value

    def typed(self, value: Any) -> Any:
        return int(value)

    def describe(self) -> str:
        return f"integer ≥ {self.minimum}" if self.maximum is None else f"integer {self.minimum}–{self.maximum:,}"


@dataclass(frozen=True)
class Number(Check):
    """A positive finite number (resolved as a float), or one in ``(0, maximum]`` (kept as written)."""

    maximum: float | None = None
    bad: ClassVar = ("x", 0, -1, True)

    def resolve(self, value: Any, at: Where) -> Any:
        if self.maximum is None:
            if not _number(value) or not 0 < value < math.inf:
                raise UsageError(f"{at.label}: must be a positive number, got {value!r}")
            return float(value)
        if not _number(value) or not 0 < value <= self.maximum:
            raise UsageError(f"{at.label}: a number in (0, {self.maximum:g}], got {value!r}")
        return value

    def typed(self, value: Any) -> Any:
        return float(value)

    def describe(self) -> str:
        return "number > 0" if self.maximum is None else f"number in (0, {self.maximum:g}]"


@dataclass(frozen=True)
class Choice(Check):
    values: tuple[str, ...]
    sep: str = ", "
    #: The sentence instead of "one of a, b" (``target``'s is "must be 'emulator' or 'cloud'").
    expected: str = ""
    bad: ClassVar = ("nope", 3)

    def resolve(self, value: Any, at: Where) -> Any:
        if not isinstance(value, str) or value not in self.values:
            expected = self.expected or f"one of {self.sep.join(self.values)}"
            raise UsageError(f"{at.label}: {expected}, got {value!r}")
        return value

    def describe(self) -> str:
        return " \\| ".join(f"`{v}`" for v in self.values)


def quoted(value: Any) -> str:
    """``'x'`` whatever ``x`` is (``Known``'s messages for stores and distributions)."""
    return f"'{value}'"


@dataclass(frozen=True)
class Known(Check):
    """A name in a registry (stores, distributions, probes, schedule kinds), read when needed."""

    names: Callable[[], Sequence[str]]
    #: What the name names, as in "unknown backend 'x'" ("" for "unknown 'x'").
    noun: str = ""
    quote: Callable[[Any], str] = repr
    #: Names accepted besides the registry's, listed first (a probe may be "none").
    also: tuple[str, ...] = ()
    bad: ClassVar = ("nope",)

    def choices(self) -> tuple[str, ...]:
        return (*self.also, *self.names())

    def resolve(self, value: Any, at: Where) -> Any:
        choices = self.choices()
        if not isinstance(value, str) or value not in choices:
            noun = f"{self.noun} " if self.noun else ""
            raise UsageError(f"{at.path}: unknown {noun}{self.quote(value)} "
                             f"{known_names(value, choices, label='one of')}")
        return value

    def describe(self) -> str:
        return " \\| ".join(f"`{v}`" for v in self.choices())


@dataclass(frozen=True)
class Pattern(Check):
    regex: re.Pattern[str]
    what: str
    empty: bool = False
    bad: ClassVar = ("Not Valid!", 5)

    def resolve(self, value: Any, at: Where) -> Any:
        if not isinstance(value, str) or not ((self.empty and not value) or self.regex.fullmatch(value)):
            raise UsageError(f"{at.label}: not a valid {self.what}: {value!r}")
        return value

    def describe(self) -> str:
        return self.what + (" (or empty)" if self.empty else "")


class Bool(Check):
    bad: ClassVar = ("yes", 1)

    def resolve(self, value: Any, at: Where) -> Any:
        if not isinstance(value, bool):
            raise UsageError(f"{at.subject} must be true or false")
        return value

    def typed(self, value: Any) -> Any:
        return bool(value)

    def describe(self) -> str:
        return "`true` \\| `false`"


@dataclass(frozen=True)
class Text(Check):
    what: str = "a string"
    #: Whether the message repeats the value.
    got: bool = False
    required: bool = False
    bad: ClassVar = (5, ["a"])

    def resolve(self, value: Any, at: Where) -> Any:
        if self.required and (not isinstance(value, str) or not value.strip()):
            raise UsageError(f"{at.subject} is required (a non-empty string)")
        if not isinstance(value, str):
            raise UsageError(f"{at.subject} must be {self.what}" + (f", got {value!r}" if self.got else ""))
        return value

    def typed(self, value: Any) -> Any:
        return str(value)

    def describe(self) -> str:
        return "string"


@dataclass(frozen=True)
class Strings(Check):
    """A list of strings (``nonempty``: each non-empty)."""

    what: str
    nonempty: bool = False
    bad: ClassVar = ("a", [5])

    def resolve(self, value: Any, at: Where) -> Any:
        if not isinstance(value, list) or not all(isinstance(v, str) and (v or not self.nonempty) for v in value):
            raise UsageError(f"{at.subject} must be {self.what}")
        return list(value)

    def typed(self, value: Any) -> Any:
        return tuple(value)

    def describe(self) -> str:
        return "list of strings"


@dataclass(frozen=True)
class Names(Check):
    """A name or a non-empty list of distinct names (a list expands the matrix of cells)."""

    #: Each name must be one of these (else any name: a rule checks it).
    known: Known | None = None
    bad: ClassVar = ([], ["a", "a"], 5)

    def resolve(self, value: Any, at: Where) -> Any:
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, str) and v for v in items):
            raise UsageError(f"{at.path}: must be a name or a non-empty list of names")
        if len(set(items)) != len(items):
            raise UsageError(f"{at.path}: lists a name twice")
        if self.known is not None:
            for item in items:
                self.known.resolve(item, at)
        return items

    def typed(self, value: Any) -> Any:
        return tuple(value)

    def describe(self) -> str:
        return "a name or a list of names" + (f": {self.known.describe()}" if self.known is not None else "")


@dataclass(frozen=True)
class Duration(Check):
    #: ``0``, ``"0"`` and ``"0s"`` mean none (``warmup``).
    zero: bool = False
    bad: ClassVar = ("soon", -1, True)

    def resolve(self, value: Any, at: Where) -> Any:
        if self.zero and value in (0, "0", "0s"):
            return 0.0
        return parse_duration(value, field=at.path)

    def typed(self, value: Any) -> Any:
        return float(value)

    def describe(self) -> str:
        return "duration" + (' or `"0s"`' if self.zero else "") + ' (`"90s"`, `"5m"`, `"1h30m"`; a number: seconds)'


@dataclass(frozen=True)
class Table(Check):
    """A free-form table its consumer reads (``distribution_params``, ``keys.params`` …)."""

    #: Whether the message shows the TOML header ("must be a table ([name])").
    bracket: bool = False
    bad: ClassVar = (5, "x")

    def resolve(self, value: Any, at: Where) -> Any:
        if not isinstance(value, dict):
            if not at.table:
                raise UsageError(f"{at.src}: '{at.name}' must be a table ([{at.name}])")
            raise UsageError(f"{at.path} must be a table" + (f" ([{at.dotted}])" if self.bracket else ""))
        return dict(value)

    def typed(self, value: Any) -> Any:
        return dict(value)

    def describe(self) -> str:
        return "table"


@dataclass(frozen=True)
class Free(Check):
    """Any value here: a rule of the section validates it (the option names bad values to test with)."""

    #: What is allowed, in words (the reference's "values").
    what: str = ""
    #: The typed value from the resolved one (default: as it is).
    convert: Callable[[Any], Any] | None = None

    def typed(self, value: Any) -> Any:
        return value if self.convert is None else self.convert(value)

    def describe(self) -> str:
        return self.what
