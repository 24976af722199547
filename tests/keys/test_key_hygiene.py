"""BP-KEY-10 and BP-SIZE-1..4 against the real emulators: every case shows the exact error.

Each test states what the user sees: the emulator's/client's own message, or keyramp's
validation (``key_problem``, lint). Where the emulator *accepts* something the real
service rejects or warns about, the test pins that down, so nobody reads "the emulator
took it" as "the service will".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from google.cloud.bigtable.data import RowMutationEntry, SetCell
from google.cloud.bigtable.data.row_filters import StripValueTransformerFilter
from google.cloud.firestore_v1.base_query import FieldFilter

from keyramp.backends import Backend
from keyramp.backends._errors import classify
from keyramp.keys._strategies import key_problem
from keyramp.profile._lint import lint_profile
from keyramp.profile._profile import parse_profile

pytestmark = pytest.mark.emulator

MiB = 1 << 20
#: Cells without their values: proves a big row exists without reading megabytes back.
_STRIP = StripValueTransformerFilter(True)
DATASTORE_LIKE = ["datastore", "firestore-datastore"]


def _error(fn: Callable[[], Any]) -> tuple[str, str]:
    """(error class as the recorder files it, message) of what ``fn`` raises."""
    with pytest.raises(Exception) as info:
        fn()
    return classify(info.value), str(info.value)


# -- Datastore and Firestore in Datastore mode --------------------------------------------------
@pytest.mark.parametrize("backend", DATASTORE_LIKE)
def test_numeric_id_zero_is_rejected_by_the_emulator(backend: str, backend_factory: Any) -> None:
    b = backend_factory(backend)
    cls, msg = _error(lambda: b.insert(0, {"v": 1}))
    assert cls == "INVALID_ARGUMENT" and "Key path id is invalid. Must not be zero." in msg
    assert key_problem(0, backend) == "numeric id 0 must be between 1 and 2^63-1"


@pytest.mark.parametrize("backend", DATASTORE_LIKE)
def test_negative_id_emulator_accepts_keyramp_rejects(backend: str, backend_factory: Any) -> None:
    # The emulator stores id -5; the service allocates and expects ids in [1, 2^63-1].
    b = backend_factory(backend)
    assert b.insert(-5, {"v": 1}) == -5 and b.read(-5)
    assert key_problem(-5, backend) == "numeric id -5 must be between 1 and 2^63-1"


@pytest.mark.parametrize("backend", DATASTORE_LIKE)
def test_reserved_names_are_rejected(backend: str, backend_factory: Any) -> None:
    b = backend_factory(backend)
    assert _error(lambda: b.insert("__x__", {"v": 1})) == (
        "INVALID_ARGUMENT", '400 The key path element name "__x__" is reserved.')
    assert _error(lambda: b.insert("p", {"__x__": 1})) == (
        "INVALID_ARGUMENT",
        '400 The property.name "__x__" is reserved.',
    )
    reserved_kind = backend_factory(backend, namespace="__kind__")
    assert _error(lambda: reserved_kind.insert("k", {"v": 1})) == (
        "INVALID_ARGUMENT", '400 The kind "__kind__" is reserved.')
    assert "reserved pattern __.*__" in (key_problem("__x__", backend) or "")


@pytest.mark.parametrize("backend", DATASTORE_LIKE)
def test_slash_and_dots_emulator_accepts_keyramp_rejects_slash(backend: str, backend_factory: Any) -> None:
    # Datastore key names are opaque strings: the emulator takes '/', '.', '..' in names and
    # '/' in kind names. BP-KEY-10 still says no '/' (it breaks Firestore-mode paths and
    # tooling), so keyramp's own key check rejects it before a run.
    b = backend_factory(backend)
    for name in ("a/b", ".", ".."):
        assert b.insert(name, {"v": 1}) == name and b.read(name)
    slash_kind = backend_factory(backend, namespace="kind/with/slash")
    assert slash_kind.insert("k", {"v": 1}) == "k"
    assert key_problem("a/b", backend) == "'/' in key name 'a/b'"
    # Firestore in Datastore mode forbids '.' and '..' as ids (the emulator does not check).
    expected = None if backend == "datastore" else "'.' is not a valid document id"
    assert key_problem(".", backend) == expected


@pytest.mark.parametrize("backend", DATASTORE_LIKE)
def test_dotted_property_name_is_accepted_as_a_literal_name(backend: str, backend_factory: Any) -> None:
    # The service and emulator take "a.b" as a property name; GQL and some tools treat the
    # dot as a path separator (BP-KEY-10: avoid it). Nothing rejects it: documented here.
    b = backend_factory(backend)
    b.insert("p", {"a.b": 1})
    assert b.read("p")


@pytest.mark.parametrize("backend", [*DATASTORE_LIKE, "firestore"])
def test_non_utf8_names_fail_in_the_client(backend: str, backend_factory: Any) -> None:
    b = backend_factory(backend)
    cls, msg = _error(lambda: b.insert("a\udcff", {"v": 1}))
    assert cls == "CLIENT_UnicodeEncodeError" and "surrogates not allowed" in msg
    assert key_problem("a\udcff", backend) == "key is not valid UTF-8"


# -- Firestore native -----------------------------------------------------------------------------
def test_firestore_document_id_hygiene(backend_factory: Any) -> None:
    b = backend_factory("firestore", timeout_s=30)
    assert _error(lambda: b.insert("a/b", {"v": 1})) == (
        "CLIENT_ValueError", "A document must have an even number of path elements")
    for bad in (".", ".."):
        cls, msg = _error(lambda bad=bad: b.insert(bad, {"v": 1}))
        assert cls == "INVALID_ARGUMENT" and f'contains a resource id "{bad}"' in msg
        assert key_problem(bad, "firestore") == f"{bad!r} is not a valid document id"
    assert _error(lambda: b.insert("__x__", {"v": 1})) == (
        "INVALID_ARGUMENT", '400 Resource id "__x__" is invalid because it is reserved.')
    cls, msg = _error(lambda: b.insert("x" * 1501, {"v": 1}))
    assert cls == "INVALID_ARGUMENT" and "longer than 1500 bytes" in msg
    assert key_problem("x" * 1501, "firestore") == "key is 1501 bytes, firestore allows 1500"
    # Numeric id 0 is just the document id "0" in Firestore: accepted.
    assert b.insert(0, {"v": 1}) == 0 and key_problem(0, "firestore") is None


def test_firestore_collection_id_hygiene(backend_factory: Any) -> None:
    cls, msg = _error(lambda: backend_factory("firestore", namespace="a/b"))
    assert (cls, msg) == ("CLIENT_ValueError", "A collection must have an odd number of path elements")
    reserved = backend_factory("firestore", namespace="__x__")
    assert _error(lambda: reserved.insert("k", {"v": 1})) == (
        "INVALID_ARGUMENT", '400 Collection id "__x__" is invalid because it is reserved.')


def test_firestore_dotted_field_is_literal_in_set_but_a_path_in_update_and_query(backend_factory: Any) -> None:
    b = backend_factory("firestore", timeout_s=30)
    b.insert("d", {"a.b": 1})
    doc = b._doc("d")
    doc.update({"a.b": 2})  # update() reads "a.b" as the path a -> b: a second, nested field
    assert doc.get().to_dict() == {"a.b": 1, "a": {"b": 2}}
    coll = b._coll
    assert len(list(coll.where(filter=FieldFilter("a.b", "==", 1)).stream())) == 0  # the nested one
    assert len(list(coll.where(filter=FieldFilter("`a.b`", "==", 1)).stream())) == 1  # back-quoted: literal


@pytest.mark.parametrize("name", ["a[b", "a]b", "a*b", "a`b"])
def test_firestore_special_field_names_store_but_cannot_be_queried_unquoted(name: str, backend_factory: Any) -> None:
    # The emulator stores them with set(); queries and update() need back-quoting.
    b = backend_factory("firestore", timeout_s=30)
    b.insert("d", {name: 1})
    assert b._doc("d").get().to_dict() == {name: 1}
    cls, msg = _error(lambda: list(b._coll.where(filter=FieldFilter(name, "==", 1)).stream()))
    assert cls == "INVALID_ARGUMENT" and f'Invalid property path "{name}"' in msg
    if name == "a`b":  # update() escapes a back-quote itself: `a\`b`
        b._doc("d").update({name: 2})
        assert b._doc("d").get().to_dict() == {name: 2}
    else:
        assert _error(lambda: b._doc("d").update({name: 2})) == (
            "CLIENT_ValueError", f"Invalid char in element with leading alpha: {name}")


def test_firestore_reserved_field_name(backend_factory: Any) -> None:
    b = backend_factory("firestore", timeout_s=30)
    assert _error(lambda: b.insert("d", {"__x__": 1})) == ("INVALID_ARGUMENT", "400 field name __x__ is reserved")


# -- Bigtable sizes (BP-SIZE-1..4) -----------------------------------------------------------------
def test_bigtable_keys_are_bytes_but_not_empty(backend_factory: Any) -> None:
    b = backend_factory("bigtable")
    b._table.mutate_row(b"\xff\xfe", [SetCell("cf", "q", b"1")])  # any bytes are a valid row key
    assert b._table.read_row(b"\xff\xfe") is not None
    assert _error(lambda: b._table.mutate_row(b"", [SetCell("cf", "q", b"1")])) == (
        "INVALID_ARGUMENT", "400 Row keys must be non-empty")
    assert key_problem("", "bigtable") == "empty key"
    assert key_problem("a/b", "bigtable") is None  # '/' is fine in a row key


def test_bigtable_cell_over_10_mib_emulator_accepts_lint_warns(backend_factory: Any) -> None:
    # The service recommends ≤ 10 MiB per cell (hard limit 100 MiB); the emulator has no limit.
    b = backend_factory("bigtable", timeout_s=60)
    b.insert("big", {"v": b"x" * (10 * MiB + 1)})
    # Writing works; reading it back hits the gRPC client's 4 MiB receive limit (the
    # emulator channel is built without max_receive_message_length): the exact error.
    cls, msg = _error(lambda: b._table.read_row(b"big"))
    assert cls == "RESOURCE_EXHAUSTED" and "Received message larger than max" in msg and "vs. 4194304" in msg
    assert b._table.read_row(b"big", row_filter=_STRIP) is not None  # the row is there
    found = _lint(value_size=10 * MiB + 1)
    assert ("BP-SIZE-1", "warning") in found
    assert "exceeds the recommended 10 MiB per cell" in found[("BP-SIZE-1", "warning")]


def test_bigtable_row_over_100_mib_emulator_accepts_lint_errors(backend_factory: Any) -> None:
    b = backend_factory("bigtable", timeout_s=120)
    chunk = b"y" * (10 * MiB)
    for i in range(11):  # 110 MiB in one row, 10 MiB per request
        b._table.mutate_row(b"huge", [SetCell("cf", f"q{i}", chunk)])
    cls, msg = _error(lambda: b._table.read_row(b"huge"))
    assert cls == "RESOURCE_EXHAUSTED" and "Received message larger than max" in msg
    row = b._table.read_row(b"huge", row_filter=_STRIP)
    assert row is not None and len(row.cells) == 11  # all eleven 10 MiB cells were stored
    found = _lint(value_size=100 * MiB + 1)
    assert "exceeds 100 MiB per row" in found[("BP-SIZE-1", "error")]


def test_bigtable_many_families(target_factory: Any) -> None:
    # ≤ ~100 families is the recommendation; the emulator creates 150 without complaint.
    from keyramp.backends.bigtable._client import admin_client

    target = target_factory("bigtable")
    with admin_client(target.endpoint) as admin:
        try:
            table = admin.create_table(parent=f"projects/{target.project}/instances/{target.instance}",
                                       table_id=target.namespace,
                                       table={"column_families": {f"f{i}": {} for i in range(150)}},
                                       retry=None, timeout=30)
            assert len(table.column_families) == 150
        finally:
            admin.delete_table(name=f"projects/{target.project}/instances/{target.instance}/tables/{target.namespace}")


def test_bigtable_unknown_family_error(backend_factory: Any) -> None:
    b = backend_factory("bigtable")
    cls, msg = _error(lambda: b._table.mutate_row(b"r", [SetCell("nofam", "q", b"1")]))
    # The emulator answers with gRPC UNKNOWN (the service says NOT_FOUND / INVALID_ARGUMENT).
    assert cls == "UNKNOWN" and 'unknown family "nofam"' in msg


def test_bigtable_one_byte_cells_vs_one_packed_cell(backend_factory: Any) -> None:
    b = backend_factory("bigtable")
    b._table.mutate_row(b"many", [SetCell("cf", f"q{i}", b"x") for i in range(1024)])
    b._table.mutate_row(b"packed", [SetCell("cf", "q", b"x" * 1024)])
    many, packed = b._table.read_row(b"many"), b._table.read_row(b"packed")
    assert len(many.cells) == 1024 and len(packed.cells) == 1
    # The payload is equal; every 1-byte cell also carries family, qualifier and timestamp.
    overhead = sum(len(c.qualifier) + 8 + len(c.family) for c in many.cells)
    assert overhead > 8 * 1024
    found = _lint(indexed_fields=100)
    assert ("BP-SIZE-3", "warning") in found


def test_bigtable_multi_row_batch_can_partly_fail(backend_factory: Any) -> None:
    b = backend_factory("bigtable")
    entries = [RowMutationEntry(b"ok1", [SetCell("cf", "q", b"1")]),
               RowMutationEntry(b"bad", [SetCell("nofam", "q", b"1")]),
               RowMutationEntry(b"ok2", [SetCell("cf", "q", b"1")])]
    cls, msg = _error(lambda: b._table.bulk_mutate_rows(entries))
    assert msg == "1 failed entry from 3 attempted."
    assert cls == "INTERNAL"  # the recorder files the first failed entry's status
    # Row-level atomicity only: the other two rows were written.
    assert b.read("ok1") and b.read("ok2") and not b.read("bad")


def _lint(**workload: Any) -> dict[tuple[str, str], str]:
    profile = parse_profile({"name": "size", "backend": "bigtable", "workload": workload})
    return {(f.rule, f.severity): f.message for f in lint_profile(profile)}


def test_nothing_leaks_backend_type(backend_factory: Any) -> None:
    assert isinstance(backend_factory("bigtable"), Backend)
