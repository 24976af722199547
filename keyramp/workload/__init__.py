"""What a cell's users do, without Locust: pick an op, a key and a record, call the backend.

``CellWorkload`` (per cell and process: key strategy, insert counter, op mix and its table of
operations) and ``UserOps`` (per user: RNG, read distribution, backend client) are what the
runner's Locust users drive, and what key-space analysis and the forecast regenerate a cell's
keys with. ``SHARED_OPS``/``op_table``: the operations as functions ``op(user) -> key | None``.
Nothing here measures: the recorder (``keyramp.run``) does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keyramp.workload._ops import COUNTER_FIELD, SHARED_OPS, UserOps, cell_table, op_table
from keyramp.workload._workload import CellWorkload, query_spec

if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
