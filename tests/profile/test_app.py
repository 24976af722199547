"""A profile's document shape against its stores, and the fields it replaces (one line each)."""

from __future__ import annotations

from typing import Any

import pytest

from keyramp.core._errors import UsageError
from keyramp.profile import parse_profile

DOC = {"room": {"type": "string", "values": 10}, "sent_at": "timestamp",
       "text": {"type": "string", "size": 2000, "indexed": False}}


def profile(backend: Any = "firestore", **workload: Any) -> dict[str, Any]:
    return {"name": "t", "backend": backend, "workload": {"document": DOC, **workload}}


def test_a_valid_shape_resolves_and_reaches_the_workload_settings() -> None:
    p = parse_profile(profile(["datastore", "firestore", "bigtable"], query={"field": "room", "value": "room0001"}))
    assert p.workload.document == DOC and p.data["workload"]["document"] == DOC


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (profile(value_size=64), "f.toml: workload.value_size: does not apply with workload.document"),
        (profile(indexed_fields=3), "f.toml: workload.indexed_fields: does not apply with workload.document"),
        (
            profile("datastore", document={**DOC, "text": {"type": "string", "size": 2000}}),
            "f.toml: workload.document: datastore: property 'text' is indexed and over 1,500 bytes",
        ),
        (
            profile("firestore", document={"tags": {"type": "array", "items": 50_000, "size": 2}}),
            "f.toml: workload.document: firestore: 50,000 index entries per document, over firestore's 40,000",
        ),
        (
            profile("firestore-datastore", document={"blob": {"type": "bytes", "size": 1 << 21, "indexed": False}}),
            "f.toml: workload.document: firestore-datastore: a record is ~2,097,",
        ),
        (profile("bigtable"), "f.toml: workload.document.text.indexed: does not apply to bigtable"),
        (
            profile(query={"field": "nope", "value": 1}),
            "f.toml: workload.query.field: 'nope' is not a workload.document property",
        ),
        (profile(query={"order_by": "-text"}), "f.toml: workload.query.order_by: 'text' has indexed = false"),
    ],
)
def test_bad_shapes_for_their_stores_are_one_line(raw: dict[str, Any], needle: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_profile(raw, source="f.toml")
    assert str(info.value).startswith(needle) and "\n" not in str(info.value), str(info.value)
