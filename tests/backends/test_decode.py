"""The stores' request decoders (``<store>/_decode.py``): what the store proxy offers the store
model for a request, read from the official protobuf messages the clients send."""

from __future__ import annotations

import datetime as dt
from typing import Any

from google.cloud.bigtable_v2.types import bigtable as bt
from google.cloud.bigtable_v2.types import data as btdata
from google.cloud.datastore_v1.types import datastore as ds
from google.cloud.datastore_v1.types import entity as dse
from google.cloud.firestore_v1.types import common as fscommon
from google.cloud.firestore_v1.types import document as fsdoc
from google.cloud.firestore_v1.types import firestore as fs
from google.cloud.firestore_v1.types import write as fswrite
from google.protobuf import timestamp_pb2

from keyramp.backends import spec_for
from keyramp.backends._fidelity import DecodeOptions, sortable_double, sortable_int
from keyramp.storemodel import StoreOp
from keyramp.targets._proxy_model import MODEL_TYPES

DB = "projects/p/databases/(default)"


def _decode(store: str, method: str, request: Any, **options: Any) -> StoreOp:
    proxy = spec_for(store).proxy
    assert proxy is not None
    rpc = proxy.rpcs(DecodeOptions(**options), MODEL_TYPES)[method]
    assert rpc.decode is not None
    op = rpc.decode(type(request).pb(request).SerializeToString() if hasattr(type(request), "pb")
                    else request.SerializeToString())
    assert isinstance(op, StoreOp)
    return op


def _fs_value(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        ts = timestamp_pb2.Timestamp()
        ts.FromDatetime(v)
        return fsdoc.Value(timestamp_value=ts)
    if isinstance(v, list):
        return fsdoc.Value(array_value=fsdoc.ArrayValue(values=[_fs_value(x) for x in v]))
    if isinstance(v, dict):
        return fsdoc.Value(map_value=fsdoc.MapValue(fields={k: _fs_value(x) for k, x in v.items()}))
    if isinstance(v, str):
        return fsdoc.Value(string_value=v)
    return fsdoc.Value(integer_value=v)


def _fs_commit(*docs: tuple[str, dict[str, Any]], mask: list[str] | None = None) -> Any:
    writes = []
    for name, fields in docs:
        write = fswrite.Write(update=fsdoc.Document(name=f"{DB}/documents/{name}",
                                                    fields={k: _fs_value(v) for k, v in fields.items()}))
        if mask is not None:
            write.update_mask = fscommon.DocumentMask(field_paths=mask)
        writes.append(write)
    return fs.CommitRequest(database=DB, writes=writes)


def test_firestore_write_loads_its_document_and_one_index_entry_per_indexed_value() -> None:
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    op = _decode("firestore", "/google.firestore.v1.Firestore/Commit", _fs_commit(
        ("orders/o1", {"created": at, "tags": ["a", "b"], "who": {"id": 7, "name": "x"}, "note": "n"})),
        exempt=frozenset({"note"}))
    assert op.kind == "write" and op.units == (b"orders\0o1",)
    spaces = sorted(a.space for a in op.accesses)
    assert spaces == ["documents", "index:orders.created", "index:orders.tags", "index:orders.tags",
                      "index:orders.who.id", "index:orders.who.name"]  # note is exempt; one entry per element
    assert all(a.write and a.rows == 1 for a in op.accesses)


def test_firestore_index_keys_keep_value_order_so_a_timestamp_appends() -> None:
    base = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    keys = []
    for i in (0, 1, 2, 10, 11):  # written in time order, from documents named in reverse
        op = _decode("firestore", "/google.firestore.v1.Firestore/Commit",
                     _fs_commit((f"c/{99 - i:02d}", {"t": base + dt.timedelta(milliseconds=i)})))
        keys.append(next(a.key for a in op.accesses if a.space == "index:c.t"))
    assert keys == sorted(keys)
    assert sortable_double(-2.5) < sortable_double(-1) < sortable_double(0) < sortable_double(3) < sortable_double(1e9)
    assert sortable_int(-5) < sortable_int(0) < sortable_int(2**62)


def test_firestore_masked_merge_indexes_only_the_masked_fields_and_a_bare_transform_is_a_transform() -> None:
    op = _decode("firestore", "/google.firestore.v1.Firestore/Commit",
                 _fs_commit(("c/d", {"a": 1, "b": 2}), mask=["a"]))
    assert sorted(a.space for a in op.accesses) == ["documents", "index:c.a"]
    increment = fswrite.Write(update=fsdoc.Document(name=f"{DB}/documents/counters/c0"),
                              update_mask=fscommon.DocumentMask(),
                              update_transforms=[fswrite.DocumentTransform.FieldTransform(
                                  field_path="n", increment=fsdoc.Value(integer_value=1))])
    op = _decode("firestore", "/google.firestore.v1.Firestore/Commit", fs.CommitRequest(database=DB,
                                                                                       writes=[increment]))
    assert op.kind == "transform" and op.units == (b"counters\0c0",)


def test_firestore_batch_get_reads_each_document() -> None:
    op = _decode("firestore", "/google.firestore.v1.Firestore/BatchGetDocuments", fs.BatchGetDocumentsRequest(
        database=DB, documents=[f"{DB}/documents/c/a", f"{DB}/documents/c/b"]))
    assert op.kind == "read" and [(a.key, a.write) for a in op.accesses] == [(b"c\0a", False), (b"c\0b", False)]


def _ds_entity(path: list[tuple[str, int | str]], **props: Any) -> Any:
    elements = [dse.Key.PathElement(kind=k, id=v) if isinstance(v, int) else dse.Key.PathElement(kind=k, name=v)
                for k, v in path]
    values = {}
    for name, (value, excluded) in props.items():
        values[name] = dse.Value(string_value=value, exclude_from_indexes=excluded)
    return dse.Entity(key=dse.Key(partition_id=dse.PartitionId(project_id="p"), path=elements), properties=values)


def test_datastore_units_are_entity_groups_on_datastore_and_entities_in_datastore_mode() -> None:
    request = ds.CommitRequest(project_id="p", mode=ds.CommitRequest.Mode.NON_TRANSACTIONAL, mutations=[
        ds.Mutation(upsert=_ds_entity([("Parent", 1), ("Child", 5)], a=("x", False), b=("y", True))),
        ds.Mutation(upsert=_ds_entity([("Parent", 1), ("Child", 6)], a=("z", False)))])
    legacy = _decode("datastore", "/google.datastore.v1.Datastore/Commit", request)
    per_entity = _decode("firestore-datastore", "/google.datastore.v1.Datastore/Commit", request)
    assert len(legacy.units) == 1  # one entity group: the root, Parent 1
    assert len(per_entity.units) == 2
    # b is excluded from indexes: one index entry per entity, on a
    assert sorted(a.space for a in legacy.accesses) == ["documents", "documents", "index:Child.a", "index:Child.a"]


def test_datastore_ids_sort_before_names_and_numerically() -> None:
    keys = []
    for ident in (2, 10, 300, "a", "b"):
        op = _decode("datastore", "/google.datastore.v1.Datastore/Lookup", ds.LookupRequest(
            project_id="p", keys=[_ds_entity([("K", ident)]).key]))
        keys.append(op.accesses[0].key)
    assert keys == sorted(keys) and op.kind == "read"


def test_bigtable_rows_and_ranges() -> None:
    table = "projects/p/instances/i/tables/t"
    op = _decode("bigtable", "/google.bigtable.v2.Bigtable/MutateRows", bt.MutateRowsRequest(
        table_name=table, entries=[bt.MutateRowsRequest.Entry(row_key=k, mutations=[btdata.Mutation(
            set_cell=btdata.Mutation.SetCell(family_name="cf", column_qualifier=b"q", value=b"v"))])
            for k in (b"r1", b"r2")]))
    assert op.units == (b"t\0r1", b"t\0r2") and all(a.space == "rows" for a in op.accesses)
    scan = _decode("bigtable", "/google.bigtable.v2.Bigtable/ReadRows", bt.ReadRowsRequest(
        table_name=table, rows=btdata.RowSet(row_ranges=[btdata.RowRange(start_key_closed=b"r5")]), rows_limit=20))
    assert [(a.key, a.rows, a.write) for a in scan.accesses] == [(b"t\0r5", 20, False)]
    rmw = _decode("bigtable", "/google.bigtable.v2.Bigtable/ReadModifyWriteRow", bt.ReadModifyWriteRowRequest(
        table_name=table, row_key=b"c", rules=[btdata.ReadModifyWriteRule(family_name="cf", column_qualifier=b"n",
                                                                          increment_amount=1)]))
    assert rmw.units == (b"t\0c",)
