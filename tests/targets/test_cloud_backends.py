"""Per-cell clean-up (``Backend.cleanup`` / ``Backend.remaining``) against the real emulators.

A cloud run deletes what each cell wrote and verifies it is gone; the same code runs here
against the official emulators: write, clean up, nothing left, the neighbour untouched.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

import pytest

from keyramp.backends import BACKENDS, Backend, Target
from keyramp.core._errors import RunFailed
from keyramp.targets._cloud_target import cleanup_and_verify

pytestmark = pytest.mark.emulator

ALL = ["datastore", "firestore-datastore", "firestore", "bigtable"]
N = 120
#: A small clean-up page so a few pages are deleted (the real page is 500, the commit limit).
PAGE = 50


@pytest.fixture(autouse=True)
def _small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    from keyramp.backends.datastore import _client as datastore
    from keyramp.backends.firestore import _client as firestore

    monkeypatch.setattr(datastore, "_CLEANUP_PAGE", PAGE)
    monkeypatch.setattr(firestore, "_CLEANUP_PAGE", PAGE)


def _write(backend: Backend, n: int, *, prefix: str = "k") -> None:
    for start in range(0, n, 100):
        backend.batch_write([(f"{prefix}{i:05d}", {"n": i, "payload": b"x" * 16})
                             for i in range(start, min(start + 100, n))])


@pytest.mark.parametrize("name", ALL)
def test_cleanup_deletes_the_cells_data_and_leaves_other_namespaces(
        backend_factory: Callable[..., Backend], name: str) -> None:
    mine = backend_factory(name)
    other = backend_factory(name)
    _write(mine, N)
    _write(other, 30)
    cls = BACKENDS[name]
    assert cls.remaining(mine.target) == N
    assert cls.cleanup(mine.target) == N
    assert cls.remaining(mine.target) == 0
    assert cls.remaining(other.target) == 30  # another run's/cell's data is untouched
    assert other.read("k00029") is True


def test_datastore_cleanup_covers_entity_group_children(backend_factory: Callable[..., Backend]) -> None:
    b = backend_factory("datastore")
    b.batch_write([((p, c), {"n": c}) for p in range(1, 4) for c in range(1, 6)] + [("root", {"n": 0})])
    assert BACKENDS["datastore"].remaining(b.target) == 16
    assert BACKENDS["datastore"].cleanup(b.target) == 16
    assert BACKENDS["datastore"].remaining(b.target) == 0


@pytest.mark.parametrize("name", ALL)
def test_cleanup_of_a_namespace_never_written_is_zero(target_factory: Callable[..., Target], name: str) -> None:
    target = target_factory(name)
    assert BACKENDS[name].cleanup(target) == 0
    assert BACKENDS[name].remaining(target) == 0


def test_cleanup_and_verify_reports_counts(backend_factory: Callable[..., Backend]) -> None:
    b = backend_factory("bigtable")
    _write(b, 25)
    result = cleanup_and_verify(BACKENDS["bigtable"], b.target)
    assert result == {"namespace": b.target.namespace, "deleted": 25, "remaining": 0}
    assert BACKENDS["bigtable"].remaining(b.target) == 0


class _Stubborn(Backend):
    """A backend whose deletes never take: the verification must fail the run, one line."""

    name = "stubborn"
    calls = 0

    @classmethod
    def cleanup(cls, target: Target) -> int:
        cls.calls += 1
        return 3

    @classmethod
    def remaining(cls, target: Target) -> int:
        return 3


def test_cleanup_and_verify_fails_when_data_remains() -> None:
    target = Target(backend="datastore", project="keyramp-test", endpoint="127.0.0.1:9",
                    namespace=f"kr_{uuid.uuid4().hex[:8]}")
    with pytest.raises(RunFailed) as exc:
        cleanup_and_verify(_Stubborn, replace(target), attempts=2, pause_s=0)  # type: ignore[type-abstract]
    assert _Stubborn.calls == 2
    message = str(exc.value)
    assert "\n" not in message
    assert message == (f"clean-up of {target.namespace} not verified: 3 entities/rows remain after 2 attempts "
                       f"(delete them by hand: see docs/cloud.md)")
