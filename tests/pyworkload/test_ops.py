"""``@keyramp.op``: weights, the plain-Locust wrapper, inferred inserts, ops that are not methods.

Plain classes stand in for the store users here (importing those pulls in Locust, which
monkey-patches the test process); ``collect_ops`` reads any class.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest

from keyramp.pyworkload import RESERVED, collect_ops, op


class Shop:
    @op(weight=3)
    def buy(self) -> Any:
        return self.keys.new()

    @op
    def browse(self) -> Any:
        return self.keys.existing()

    @op(weight=2, inserts=True)
    def restock(self, amount: int = 5) -> Any:
        return self.helper()

    def helper(self) -> str:
        return "k"


def test_collect_weights_names_and_inserts() -> None:
    ops = collect_ops(Shop)
    assert list(ops) == ["buy", "browse", "restock"]
    assert {n: o.weight for n, o in ops.items()} == {"buy": 3, "browse": 1, "restock": 2}
    # Inferred from the body (self.keys.new()), or declared.
    assert {n: o.inserts for n, o in ops.items()} == {"buy": True, "browse": False, "restock": True}
    assert Shop.buy.locust_task_weight == 3 and Shop.buy.__name__ == "buy"


def test_subclass_inherits_and_overrides() -> None:
    class Bigger(Shop):
        def browse(self) -> Any:  # no longer an op
            return None

        @op(weight=5)
        def sell(self) -> Any:
            return None

    assert {n: o.weight for n, o in collect_ops(Bigger).items()} == {"buy": 3, "restock": 2, "sell": 5}


def test_plain_locust_wrapper_reports_to_locust_events() -> None:
    fired: list[dict[str, Any]] = []
    user_errors: list[dict[str, Any]] = []
    user = SimpleNamespace(store="firestore", environment=SimpleNamespace(events=SimpleNamespace(
        request=SimpleNamespace(fire=lambda **kw: fired.append(kw)),
        user_error=SimpleNamespace(fire=lambda **kw: user_errors.append(kw)))))

    class Flaky:
        @op
        def fail(self) -> None:
            raise ValueError("nope")

        @op
        def fine(self) -> str:
            return "k"

        @op
        def refused(self) -> None:
            from google.api_core import exceptions as gexc

            raise gexc.Aborted("a store status: measured, not a bug")

    Flaky.fail(user)  # the exception is Locust's failure, not the greenlet's
    Flaky.fine(user)
    Flaky.refused(user)
    assert [(f["name"], f["request_type"], type(f["exception"]).__name__) for f in fired] == [
        ("fail", "firestore", "ValueError"), ("fine", "firestore", "NoneType"), ("refused", "firestore", "Aborted")]
    # The workload's own exception is also Locust's user error (its exceptions CSV), with its traceback.
    assert [(type(e["exception"]).__name__, e["user_instance"] is user) for e in user_errors] == [("ValueError", True)]
    assert user_errors[0]["tb"] is user_errors[0]["exception"].__traceback__
    assert all(f["response_time"] >= 0 for f in fired)
    # keyramp run calls the undecorated method: its return value is the key.
    assert collect_ops(Flaky)["fine"].fn(user) == "k"


@pytest.mark.parametrize(("build", "needle"), [
    (lambda: op(staticmethod(lambda: None)), "decorates a method"),
    (lambda: op(weight=0), "weight must be an integer ≥ 1"),
    (lambda: op(weight=1.5), "weight must be an integer ≥ 1"),
    (lambda: op(property(lambda self: 1)), "decorates a method"),
])
def test_decorating_what_is_not_a_method_fails(build: Any, needle: str) -> None:
    with pytest.raises(TypeError, match=needle):
        build()


def test_async_op_fails() -> None:
    with pytest.raises(TypeError, match="not async"):
        @op
        async def later(self: Any) -> None:
            return None


def _cls(**attrs: Any) -> type:
    return type("W", (), attrs)


def _fn(name: str, code: str) -> Any:
    scope: dict[str, Any] = {}
    exec(code, scope)
    return scope[name]


@pytest.mark.parametrize(("attrs", "needle"), [
    ({"send": op(_fn("send", "def send(self, room): pass"))}, "an op takes only self (it also needs: room)"),
    ({"ping": op(_fn("ping", "def ping(): pass"))}, "its first parameter is self"),
    ({"alias": op(_fn("f", "def f(self): pass"))}, "must be defined with def in the class"),
    ({"client": op(_fn("client", "def client(self): pass"))}, "op names may not"),
    ({"_hidden": op(_fn("_hidden", "def _hidden(self): pass"))}, "op names may not"),
])
def test_ops_that_cannot_run_are_refused(attrs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=re.escape(needle)):
        collect_ops(_cls(**attrs))


def test_reserved_names_cover_what_keyramp_sets() -> None:
    assert {"client", "table", "namespace", "keys", "document", "no_retry"} <= RESERVED
