"""What a Python workload's official client really sent, as the store sees it (``backends._capture``).

A Python workload's user gets a client whose channel keeps each request (``Target.capture``); the
store's decoder (``StoreSpec.capture_decoder``) turns one operation's requests into the keys it
touched, the kind of access and the index entries a write creates: what the forecast projects
(docs/workloads.md, docs/keyspace-model.md "The one projection"). Here each store's official
client does one call of each kind on its emulator, and the decoded access must be that call's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from keyramp.backends import BACKENDS, Target, spec_for
from keyramp.backends._capture import Capture, CapturedAccess
from keyramp.core._types import INDEX_FIELD_SEP, key_sort_text

pytestmark = pytest.mark.emulator


@pytest.fixture
def captured(target_factory: Callable[..., Target]) -> Iterator[Callable[[str], tuple[Any, Callable[[], list]]]]:
    """``captured(store)`` -> (the backend a workload user gets, ``decoded()``: what its calls since the last
    ``decoded()`` touched)."""
    made: list[Any] = []

    def make(store: str) -> tuple[Any, Callable[[], list[CapturedAccess]]]:
        capture = Capture()
        target = target_factory(store, capture=capture)
        BACKENDS[store].prepare(target)
        backend = BACKENDS[store](target)
        made.append(backend)
        decoder = spec_for(store).capture_decoder()
        assert decoder is not None
        return backend, lambda: decoder(capture.take(), target.namespace)

    yield make
    for backend in made:
        backend.close()


def _fields(access: CapturedAccess) -> dict[str, list[str]]:
    """An access's index entries by field: the value texts, in order."""
    out: dict[str, list[str]] = {}
    for entry in access.index:
        field, rest = entry.split(INDEX_FIELD_SEP, 1)
        value, key = rest.rsplit("\x00", 1)
        assert key == access.key
        out.setdefault(field, []).append(value)
    return out


def test_firestore_writes_their_kind_and_every_indexed_field(captured: Callable[..., Any]) -> None:
    from google.cloud.firestore import SERVER_TIMESTAMP, Increment

    backend, decoded = captured("firestore")
    doc = backend.client.collection(backend.target.namespace).document("d1")
    doc.create({"n": 7, "tags": ["x", "y"], "meta": {"city": "Oslo"}, "at": SERVER_TIMESTAMP})
    (created,) = decoded()
    assert (created.kind, created.key) == ("insert", "d1")
    fields = _fields(created)
    assert fields["n"] == [key_sort_text(7)] and fields["tags"] == ["x", "y"] and fields["meta.city"] == ["Oslo"]
    (stamp,) = fields["at"]  # the request's time: where a growing field's index entry lands
    assert abs(int(stamp) / 1000 - datetime.now(UTC).timestamp()) < 60
    doc.set({"n": 8})
    doc.update({"n": Increment(1)})
    doc.set({"n": Increment(1)}, merge=True)
    doc.get()
    doc.delete()
    assert [(a.kind, a.key) for a in decoded()] == [
        ("upsert", "d1"), ("write", "d1"), ("transform", "d1"), ("read", "d1"), ("delete", "d1")]


def test_datastore_writes_their_kind_and_leave_out_what_is_excluded(captured: Callable[..., Any]) -> None:
    from google.cloud import datastore

    backend, decoded = captured("datastore")
    client = backend.client
    entity = datastore.Entity(client.key(backend.target.namespace, "e1"), exclude_from_indexes=("payload",))
    entity.update({"added_at": datetime(2024, 5, 1, tzinfo=UTC), "payload": "big", "n": 3})
    client.put(entity)
    (put,) = decoded()
    assert (put.kind, put.key) == ("upsert", key_sort_text("e1"))
    assert _fields(put) == {"added_at": [f"{int(datetime(2024, 5, 1, tzinfo=UTC).timestamp() * 1000):020d}"],
                            "n": [key_sort_text(3)]}
    child = datastore.Entity(client.key("Parent", "p1", backend.target.namespace, "c1"))
    child.update({"x": 1})
    client.put(child)
    client.get(entity.key)
    client.delete(entity.key)
    assert [(a.kind, a.key) for a in decoded()] == [
        ("upsert", key_sort_text(("p1", "c1"))), ("read", key_sort_text("e1")), ("delete", key_sort_text("e1"))]


def test_bigtable_rows_by_kind_and_no_index(captured: Callable[..., Any]) -> None:
    from google.cloud.bigtable.data import DeleteAllFromRow, SetCell
    from google.cloud.bigtable.data.read_modify_write_rules import IncrementRule

    backend, decoded = captured("bigtable")
    table = backend.table
    table.mutate_row(b"r#1", SetCell("cf", b"q", b"v"))
    table.read_modify_write_row(b"counter", IncrementRule("cf", b"n", 1))
    table.read_row(b"r#1")
    table.mutate_row(b"r#1", DeleteAllFromRow())
    out = decoded()
    assert [(a.kind, a.key, a.index) for a in out] == [
        ("upsert", "r#1", ()), ("transform", "counter", ()), ("read", "r#1", ()), ("delete", "r#1", ())]
