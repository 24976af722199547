"""Key templates' syntax: one line of the profile parsed into items, before any compiling.

Grammar (the columns in errors are 1-based)::

    template  := item+
    item      := part | literal | separator
    part      := NAME [ "(" arg ("," arg)* ")" ]       seq, timestamp, shard(8), hash4(user)
    arg       := part | NUMBER | DURATION | NAME        8, 1h, zipfian, user
    literal   := "'" text "'"                          'v1'
    separator := one of  # : | - . ~ @ + = , ; ! $ % & * / ^
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from keyramp.core import UsageError

__all__ = ["NAME", "SEPARATORS", "Node", "Parser", "TemplateError"]

SEPARATORS: Final = "#:|-.~@+=,;!$%&*/^"
NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ARG: Final = re.compile(r"[0-9][0-9A-Za-z.]*")


class TemplateError(UsageError):
    """A template that does not parse or compile; ``column`` is 1-based."""

    def __init__(self, template: str, column: int, problem: str) -> None:
        super().__init__(f"template {template!r} at column {column}: {problem}")
        self.template, self.column, self.problem = template, column, problem


@dataclass(frozen=True)
class Node:
    """A parsed item: a part (``name`` + ``args``), a literal (``text``), or a bare argument."""

    column: int
    name: str = ""
    args: tuple[Node, ...] = ()
    text: str | None = None  # literal / separator / number-like argument
    called: bool = False  # written with parentheses


class Parser:
    def __init__(self, template: str) -> None:
        self.src, self.pos = template, 0

    def fail(self, problem: str, pos: int | None = None) -> TemplateError:
        return TemplateError(self.src, (self.pos if pos is None else pos) + 1, problem)

    def items(self) -> list[Node]:
        if not self.src:
            raise self.fail("empty template")
        out: list[Node] = []
        while self.pos < len(self.src):
            c = self.src[self.pos]
            if c == "'":
                end = self.src.find("'", self.pos + 1)
                if end < 0:
                    raise self.fail("unterminated literal (closing ' missing)")
                if end == self.pos + 1:
                    raise self.fail("empty literal ''")
                out.append(Node(self.pos, text=self.src[self.pos + 1:end]))
                self.pos = end + 1
            elif NAME.match(c):
                out.append(self.part())
            elif c in SEPARATORS:
                out.append(Node(self.pos, text=c))
                self.pos += 1
            elif c.isspace():
                raise self.fail("spaces are not allowed in keys (quote a literal: ' ')")
            elif c in "0123456789":
                raise self.fail("a number outside parentheses: quote literals ('2024')")
            elif c in "()":
                raise self.fail(f"unexpected {c!r}")
            else:
                raise self.fail(f"unexpected character {c!r} (separators: {SEPARATORS}; quote other literals)")
        return out

    def blanks(self) -> None:
        """Spaces are allowed between arguments (never in the key itself)."""
        while self.pos < len(self.src) and self.src[self.pos] == " ":
            self.pos += 1

    def part(self) -> Node:
        start = self.pos
        m = NAME.match(self.src, self.pos)
        assert m is not None
        self.pos = m.end()
        if self.pos >= len(self.src) or self.src[self.pos] != "(":
            return Node(start, name=m.group())
        self.pos += 1
        args: list[Node] = []
        while True:
            self.blanks()
            if self.pos >= len(self.src):
                raise self.fail("expected ')'")
            c = self.src[self.pos]
            if NAME.match(c):
                args.append(self.part())
            elif c in "0123456789":
                a = ARG.match(self.src, self.pos)
                assert a is not None
                args.append(Node(self.pos, text=a.group()))
                self.pos = a.end()
            else:
                raise self.fail("expected an argument (a number, a duration or a name)")
            self.blanks()
            if self.pos >= len(self.src):
                raise self.fail("expected ')'")
            c = self.src[self.pos]
            self.pos += 1
            if c == ")":
                return Node(start, name=m.group(), args=tuple(args), called=True)
            if c != ",":
                raise self.fail("expected ',' or ')'", self.pos - 1)
