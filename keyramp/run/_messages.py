"""The messages between a distributed run's master and its workers: one typed class per kind.

Coordination is Locust's own (a ``MasterRunner`` tracks its workers by heartbeat and
dispatches users); keyramp adds these messages on top. Each class names its Locust message
type (``kind``) and converts itself to and from the msgpack-able dict Locust sends
(``to_wire``/``from_wire``); ``send`` and ``receive`` are the only code that touches Locust's
message API, on both sides:

* ``Hello``           worker → master: handlers registered, ready for cells (host, pid)
* ``CellShare``      master → worker: the cell's frozen plan (``_plan``)
* ``Status``          worker → master: users ready / a client that could not be created; as
  the measured phase starts, the records its warm-up inserted
* ``WarmupReport``    worker → master: service times of warm-up operations (the master's
  phases judge when the store has settled, as for a single process) and the worker's
  ``WarmupTally`` so far (the master stops a cell whose every warm-up operation raised the
  workload's own exception)
* ``Start``           master → worker: the epoch instant the measured phase starts
* ``IntervalReport``  worker → master: one closed 1 s interval (``_interval.ClosedInterval``)
  and the worker's CPU since its phase started
* ``Abort``           master → worker: end the cell now (failure or Ctrl-C)

Every message but ``Hello`` carries the cell's ``token`` (run id / cell id): a late message
of an earlier cell is recognised and ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol, Self, TypeVar

from keyramp.run._cpu import CpuSample
from keyramp.run._exceptions import WarmupTally
from keyramp.run._interval import ClosedInterval

__all__ = ["Abort", "Hello", "IntervalReport", "Message", "Start", "Status", "WarmupReport", "one_line",
           "receive", "send"]


@dataclass(frozen=True, kw_only=True)
class Message:
    """Base of every keyramp message; a plain-field message needs no conversion of its own."""

    #: The Locust message type.
    kind: ClassVar[str]

    def to_wire(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Self:
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


@dataclass(frozen=True, kw_only=True)
class Hello(Message):
    kind: ClassVar[str] = "keyramp_hello"
    host: str
    pid: int


@dataclass(frozen=True, kw_only=True)
class Status(Message):
    kind: ClassVar[str] = "keyramp_status"
    token: str
    #: Users whose client exists.
    ready: int
    #: A client that could not be created, or a plan the worker could not set up (one line).
    error: str | None = None
    #: Records the worker's warm-up inserted (sent as its measured phase starts).
    warmup_inserts: int | None = None


@dataclass(frozen=True, kw_only=True)
class WarmupReport(Message):
    kind: ClassVar[str] = "keyramp_warmup"
    token: str
    #: Service times (s) of warm-up operations since the last report (evenly thinned).
    latencies: Sequence[float]
    #: The worker's warm-up so far: operations (a failed one too), the workload's own
    #: exceptions among them, the first of them.
    tally: WarmupTally

    def to_wire(self) -> dict[str, Any]:
        return {"token": self.token, "latencies": list(self.latencies), "tally": self.tally.to_wire()}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Self:
        return cls(token=str(data["token"]), latencies=[float(x) for x in data["latencies"]],
                   tally=WarmupTally.from_wire(data["tally"]))


@dataclass(frozen=True, kw_only=True)
class Start(Message):
    kind: ClassVar[str] = "keyramp_start"
    token: str
    #: ``time.time()`` instant the measured phase starts on every worker.
    start_epoch: float


@dataclass(frozen=True, kw_only=True)
class IntervalReport(Message):
    kind: ClassVar[str] = "keyramp_interval"
    token: str
    interval: ClosedInterval
    #: The worker's ``CpuSample`` since its phase started (a worker lost later still counts
    #: for what it used until its last interval).
    cpu: CpuSample | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"token": self.token, "interval": self.interval.to_wire(),
                "cpu": None if self.cpu is None else list(self.cpu)}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Self:
        cpu = data.get("cpu")
        return cls(token=str(data["token"]), interval=ClosedInterval.from_wire(data["interval"]),
                   cpu=CpuSample(*map(float, cpu)) if cpu else None)


@dataclass(frozen=True, kw_only=True)
class Abort(Message):
    kind: ClassVar[str] = "keyramp_abort"
    token: str


class _Runner(Protocol):
    """The part of a Locust master or worker runner the messages use."""

    def send_message(self, msg_type: str, data: dict[str, Any] | None = None, client_id: str | None = None) -> None: ...

    def register_message(self, msg_type: str, listener: Callable[..., None], concurrent: bool = False) -> None: ...


M = TypeVar("M", bound=Message)


def send(runner: _Runner, message: Message, *, to: str | None = None) -> None:
    """Send ``message`` (from a worker: to the master; from the master: to worker ``to``, or all)."""
    runner.send_message(message.kind, message.to_wire(), client_id=to)


def receive(runner: _Runner, cls: type[M], handler: Callable[[str, M], None]) -> None:
    """Call ``handler(sender's node id, message)`` for every ``cls`` message ``runner`` receives."""

    def on_message(environment: Any, msg: Any, **_: Any) -> None:
        handler(msg.node_id, cls.from_wire(msg.data or {}))

    runner.register_message(cls.kind, on_message)


def one_line(text: str) -> str:
    return " ".join(str(text).split())
