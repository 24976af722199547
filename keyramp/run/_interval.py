"""One closed 1-second interval of a recorder, as one typed object.

A worker of a distributed run records with its own ``Recorder`` exactly as a single process
does; its sink (``IntervalCollector``) gathers what each ``tick`` hands over into a
``ClosedInterval`` — per operation the interval's HdrHistograms (latency from the intended
start, service time), counts, errors by class, late starts and the workload's own
exceptions first seen in it, plus the slots the pacer dropped and the key samples — which
the master's recorder adds up (``Recorder.absorb``). What a worker's recorder learns to
record, its interval carries: one place to extend (``OpInterval``, ``ClosedInterval`` and
their ``to_wire``/``from_wire``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from hdrh.histogram import HdrHistogram

from keyramp.core import ALL_OPS, KeySample
from keyramp.run._exceptions import ExceptionExample, examples_from_json, examples_to_json

if TYPE_CHECKING:
    from keyramp.results import TimeseriesRow

__all__ = ["ClosedInterval", "IntervalCollector", "KeySample", "OpInterval"]



@dataclass(frozen=True, kw_only=True)
class OpInterval:
    """One operation's part of a closed interval.

    The two HdrHistograms are held in their standard encoded form (``HdrHistogram.encode``,
    what an .hlog line holds): the recorder resets its own right after handing them over, so
    a snapshot is needed, and the encoding the wire needs anyway is the cheapest one (a copy
    into a fresh histogram costs twice as much on a worker); ``latency``/``service`` decode
    on first use.
    """

    count: int
    errors: int
    late: int
    #: Errors by class (``backends._errors.classify``).
    classes: Mapping[str, int]
    latency_encoded: bytes
    service_encoded: bytes
    #: The workload's own exceptions first seen in this op on the worker (``run._exceptions``;
    #: a worker's recorder keeps one per class and cell, the master's keeps the first of all).
    exceptions: tuple[ExceptionExample, ...] = ()

    @cached_property
    def latency(self) -> HdrHistogram:
        """Latency from the intended start (µs)."""
        return HdrHistogram.decode(self.latency_encoded)

    @cached_property
    def service(self) -> HdrHistogram:
        """Service time from the actual start (µs)."""
        return HdrHistogram.decode(self.service_encoded)

    def to_wire(self) -> dict[str, Any]:
        return {"count": self.count, "errors": self.errors, "late": self.late, "classes": dict(self.classes),
                "latency": self.latency_encoded, "service": self.service_encoded,
                "exceptions": examples_to_json(self.exceptions)}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> OpInterval:
        return cls(count=int(data["count"]), errors=int(data["errors"]), late=int(data["late"]),
                   classes={str(k): int(v) for k, v in data["classes"].items()},
                   latency_encoded=bytes(data["latency"]), service_encoded=bytes(data["service"]),
                   exceptions=tuple(examples_from_json(data["exceptions"])))


@dataclass(frozen=True, kw_only=True)
class ClosedInterval:
    """What one recorder's ``tick`` closed: interval ``second`` of the measured phase."""

    second: int
    #: Where the interval starts, in seconds since the phase start, and how long it ran.
    start_s: float
    length_s: float
    #: Slots the pacer dropped in the interval.
    dropped: int
    #: Operations that ran in the interval (none for an op without operations).
    ops: Mapping[str, OpInterval]
    keys: Sequence[KeySample] = ()
    #: The phase's last interval (closed after the drain).
    final: bool = False

    @property
    def end_s(self) -> float:
        return self.start_s + self.length_s

    @property
    def count(self) -> int:
        return sum(o.count for o in self.ops.values())

    def to_wire(self) -> dict[str, Any]:
        return {"second": self.second, "start_s": self.start_s, "length_s": self.length_s, "dropped": self.dropped,
                "ops": {op: o.to_wire() for op, o in self.ops.items()}, "keys": [list(k) for k in self.keys],
                "final": self.final}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ClosedInterval:
        # msgpack sends tuples as lists
        return cls(second=int(data["second"]), start_s=float(data["start_s"]), length_s=float(data["length_s"]),
                   dropped=int(data["dropped"]), ops={op: OpInterval.from_wire(o) for op, o in data["ops"].items()},
                   keys=[(float(t), str(op), str(key), str(kind), tuple(index), int(access))
                         for t, op, key, kind, index, access in data["keys"]], final=bool(data["final"]))


@dataclass
class IntervalCollector:
    """An ``IntervalSink`` that turns each ``Recorder.tick`` into one ``ClosedInterval`` and
    hands it to ``emit`` (a worker forwards it to the master instead of writing files)."""

    emit: Callable[[ClosedInterval], None]
    #: Set before the phase's last tick: the interval it closes is marked ``final``.
    final: bool = False
    _hists: dict[str, tuple[bytes, bytes]] = field(default_factory=dict)
    _rows: Sequence[TimeseriesRow] = ()
    _keys: list[KeySample] = field(default_factory=list)
    _span: tuple[float, float] = (0.0, 0.0)

    def interval(self, *, cell: str, op: str, start_s: float, length_s: float, latency: HdrHistogram,
                 service: HdrHistogram) -> None:
        if op == ALL_OPS:  # derivable: the master rebuilds the merged view from the per-op histograms
            self._span = (start_s, length_s)
        elif latency.get_total_count():  # encoded now: the recorder resets them after this call
            self._hists[op] = (latency.encode(), service.encode())

    def timeseries(self, rows: Sequence[TimeseriesRow]) -> None:
        self._rows = rows

    def keys(self, cell: str, samples: Sequence[KeySample]) -> None:
        self._keys.extend(samples)

    def flush(self) -> None:
        ops: dict[str, OpInterval] = {}
        dropped = second = 0
        for row in self._rows:
            if row.op == ALL_OPS:
                dropped, second = row.dropped, row.second
            elif row.count:
                latency, service = self._hists[row.op]
                ops[row.op] = OpInterval(count=row.count, errors=row.errors, late=row.late,
                                         classes=dict(row.error_classes), latency_encoded=latency,
                                         service_encoded=service, exceptions=row.exceptions)
        closed = ClosedInterval(second=second, start_s=self._span[0], length_s=self._span[1], dropped=dropped,
                                ops=ops, keys=self._keys, final=self.final)
        self._hists, self._rows, self._keys = {}, (), []
        self.emit(closed)
