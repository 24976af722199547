"""A cell's op mix as row accesses: what each operation inserts, writes and reads (the forecast's unit).

Batch ops count ``batch_size`` rows, scans ``scan_length``, a transaction or an increment a read
and a write of one existing row; ``query`` is not projected (what it reads depends on its filter
and index, which the key stream does not show). A Python workload's mix is measured from what its
requests did (``_captured.recorded_mix``) where the recording kept it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from keyramp.profile import WorkloadSettings

__all__ = ["CLASSES", "OpMix", "op_mix"]

#: op -> row accesses it makes: (kind, where, rows-field or count). ``query`` is not projected:
#: what it reads depends on its filter and index, which the key stream does not show.
_ROWS: dict[str, tuple[tuple[str, str, str | int], ...]] = {
    "insert": (("write", "new", 1),),
    "batch_write": (("write", "new", "batch_size"),),
    "read": (("read", "existing", 1),),
    "batch_read": (("read", "existing", "batch_size"),),
    "update": (("write", "existing", 1),),
    "delete": (("write", "existing", 1),),
    "scan": (("read", "existing", "scan_length"),),
    "transaction": (("read", "existing", 1), ("write", "existing", 1)),
    "increment": (("read", "existing", 1), ("write", "existing", 1)),
}
CLASSES = (("write", "new"), ("write", "existing"), ("read", "existing"))


@dataclass(frozen=True, kw_only=True)
class OpMix:
    """Row accesses per operation, by class, from the cell's measured operation counts."""

    shares: Mapping[str, float]  # op -> share of the cell's operations (projected ops only)
    per_op: Mapping[tuple[str, str], float]  # (kind, where) -> rows per operation
    not_projected: tuple[str, ...] = ()
    #: Of the existing-row writes, rows per operation that delete (billed apart from writes).
    deletes_per_op: float = 0.0

    @property
    def rows_per_op(self) -> float:
        return sum(self.per_op.values())

    @property
    def inserts_per_op(self) -> float:
        return self.per_op.get(("write", "new"), 0.0)

    @property
    def reads_per_op(self) -> float:
        return self.per_op.get(("read", "existing"), 0.0)

    @property
    def writes_per_op(self) -> float:
        return self.rows_per_op - self.reads_per_op


def _rows_of(workload: WorkloadSettings | None) -> Mapping[str, tuple[tuple[str, str, str | int], ...]]:
    """Row accesses per op name. A Python workload's ops are its methods (docs/workloads.md):
    one that creates the key it returns (``insert_ops``) is one insert, any other one access
    to an existing row, counted as a read (what the method does with it is its own code; where the
    recording kept what its requests did, ``_captured.recorded_mix`` says it instead)."""
    if workload is None or not workload.user:
        return _ROWS
    inserts = set(workload.insert_ops)
    return {op: _ROWS["insert"] if op in inserts else _ROWS["read"] for op in workload.ops}


def op_mix(counts: Mapping[str, float], workload: WorkloadSettings | None) -> OpMix:
    """The mix of ``counts`` (op -> operations; the profile's shares when nothing was counted). ``workload``:
    the run's (batch and scan sizes, a Python workload's ops; None: a run without a profile)."""
    if not any(v > 0 for v in counts.values()):
        counts = dict(workload.ops) if workload is not None else {}
    rows_of = _rows_of(workload)
    size = {"batch_size": workload.batch_size if workload is not None else 1,
            "scan_length": workload.scan_length if workload is not None else 1}
    projected = {op: float(n) for op, n in counts.items() if op in rows_of and n > 0}
    total = sum(projected.values()) or 1.0
    per_op: dict[tuple[str, str], float] = {c: 0.0 for c in CLASSES}
    for op, n in projected.items():
        for kind, where, rows in rows_of[op]:
            per_op[(kind, where)] += n / total * (int(size[rows]) if isinstance(rows, str) else rows)
    skipped = tuple(sorted(op for op, n in counts.items() if op not in rows_of and n > 0))
    # A Python workload's ops are inserts or reads (``_rows_of``): only the built-in delete deletes.
    deletes = 0.0 if workload is not None and workload.user else projected.get("delete", 0.0) / total
    return OpMix(shares={op: n / total for op, n in projected.items()}, per_op=per_op, not_projected=skipped,
                 deletes_per_op=deletes)
