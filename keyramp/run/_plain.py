"""The one cell a plain ``locust -f`` run measures (no Locust import).

``keyramp run`` runs a profile's whole matrix (backends × key strategies); plain Locust runs a
single user class against a single store with a single key strategy. A ``$KEYRAMP_PROFILE``
that names several cells is a usage error saying how to pick one, never its first cell taken
silently: that would measure something other than what the profile says.
"""

from __future__ import annotations

from keyramp.core import UsageError
from keyramp.profile import Cell, Profile

__all__ = ["plain_cell"]


def plain_cell(profile: Profile, backend: str) -> Cell:
    """``profile``'s one cell on ``backend``; UsageError naming the file and field otherwise."""
    src = str(profile.path) if profile.path else "profile"
    cells = [c for c in profile.cells if c.backend == backend]
    if not cells:
        listed = sorted({c.backend for c in profile.cells})
        raise UsageError(f"{src}: backend {listed} has no {backend}, the store this locustfile drives: "
                         f"add {backend!r} to `backend`, or use the locustfile of one of {listed}")
    if len(cells) > 1:
        names = ", ".join(c.strategy for c in cells)
        raise UsageError(f"{src}: [keys] strategy lists {len(cells)} strategies ({names}) and plain `locust -f` "
                         f"runs one cell: keep one (strategy = {cells[0].strategy!r}), or run them all with "
                         f"`keyramp run {src}`")
    return cells[0]
