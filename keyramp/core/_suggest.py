"""Unknown names with a suggestion: "unknown field 'raet' (did you mean 'rate'? known: kind, rate, …)".

One wording for every "unknown …" a user meets (profile fields, operations, metrics, kinds, stores),
so a typo costs one look: the closest known names first (``difflib``), then every known name.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["close_to", "known_names"]


def close_to(value: object, known: Iterable[str], *, n: int = 2) -> list[str]:
    """The known names closest to ``value`` (at most ``n``; none when nothing is close)."""
    if not isinstance(value, str):
        return []
    names = list(dict.fromkeys(known))
    lower = {name.lower(): name for name in names}
    hits = difflib.get_close_matches(value.lower(), list(lower), n=n, cutoff=0.6)
    return [lower[h] for h in hits]


def known_names(value: object, known: Iterable[str], *, label: str = "known") -> str:
    """``(did you mean 'rate'? known: kind, rate, warmup)``: the suggestion, then every known name
    (``label`` names the list: "known", "allowed", "one of")."""
    names = list(dict.fromkeys(known))
    if not names:
        return f"({label}: none)"
    near = close_to(value, names)
    hint = "did you mean " + " or ".join(repr(n) for n in near) + "? " if near else ""
    return f"({hint}{label}: {', '.join(names)})"
