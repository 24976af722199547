"""``@keyramp.op(weight=N)``: a method of a workload user that performs one operation.

The decorator returns a Locust task (``locust_task_weight``) that, under plain
``locust -f``, times the call and reports it through Locust's ``events.request`` under the
method's name; the workload's own exception (not a store's status) also goes to
``events.user_error``, as an exception escaping a Locust task does (Locust's exceptions CSV
and web UI tab show it with its traceback). ``keyramp run`` never calls that wrapper: it
reads the ``OpSpec`` and calls the undecorated method itself, so the recorder measures each
operation once.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from keyramp.pyworkload._keys import as_key

__all__ = ["RESERVED", "OpSpec", "collect_ops", "op", "operation"]

#: Attributes a workload user gets from keyramp: an op cannot take their names.
RESERVED: Final = frozenset({
    "client", "table", "namespace", "keys", "document", "no_retry", "store", "backend", "ops", "context",
    "environment", "tasks", "wait_time", "on_start", "on_stop", "run", "operate",
    "forecast",  # thresholds "forecast.<metric>" are the launch forecast's
})


@dataclass(frozen=True, kw_only=True)
class OpSpec:
    """One operation of a workload: the method, its weight, whether it creates records."""

    name: str
    weight: int
    fn: Callable[[Any], Any]
    #: Creates the record whose key it returns (from ``self.keys.new()``): the key-space
    #: analysis counts such keys as new. ``None`` in ``op()``: inferred from the method body.
    inserts: bool


def _calls_keys_new(fn: Callable[..., Any]) -> bool:
    """Whether the method's code reads ``….keys.new`` (``self.keys.new()``): an insert."""
    names = set(getattr(getattr(fn, "__code__", None), "co_names", ()))
    return {"keys", "new"} <= names


def op(weight: int | Callable[..., Any] = 1, *, inserts: bool | None = None) -> Any:
    """Mark a method as an operation; ``@keyramp.op`` or ``@keyramp.op(weight=3)``.

    ``inserts``: whether the op creates the record whose key it returns (default: it calls
    ``self.keys.new()``).
    """
    if (callable(weight) and not isinstance(weight, bool)) or isinstance(weight, (staticmethod, classmethod, property)):
        return op(1, inserts=inserts)(weight)  # bare @keyramp.op
    if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
        raise TypeError(f"keyramp.op: weight must be an integer ≥ 1, got {weight!r}")

    def decorate(fn: Any) -> Any:
        if isinstance(fn, (staticmethod, classmethod, property)) or not inspect.isfunction(fn):
            raise TypeError(f"keyramp.op decorates a method (def name(self): …), not {type(fn).__name__} {fn!r}")
        if inspect.iscoroutinefunction(fn) or inspect.isgeneratorfunction(fn):
            raise TypeError(f"keyramp.op: {fn.__qualname__} must be a plain method (gevent runs it), "
                            "not async or a generator")
        name = fn.__name__

        def task(self: Any) -> None:
            # Plain `locust -f`: Locust's stats measure; keyramp run calls spec.fn instead.
            started = time.perf_counter()
            error: BaseException | None = None
            try:
                fn(self)
            except Exception as exc:  # noqa: BLE001 - Locust counts it as a failure of this op
                error = exc
            events = self.environment.events
            events.request.fire(
                request_type=self.store, name=name, response_time=(time.perf_counter() - started) * 1000.0,
                response_length=0, exception=error, context={})
            if error is not None and _own(error):
                events.user_error.fire(user_instance=self, exception=error, tb=error.__traceback__)

        task.__name__, task.__qualname__, task.__doc__ = name, fn.__qualname__, fn.__doc__
        task.locust_task_weight = weight  # type: ignore[attr-defined]
        task.keyramp_op = OpSpec(  # type: ignore[attr-defined]
            name=name, weight=weight, fn=fn, inserts=_calls_keys_new(fn) if inserts is None else inserts)
        return task

    return decorate


def _own(error: BaseException) -> bool:
    """The workload's own exception, not a store's status (``keyramp.backends._errors``)."""
    from keyramp.backends import (  # deferred: start-up cost (grpc: plain Locust, on failure only)
        classify,
        raised_by_workload,
    )

    return raised_by_workload(classify(error), error)


def collect_ops(cls: type) -> dict[str, OpSpec]:
    """The ``@op`` methods of ``cls`` (own and inherited), in definition order; ``ValueError``
    (one line) for an op that is not a method callable with ``self`` alone, or a reserved name."""
    found: dict[str, OpSpec] = {}
    for klass in reversed(cls.__mro__):
        for attr, value in vars(klass).items():
            spec = getattr(value, "keyramp_op", None)
            if spec is None:
                continue
            if attr != spec.name:
                raise ValueError(f"{cls.__name__}.{attr}: an op must be defined with def in the class "
                                 f"(it is {spec.name!r} assigned to another name)")
            found[attr] = spec
    for name, spec in found.items():
        if name in RESERVED or name.startswith("_"):
            raise ValueError(f"{cls.__name__}.{name}: op names may not start with '_' nor be one of: "
                             f"{', '.join(sorted(RESERVED))}")
        every = list(inspect.signature(spec.fn).parameters.values())
        if not every or every[0].kind not in (every[0].POSITIONAL_ONLY, every[0].POSITIONAL_OR_KEYWORD):
            raise ValueError(f"{cls.__name__}.{name}: an op is a method: its first parameter is self")
        params = every[1:]
        required = [p.name for p in params if p.default is p.empty
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if required:
            raise ValueError(f"{cls.__name__}.{name}: an op takes only self (it also needs: {', '.join(required)})")
    # An op overridden by a plain method in a subclass is no longer an op.
    return {name: spec for name, spec in found.items()
            if getattr(getattr(cls, name, None), "keyramp_op", None) is spec}


def operation(spec: OpSpec) -> Callable[[Any], Any]:
    """``spec`` as an entry of the cell's operation table (``workload/_ops.py``): ``fn(user_ops)``
    calls the undecorated method on the Locust user and returns its key for key sampling."""
    method = spec.fn

    def run(u: Any) -> Any:
        key = method(u.caller)
        return key if key is None or type(key) in (str, int) else as_key(key)

    run.__name__ = run.__qualname__ = spec.name
    return run
