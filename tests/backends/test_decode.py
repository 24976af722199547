"""The stores' request decoders (``<store>/_decode.py``): what the store proxy offers the store
model for a request, read from the official protobuf messages the clients send."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from google.cloud.bigtable_v2.types import bigtable as bt
from google.cloud.bigtable_v2.types import data as btdata
from google.cloud.datastore_v1.types import datastore as ds
from google.cloud.datastore_v1.types import entity as dse
from google.cloud.firestore_v1.types import common as fscommon
from google.cloud.firestore_v1.types import document as fsdoc
from google.cloud.firestore_v1.types import firestore as fs
from google.cloud.firestore_v1.types import write as fswrite
from google.protobuf import timestamp_pb2
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from keyramp.backends import spec_for
from keyramp.backends._fidelity import DecodeOptions, sortable_double, sortable_int
from keyramp.storemodel import Decision, StoreOp
from keyramp.targets._proxy import StoreProxy
from keyramp.targets._proxy_model import MODEL_TYPES, make_model
from keyramp.targets._proxy_stats import ProxyConfig

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


# -- fuzz: any message the official types can carry, and bytes that are none -------------------

_REQUEST_TYPES = {"firestore": fs, "datastore": ds, "firestore-datastore": ds, "bigtable": bt}
_INT_BOUNDS = {FieldDescriptor.TYPE_INT32: 31, FieldDescriptor.TYPE_SINT32: 31, FieldDescriptor.TYPE_SFIXED32: 31,
               FieldDescriptor.TYPE_INT64: 63, FieldDescriptor.TYPE_SINT64: 63, FieldDescriptor.TYPE_SFIXED64: 63}
_UINT_BOUNDS = {FieldDescriptor.TYPE_UINT32: 32, FieldDescriptor.TYPE_FIXED32: 32, FieldDescriptor.TYPE_UINT64: 64,
                FieldDescriptor.TYPE_FIXED64: 64}
#: Names that look like the stores' own (so decoders get past their parsing), and anything else.
_NAMES = st.one_of(st.text(max_size=12), st.sampled_from([f"{DB}/documents/c/d", f"{DB}/documents/c/d/s/e",
                                                          "projects/p/instances/i/tables/t", "c", ""]))


def _scalar(field: Any) -> st.SearchStrategy[Any]:
    t = field.type
    if t in _INT_BOUNDS:
        return st.integers(-(2 ** _INT_BOUNDS[t]), 2 ** _INT_BOUNDS[t] - 1)
    if t in _UINT_BOUNDS:
        return st.integers(0, 2 ** _UINT_BOUNDS[t] - 1)
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(width=32 if t == FieldDescriptor.TYPE_FLOAT else 64)
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t == FieldDescriptor.TYPE_STRING:
        return _NAMES
    if t == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=12)
    if t == FieldDescriptor.TYPE_ENUM:
        return st.sampled_from([v.number for v in field.enum_type.values])
    raise AssertionError(field.full_name)


@st.composite
def _message(draw: Any, cls: Any, depth: int = 0) -> Any:
    """A message of ``cls`` (a protobuf class): each field set or not, oneofs one arm, depth-limited."""
    message = cls()
    for field in cls.DESCRIPTOR.fields:
        if depth > 3 or not draw(st.booleans()):
            continue
        if field.containing_oneof is not None and message.WhichOneof(field.containing_oneof.name):
            continue
        many = field.is_repeated
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            sub = field.message_type._concrete_class
            if field.message_type.GetOptions().map_entry:
                key, value = sub.DESCRIPTOR.fields_by_name["key"], sub.DESCRIPTOR.fields_by_name["value"]
                target = getattr(message, field.name)
                for k in draw(st.lists(_scalar(key), max_size=3)):
                    if value.type == FieldDescriptor.TYPE_MESSAGE:
                        target[k].CopyFrom(draw(_message(value.message_type._concrete_class, depth + 1)))
                    else:
                        target[k] = draw(_scalar(value))
            elif many:
                getattr(message, field.name).extend(draw(st.lists(_message(sub, depth + 1), max_size=3)))
            else:
                getattr(message, field.name).CopyFrom(draw(_message(sub, depth + 1)))
        elif many:
            getattr(message, field.name).extend(draw(st.lists(_scalar(field), max_size=3)))
        else:
            setattr(message, field.name, draw(_scalar(field)))
    return message


def _requests(store: str) -> st.SearchStrategy[tuple[str, bytes]]:
    proxy = spec_for(store).proxy
    assert proxy is not None
    modelled = sorted(p for p, rpc in proxy.rpcs(DecodeOptions(), MODEL_TYPES).items() if rpc.decode is not None)

    def request(path: str) -> st.SearchStrategy[tuple[str, bytes]]:
        cls = getattr(_REQUEST_TYPES[store], path.rpartition("/")[2] + "Request").pb()
        whole = _message(cls).map(lambda m: m.SerializeToString())
        flipped = st.tuples(whole, st.integers(0, 64), st.integers(1, 255)).map(
            lambda t: t[0][:t[1]] + bytes((t[0][t[1]] ^ t[2],)) + t[0][t[1] + 1:] if t[1] < len(t[0]) else t[0])
        return st.tuples(st.just(path), st.one_of(whole, flipped, st.binary(max_size=40)))

    return st.sampled_from(modelled).flatmap(request)


@pytest.mark.parametrize("store", sorted(_REQUEST_TYPES))
def test_no_request_raises_into_the_proxy_undecodable_ones_are_forwarded_and_counted(store: str) -> None:
    proxy = StoreProxy(spec=spec_for(store), upstream="127.0.0.1:1", make_model=make_model, types=MODEL_TYPES,
                       config=ProxyConfig(scale=1000, storage="ssd" if store == "bigtable" else None))
    offered: list[Any] = []

    @hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(request=_requests(store))
    def offer(request: tuple[str, bytes]) -> None:
        rpc, counts = proxy.route(request[0])
        decision = proxy.offer(rpc.decode, request[1], counts)  # the relay's call: must not raise
        assert decision is None or isinstance(decision, Decision)
        offered.append(decision)

    offer()
    totals = proxy.counts.totals()
    assert totals["modelled"] + totals["not_modelled"] == len(offered)  # every one counted once
    assert totals["modelled"] == sum(d is not None for d in offered) > 0 and totals["undecodable"] > 0
