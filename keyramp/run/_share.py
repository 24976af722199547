"""What a distributed worker receives: a frozen plan of its cell (the ``keyramp_cell``
message; the other messages are in ``_messages``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from keyramp.backends import Target
from keyramp.core import Key
from keyramp.profile import Settings, make_schedule
from keyramp.run._messages import Message
from keyramp.run._pacer import Pacing

__all__ = ["USER_CLASS", "CellShare", "key_sample_share"]

#: Locust dispatches users by class name: master and workers must agree on it.
USER_CLASS = "KeyrampUser"


@dataclass(frozen=True, kw_only=True)
class CellShare(Message):
    """One worker's share of one cell: everything it needs, nothing it must decide."""

    kind: ClassVar[str] = "keyramp_cell"
    token: str
    cell_id: str
    backend: str
    strategy: str
    duration_s: float
    time_scale: float
    #: The resolved profile table: the wire form (``profile.Settings.from_data`` rebuilds the typed view).
    resolved: Mapping[str, Any]
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

    @cached_property
    def settings(self) -> Settings:
        return Settings.from_data(self.resolved)

    def pacing(self) -> Pacing:
        """This worker's share (1/N) of the cell's schedule, as the master's cell has it."""
        schedule = make_schedule(self.settings.schedule.table, horizon=self.duration_s * self.time_scale)
        return Pacing(schedule=schedule, duration_s=self.duration_s, time_scale=self.time_scale,
                      drop_after_s=self.settings.schedule.drop_after_s, share=1.0 / self.workers)

    def to_wire(self) -> dict[str, Any]:
        data = asdict(self)
        data["resolved"] = dict(self.resolved)
        data["address"]["unindexed"] = sorted(self.address.unindexed)
        data["allocated"] = list(self.allocated)
        return data

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> CellShare:
        address = dict(data["address"])
        address["unindexed"] = frozenset(address.get("unindexed") or ())
        # msgpack turns tuples into lists: an ancestor-path key is a (parent, child) pair.
        allocated = tuple(tuple(k) if isinstance(k, list) else k for k in data.get("allocated") or ())
        return cls(**{**data, "address": Target(**address), "allocated": allocated})


def key_sample_share(budget: int, workers: int) -> int:
    """Each worker's share of the cell's key-sample budget (per second)."""
    return math.ceil(budget / workers) if budget else 0
