"""Each store writes records of a document shape in its own form (real emulators)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from keyramp.backends import Backend, QuerySpec
from keyramp.backends.bigtable._client import FAMILY, row_key
from keyramp.keys import RecordFactory, make_strategy, parse_shape

pytestmark = pytest.mark.emulator

SHAPE: dict[str, Any] = {
    "room": {"type": "string", "values": 4},
    "sent_at": "timestamp",
    "text": {"type": "string", "size": 40, "indexed": False},
    "tags": {"type": "array", "items": 3, "values": 6},
    "sender": {"type": "map", "fields": {"id": {"type": "int", "values": 3},
                                         "name": {"type": "string", "values": 3, "indexed": False}}},
}


def _records(n: int = 30) -> tuple[RecordFactory, list[tuple[str, dict[str, Any]]]]:
    keys = make_strategy("room(4, uniform)#timestamp", seed=5)
    f = RecordFactory(value_size=0, seed=5, shape=parse_shape(SHAPE), clock=keys.clock)
    return f, [(keys.key(i), f.record(i)) for i in range(n)]  # type: ignore[misc]


@pytest.mark.parametrize("name", ["datastore", "firestore-datastore"])
def test_datastore_excludes_what_the_shape_excludes(backend_factory: Callable[..., Backend], name: str) -> None:
    f, items = _records()
    b = backend_factory(name, unindexed=f.unindexed_fields())
    b.batch_write(items)
    rec = items[0][1]
    stored = b._client.get(b._key(items[0][0]))  # type: ignore[attr-defined]
    assert stored["sent_at"] == rec["sent_at"] and stored["tags"] == rec["tags"]
    assert dict(stored["sender"]) == rec["sender"]
    by = {p: sum(1 for _, r in items if (r["sender"][p.split(".")[1]] if "." in p else r[p]) == v)
          for p, v in (("room", rec["room"]), ("sender.id", rec["sender"]["id"]))}
    # Indexed properties (top level and a map's subfield) are found by queries ...
    assert b.query(QuerySpec(field="room", value=rec["room"], limit=100)) == by["room"]
    assert b.query(QuerySpec(field="sender.id", value=rec["sender"]["id"], limit=100)) == by["sender.id"]
    assert b.query(QuerySpec(field="tags", value=rec["tags"][0], limit=100)) >= 1  # each array element indexed
    # ... excluded ones are not (the store really received exclude_from_indexes).
    assert b.query(QuerySpec(field="text", value=rec["text"], limit=100)) == 0
    assert b.query(QuerySpec(field="sender.name", value=rec["sender"]["name"], limit=100)) == 0


def test_firestore_keeps_maps_and_arrays(backend_factory: Callable[..., Backend]) -> None:
    _, items = _records()
    b = backend_factory("firestore")
    b.batch_write(items)
    key, rec = items[3]
    doc = b._doc(key).get().to_dict()  # type: ignore[attr-defined]
    assert doc["sender"] == rec["sender"] and doc["tags"] == rec["tags"]
    assert isinstance(doc["sent_at"], datetime) and doc["sent_at"].timestamp() == rec["sent_at"].timestamp()
    same_room = sum(1 for _, r in items if r["room"] == rec["room"])
    assert b.query(QuerySpec(field="room", value=rec["room"], order_by="-sent_at", limit=100)) == same_room
    assert b.query(QuerySpec(field="sender.id", value=rec["sender"]["id"], limit=100)) == sum(
        1 for _, r in items if r["sender"]["id"] == rec["sender"]["id"])


def test_bigtable_columns_per_property(backend_factory: Callable[..., Backend]) -> None:
    _, items = _records()
    b = backend_factory("bigtable")
    b.batch_write(items)
    key, rec = items[2]
    row = b._table.read_row(row_key(key))  # type: ignore[attr-defined]
    cols = {c.qualifier.decode(): c.value for c in row.get_cells(FAMILY)}
    assert set(cols) == {"room", "sent_at", "text", "tags", "sender.id", "sender.name"}
    assert cols["room"] == rec["room"].encode()
    assert int.from_bytes(cols["sent_at"], "big") == int(rec["sent_at"].timestamp() * 1000)
    assert cols["tags"].split(b"\x1f") == [t.encode() for t in rec["tags"]]  # one packed cell (BP-SIZE-3)
    assert int.from_bytes(cols["sender.id"], "big") == rec["sender"]["id"]
