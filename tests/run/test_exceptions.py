"""The workload's own exceptions (``run/_exceptions.py``): what counts as one, the user's frames,
and the warm-up tally that makes a broken workload fail fast."""

from __future__ import annotations

import json

import grpc
from google.api_core import exceptions as gexc

from keyramp.backends._errors import classify, raised_by_workload
from keyramp.run._exceptions import WarmupTally, example_of


def _raised(fn) -> BaseException:  # type: ignore[no-untyped-def]
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - any exception under test
        return exc
    raise AssertionError("did not raise")


def _bug() -> None:
    {}["missing"]


def test_store_statuses_are_not_the_workloads_exceptions() -> None:
    wrapped = _raised(lambda: _reraise_as_value_error(gexc.Aborted("contention")))
    for exc in (gexc.Aborted("contention"), gexc.RetryError("gave up", None), wrapped, _raised(_bug)):
        cls = classify(exc)
        assert raised_by_workload(cls, exc) is (exc is not wrapped and not isinstance(exc, gexc.GoogleAPIError)), exc
    assert classify(wrapped) == "ABORTED" and example_of("op", "ABORTED", wrapped) is None
    assert not raised_by_workload("CLIENT_RpcError", grpc.RpcError())


def _reraise_as_value_error(cause: BaseException) -> None:
    raise ValueError("commit failed") from cause  # as Firestore wraps an aborted commit


def test_an_example_names_the_users_frames_and_where_a_library_raised_it() -> None:
    own = example_of("place", "CLIENT_KeyError", _raised(_bug))
    assert own is not None and own.message == "KeyError: 'missing'"
    assert [f.split(" in ")[1].split(":")[0] for f in own.traceback] == ["_raised", "_bug"]  # outermost first
    assert own.traceback[-1].endswith('in _bug: {}["missing"]')
    assert own.where == own.traceback[-1].split(" in ")[0] and own.where.startswith(__file__)
    lib = example_of("place", "CLIENT_JSONDecodeError", _raised(lambda: json.loads("{")))
    assert lib is not None and lib.traceback[-1].startswith("raised in json/decoder.py:")
    assert any(f.startswith(__file__) for f in lib.traceback[:-1])  # the user's line that called it
    assert lib.where.startswith(__file__)
    long = example_of("op", "CLIENT_ValueError", ValueError("x" * 2000))
    assert long is not None and len(long.message) < 600 and long.message.endswith("…")


def test_warmup_tally_fails_only_when_every_operation_raised_the_workloads_own() -> None:
    worker_a, worker_b = WarmupTally(), WarmupTally()
    for _ in range(3):
        worker_a.failed("place", _raised(_bug), python_workload=True)
    assert worker_a.failure() is not None and worker_a.failure().ops == 3  # type: ignore[union-attr]
    worker_b.failed("place", gexc.Aborted("contention"), python_workload=True)  # a store status: not a bug
    merged = WarmupTally.merged([WarmupTally.from_wire(json.loads(json.dumps(t.to_wire()))) for t in (worker_a,
                                                                                                    worker_b)])
    assert (merged.ops, merged.workload_errors, merged.failure()) == (4, 3, None)
    ok = WarmupTally()
    ok.failed("place", _raised(_bug), python_workload=True)
    ok.ops += 1  # one succeeded
    assert ok.failure() is None
    builtin = WarmupTally()
    builtin.failed("insert", _raised(_bug), python_workload=False)  # keyramp's own ops never fail fast
    assert builtin.failure() is None and WarmupTally().failure() is None
