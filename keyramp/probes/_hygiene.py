"""BP-KEY-10 / BP-API-4: the exact error (or silent acceptance) each store gives for bad
keys, property names and a commit that names one entity twice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from keyramp.backends import Backend
from keyramp.probes._base import ProbeContext, error_text

__all__ = ["CASES", "DEFAULTS", "hygiene_probe"]

DEFAULTS: dict[str, Any] = {}

#: case name -> what it does with a backend (each uses its own key so cases never interact).
CASES: dict[str, Callable[[Backend], object]] = {
    "valid key (control)": lambda b: b.insert("ok-1", {"v": 1}),
    "slash in key name 'a/b'": lambda b: b.insert("a/b", {"v": 1}),
    "empty key name ''": lambda b: b.insert("", {"v": 1}),
    "key name '.'": lambda b: b.insert(".", {"v": 1}),
    "key name '..'": lambda b: b.insert("..", {"v": 1}),
    "reserved key name '__x__'": lambda b: b.insert("__x__", {"v": 1}),
    "numeric id 0": lambda b: b.insert(0, {"v": 1}),
    "negative numeric id -1": lambda b: b.insert(-1, {"v": 1}),
    "key name of 1600 bytes": lambda b: b.insert("k" * 1600, {"v": 1}),
    "dot in property name 'a.b'": lambda b: b.insert("ok-2", {"a.b": 1}),
    "property name '[x]*'": lambda b: b.insert("ok-3", {"[x]*": 1}),
    "same entity twice in one commit": lambda b: b.batch_write([("dup-1", {"v": 1}), ("dup-1", {"v": 2})]),
}


def hygiene_probe(ctx: ProbeContext) -> dict[str, Any]:
    backend = ctx.backend()
    cases: list[dict[str, Any]] = []
    for name, action in CASES.items():
        try:
            action(backend)
        except Exception as exc:  # noqa: BLE001 - the error is the finding
            cases.append({"case": name, "accepted": False, **error_text(exc)})
        else:
            cases.append({"case": name, "accepted": True})
    return {"cases": cases, "rejected": sum(not c["accepted"] for c in cases)}
