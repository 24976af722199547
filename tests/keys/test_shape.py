"""Document shape: records of the application's shape, its size and index fan-out, bad input."""

from __future__ import annotations

import collections
from datetime import UTC, datetime
from typing import Any

import pytest

from keyramp.core._errors import UsageError
from keyramp.keys import RecordFactory, make_strategy, parse_shape, shape_problem

CHAT: dict[str, Any] = {
    "room": {"type": "string", "values": 200},
    "sent_at": "timestamp",
    "text": {"type": "string", "size": 120, "indexed": False},
    "tags": {"type": "array", "of": "string", "items": 3, "values": 50},
    "sender": {"type": "map", "fields": {"id": "int", "name": {"type": "string", "size": 20, "indexed": False}}},
    "blob": {"type": "bytes", "size": 64, "indexed": False},
    "score": "float",
    "read": "bool",
    "level": {"type": "int", "values": 5},
}


def factory(shape: dict[str, Any] = CHAT, seed: int = 1, **kw: Any) -> RecordFactory:
    return RecordFactory(value_size=0, seed=seed, shape=parse_shape(shape), **kw)


def test_records_have_the_shape_types_and_sizes() -> None:
    chat = factory()  # one factory: building one compiles its value pools (~5 ms)
    records = [chat.record(i) for i in range(5000)]
    r = records[7]
    assert set(r) == set(CHAT)
    assert isinstance(r["sent_at"], datetime) and r["sent_at"].tzinfo is UTC
    assert isinstance(r["text"], str) and len(r["text"]) == 120
    assert isinstance(r["blob"], bytes) and len(r["blob"]) == 64
    assert isinstance(r["tags"], list) and len(r["tags"]) == 3
    assert set(r["sender"]) == {"id", "name"} and len(r["sender"]["name"]) == 20
    assert isinstance(r["score"], float) and 0 <= r["score"] < 1000
    assert isinstance(r["read"], bool) and isinstance(r["level"], int)
    # Cardinalities: `values` distinct values, drawn evenly; unbounded ones vary per record.
    rooms = collections.Counter(x["room"] for x in records)
    assert len(rooms) == 200 and all(k.startswith("room") for k in rooms)
    assert max(rooms.values()) < 3 * min(rooms.values())
    assert len({t for x in records for t in x["tags"]}) == 50
    assert set(x["level"] for x in records) == set(range(5))
    assert len({x["text"] for x in records}) > 4000 and len({x["sender"]["id"] for x in records}) == 5000
    assert 0.4 < sum(x["read"] for x in records) / 5000 < 0.6


def test_timestamps_follow_the_key_strategy_clock() -> None:
    keys = make_strategy("timestamp", params={"interval_ms": 250})
    f = factory({"sent_at": "timestamp"}, clock=keys.clock)
    for i in (0, 1, 999):
        assert int(f.record(i)["sent_at"].timestamp() * 1000) == int(keys.key(i))  # type: ignore[arg-type]


def test_deterministic_per_seed() -> None:
    assert factory(seed=3).record(11) == factory(seed=3).record(11)
    assert factory(seed=3).record(11)["text"] != factory(seed=4).record(11)["text"]


def test_size_follows_firestores_worked_example() -> None:
    """firebase.google.com/docs/firestore/storage-size: users/jeff/tasks/my_task_id with these four
    fields is 147 bytes, of which 44 are the document name (not part of the shape)."""
    shape = parse_shape({"type": {"type": "string", "size": 8}, "done": "bool", "priority": "int",
                         "description": {"type": "string", "size": 21}})
    assert shape.size_bytes() == 147 - 44


def test_index_entries_and_exclusions() -> None:
    shape = parse_shape(CHAT)
    # Design constraint (documented formula): 2 per indexed scalar, 1 per array element,
    # map subfields on their own: room, sent_at, score, read, level, sender.id = 6 × 2, tags 3.
    assert shape.index_entries() == 15
    assert shape.unindexed() == {"text", "sender.name", "blob"}
    assert shape.monotonic_indexed() == ["sent_at"]
    assert factory().unindexed_fields() == {"text", "sender.name", "blob"}
    wide = parse_shape({"tags": {"type": "array", "items": 45_000, "size": 4}})
    assert "40,000" in str(problem(wide, "firestore")) and problem(wide, "bigtable") is None
    big = parse_shape({"text": {"type": "string", "size": 2000}})
    assert "1,500" in str(problem(big, "datastore")) and problem(big, "firestore") is None
    huge = parse_shape({"blob": {"type": "bytes", "size": 2 << 20, "indexed": False}})
    assert "1,048,572" in str(problem(huge, "firestore-datastore")) and problem(huge, "bigtable") is None


def problem(shape: Any, store: str) -> str | None:
    """The store spec's verdict on ``shape`` (its ``RecordLimits``)."""
    from keyramp.backends import spec_for

    return shape_problem(shape, spec_for(store).records, store)


@pytest.mark.parametrize(
    ("shape", "needle"),
    [
        ({"x": "text"}, "workload.document.x.type: one of string"),
        ({"x": {"type": "int", "size": 3}}, "workload.document.x.size: does not apply to int"),
        ({"x": {"type": "string", "values": 3, "size": 4}}, "workload.document.x.size: with values"),
        ({"x": {"type": "array", "of": "map"}}, "workload.document.x.of: array elements"),
        ({"x": {"type": "array", "items": -1}}, "workload.document.x.items: must be an integer ≥ 0"),
        ({"x": {"type": "map", "fields": {"a.b": "int"}}}, "workload.document.x.fields.a.b: property names"),
        ({"x": {"type": "map"}}, "workload.document.x.fields: a table"),
        ({"x": {"type": "bool", "indexed": "no"}}, "workload.document.x.indexed: true or false"),
        ({"__x__": "int"}, "property names"),
        ({"x": 3}, "workload.document.x: a type name"),
    ],
)
def test_bad_shapes_are_one_line(shape: dict[str, Any], needle: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_shape(shape)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_shape_replaces_generated_fields() -> None:
    with pytest.raises(UsageError, match="replaces indexed_value"):
        RecordFactory(value_size=0, indexed_fields=3, shape=parse_shape(CHAT))
