"""New exception classes: what a candidate's workload raised that its baseline's did not.

A Python workload's own exceptions (``keyramp.results._exceptions``) are bugs, not load
effects: a class the baseline's cell never raised is listed with its first occurrence
(message, file:line) and fails the comparison, whatever the latency says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from keyramp.results import Run, cell_exceptions

__all__ = ["NewException", "new_exceptions"]


@dataclass(frozen=True, kw_only=True)
class NewException:
    cell: str  # identity (cell id without its cNN- index)
    run_id: str
    error_class: str
    op: str
    message: str
    where: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def new_exceptions(baselines: Sequence[Run], candidates: Sequence[Run],
                   identities: Mapping[str, Mapping[str, str]]) -> list[NewException]:
    """Per candidate and cell (matched by identity; a cell only in the candidate counts too),
    the workload exception classes its baseline cell (in any run of a baseline set) did not raise."""
    out: list[NewException] = []
    for cand in candidates:
        for ident, cell_id in identities[cand.run_id].items():
            known = {e.error_class for base in baselines if (base_id := identities[base.run_id].get(ident))
                     for e, _ in cell_exceptions(base.cell(base_id))}
            out += [NewException(cell=ident, run_id=cand.run_id, error_class=e.error_class, op=e.op,
                                 message=e.message, where=e.where, count=n)
                    for e, n in cell_exceptions(cand.cell(cell_id)) if e.error_class not in known]
    return out
