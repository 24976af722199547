"""What a distributed worker receives: a frozen plan of its cell, and the message names.

Coordination is Locust's own (a ``MasterRunner`` tracks ``WorkerRunner``s by heartbeat and
dispatches users); keyramp adds custom messages on top:

* ``keyramp_hello``    worker → master: handlers registered, ready for cells (host, pid)
* ``keyramp_cell``     master → worker: the cell's ``WorkerPlan``
* ``keyramp_status``   worker → master: users ready / a client that could not be created
* ``keyramp_warmup``   worker → master: service times of warm-up operations (the master's
  phases judge when the store has settled, as for a single process)
* ``keyramp_start``    master → worker: the epoch instant the measured phase starts
* ``keyramp_interval`` worker → master: one closed 1 s interval (encoded HdrHistograms,
  counts, errors by class, late, dropped, key samples); ``final`` marks the last one
* ``keyramp_abort``    master → worker: end the cell now (failure or Ctrl-C)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from keyramp._types import Key
from keyramp.backends import Target

__all__ = ["MSG_ABORT", "MSG_CELL", "MSG_HELLO", "MSG_INTERVAL", "MSG_START", "MSG_STATUS", "MSG_WARMUP",
           "USER_CLASS", "WorkerPlan", "key_sample_share"]

#: Locust dispatches users by class name: master and workers must agree on it.
USER_CLASS = "KeyrampUser"
MSG_HELLO = "keyramp_hello"
MSG_CELL = "keyramp_cell"
MSG_STATUS = "keyramp_status"
MSG_WARMUP = "keyramp_warmup"
MSG_START = "keyramp_start"
MSG_INTERVAL = "keyramp_interval"
MSG_ABORT = "keyramp_abort"


@dataclass(frozen=True, kw_only=True)
class WorkerPlan:
    """One worker's share of one cell: everything it needs, nothing it must decide."""

    token: str
    cell_id: str
    backend: str
    strategy: str
    duration_s: float
    time_scale: float
    #: The resolved profile table (``profile.Settings.from_data`` rebuilds the typed view).
    profile: Mapping[str, Any]
    #: The cell's address (emulator endpoint, or the real service), as the master resolved it.
    address: Target
    #: ``profile.target``: which target's host check the worker runs (``RunTarget.check_host``).
    target_kind: str
    worker_index: int
    workers: int
    key_samples_per_s: int
    #: Seconds between one user's warm-up operations; ``None``: no warm-up.
    warmup_interval: float | None
    #: Keys the store allocated during the master's preload (server-allocated strategy).
    allocated: tuple[Key, ...] = field(default=())

    def to_wire(self) -> dict[str, Any]:
        data = asdict(self)
        data["profile"] = dict(self.profile)
        data["address"]["unindexed"] = sorted(self.address.unindexed)
        data["allocated"] = list(self.allocated)
        return data

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> WorkerPlan:
        address = dict(data["address"])
        address["unindexed"] = frozenset(address.get("unindexed") or ())
        # msgpack turns tuples into lists: an ancestor-path key is a (parent, child) pair.
        allocated = tuple(tuple(k) if isinstance(k, list) else k for k in data.get("allocated") or ())
        return cls(**{**data, "address": Target(**address), "allocated": allocated})


def key_sample_share(budget: int, workers: int) -> int:
    """Each worker's share of the cell's key-sample budget (per second)."""
    return math.ceil(budget / workers) if budget else 0
