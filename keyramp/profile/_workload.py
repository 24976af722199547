"""``[workload]`` and ``[workload.query]``, declared once (``_schema``): what each cell's users do."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as _field
from typing import Any, ClassVar

from keyramp.core import OP_NAMES, UsageError, known_names
from keyramp.keys import DISTRIBUTIONS, INDEXED_VALUES
from keyramp.probes import PROBES, probe_params
from keyramp.profile._app import check_query_field, resolve_document, resolve_user
from keyramp.profile._checks import Bool, Choice, Context, Free, Int, Known, Strings, Table, Text, quoted
from keyramp.profile._schema import Section, Sub, option

__all__ = ["QuerySettings", "WorkloadSettings"]


def _probes() -> tuple[str, ...]:
    return tuple(PROBES)


@dataclass(frozen=True, kw_only=True)
class QuerySettings(Section):
    """``[workload.query]``: what the ``query`` operation sends. ``paginate`` reads page ``page`` by
    ``offset`` (the skipped entities are still read, BP-QRY-2) or by walking cursors."""

    TABLE: ClassVar = "workload.query"
    COLON: ClassVar = True
    field: str = _field(metadata=option(
        Text("a property name", got=True), default="",
        doc="property to filter on (`\"\"`: no filter; with a document shape, an indexed property)"))
    op: str = _field(metadata=option(
        Choice(("==", "<", "<=", ">", ">=", "!="), sep=" "), default="==", doc="the filter's operator"))
    value: Any = _field(metadata=option(
        Free("a TOML value"), default=None, bad=("x",), doc="the filter's value (needs `field`)"))
    order_by: str = _field(metadata=option(
        Text("a property name", got=True), default="", doc="property to order by (`-name`: descending)"))
    limit: int = _field(metadata=option(Int(0), default=0, doc="results per query (0: `workload.scan_length`)"))
    offset: int = _field(metadata=option(
        Int(0), default=0, doc="entities skipped before the results (still read: BP-QRY-2)"))
    paginate: str = _field(metadata=option(
        Choice(("none", "offset", "cursor")), default="none", doc="read page `page` by offset or by walking cursors"))
    page: int = _field(metadata=option(Int(0), default=0, doc="the page `paginate` reads (≥ 1 with `paginate`)"))
    keys_only: bool = _field(metadata=option(Bool(), default=False, doc="a keys-only query"))
    projection: tuple[str, ...] = _field(metadata=option(
        Strings("a list of property names", nonempty=True), default=[], doc="properties a projection query returns"))
    ancestor: bool = _field(metadata=option(
        Bool(), default=False, doc="query inside one entity group (needs `workload.entity_group_size`)"))

    @classmethod
    def finish(cls, out: dict[str, Any], given: Mapping[str, Any], ctx: Context) -> None:
        where = f"{ctx.src}: {cls.TABLE}"
        if out["field"] and out["value"] is None:
            raise UsageError(f"{where}: a filter on '{out['field']}' needs a value")
        if out["value"] is not None and not out["field"]:
            raise UsageError(f"{where}: value given without field")
        if out["paginate"] != "none" and not out["page"]:
            raise UsageError(f"{where}: paginate needs page ≥ 1 (which page to read)")
        if out["paginate"] != "none" and out["offset"]:
            raise UsageError(f"{where}: offset and paginate exclude each other")
        if out["keys_only"] and out["projection"]:
            raise UsageError(f"{where}: keys_only and projection exclude each other")


#: Why a field does not apply beside another (``Option.not_with``).
_NOT_WITH = {
    "user": "the Python workload's @keyramp.op methods and their weights are the operations",
    "document": 'describe the record there, e.g. payload = { type = "bytes", size = 256 }',
}


@dataclass(frozen=True, kw_only=True)
class WorkloadSettings(Section):
    """``[workload]``: what each cell's users do."""

    TABLE: ClassVar = "workload"
    ops: Mapping[str, float] = _field(metadata=option(
        Free("table of operation = share"), default={"insert": 0.5, "read": 0.5}, not_with=("user",),
        bad=(5, {}, {"fly": 1.0}, {"insert": 0.9}),
        doc="operation = share, the shares summing to 1: " + " ".join(f"`{op}`" for op in OP_NAMES)))
    record_count: int = _field(metadata=option(
        Int(0), default=1000, doc="records preloaded (batch writes) before the measured phase"))
    value_size: int = _field(metadata=option(
        Int(0), default=256, not_with=("document",), doc="bytes of payload per entity/row"))
    read_distribution: str = _field(metadata=option(
        Known(lambda: tuple(DISTRIBUTIONS), quote=quoted), default="uniform",
        doc="how reads pick among existing records"))
    distribution_params: Mapping[str, Any] = _field(metadata=option(
        Table(), default={}, doc="the distribution's parameters, e.g. `{ hot_ops_fraction = 0.9 }`"))
    batch_size: int = _field(metadata=option(
        Int(1), default=10, not_with=("user",),
        doc="entities per batch_write / batch_read (at most the store's limit: Datastore 500 per commit, "
            "1,000 per lookup; Firestore 500 writes)"))
    scan_length: int = _field(metadata=option(
        Int(1), default=20, not_with=("user",), doc="rows per scan, results per query"))
    entity_group_size: int = _field(metadata=option(
        Int(0), default=0, needs="ancestor_queries",
        doc="children per parent: keys become ancestor paths, consecutive inserts share a parent (BP-RATE-1)"))
    indexed_value: str = _field(metadata=option(
        Choice(INDEXED_VALUES), default="none", not_with=("document",),
        doc="a `created` property: monotonic, prefixed or unindexed (BP-RATE-2, BP-KEY-4)"))
    indexed_fields: int = _field(metadata=option(
        Int(0), default=0, not_with=("document",), doc="extra small indexed properties (index fan-out, BP-IDX-1)"))
    key_samples_per_s: int = _field(metadata=option(
        Int(0), default=100, doc="budget of sampled key accesses per second for the key-space analysis"))
    query: QuerySettings = _field(metadata=option(
        Sub(QuerySettings), default={}, not_with=("user",),
        doc="what the `query` operation sends (`[workload.query]`)"))
    probe: str = _field(metadata=option(
        Known(_probes, noun="probe", also=("none",)), default="none", not_with=("user",),
        doc="a direct measurement run instead of the operations (profiles/scenarios/README.md)"))
    probe_params: Mapping[str, Any] = _field(metadata=option(
        Table(), default={}, not_with=("user",), doc="the probe's parameters"))
    document: Mapping[str, Any] = _field(metadata=option(
        Free("table of properties", lambda v: dict(v or {})), default={}, legacy={}, bad=(5, {"x": "text"}),
        doc="`[workload.document]`: the application's record instead of `value_size` random bytes (below)"))
    #: Resolved to ``"/abs/file.py:Class"``; ``""``: the built-in operations.
    user: str = _field(metadata=option(
        Free('`"file.py:Class"`', lambda v: str(v or "")), default="", legacy="", bad=(5, "missing.py:Orders"),
        doc='`"file.py:Class"`: a Python workload (docs/workloads.md), its path relative to the profile'))
    #: Besides insert / batch_write: the Python workload's ops that create keys (key-space analysis).
    insert_ops: tuple[str, ...] = _field(metadata=option(
        Free(convert=lambda v: tuple(v or ())), derived=True, legacy=(),
        doc="the Python workload's operations that create keys"))

    @classmethod
    def applies(cls, given: Mapping[str, Any], ctx: Context) -> None:
        document = given.get("document")
        present = {"user": bool(given.get("user")), "document": isinstance(document, dict) and bool(document)}
        for opt in cls.options():
            for other in opt.not_with:
                if present[other] and opt.toml in given:
                    raise UsageError(f"{ctx.src}: workload.{opt.toml}: does not apply with workload.{other} "
                                     f"({_NOT_WITH[other]})")

    @classmethod
    def finish(cls, out: dict[str, Any], given: Mapping[str, Any], ctx: Context) -> None:
        src = ctx.src
        shape = resolve_document(out, src)
        out["insert_ops"] = []  # besides insert/batch_write: a Python workload's ops that create keys
        if out["user"]:
            resolve_user(out, src, ctx.base_dir)
        _check_ops(out, src)
        query = out["query"]
        query["limit"] = query["limit"] or out["scan_length"]
        if query["ancestor"] and not out["entity_group_size"]:
            raise UsageError(f"{src}: workload.query: ancestor = true needs workload.entity_group_size > 0")
        check_query_field(query, shape, src)
        out["probe_params"] = _probe_params(out, src)
        needs_existing = set(out["ops"]) - {"insert", "batch_write"}
        if needs_existing and not out["user"] and out["record_count"] == 0 and "insert" not in out["ops"]:
            raise UsageError(f"{src}: workload: reads/updates need records: set record_count > 0 or add inserts")


def _check_ops(workload: dict[str, Any], src: str) -> None:
    """``ops``: operation = share, the shares summing to 1 (a Python workload's come from its class)."""
    ops = workload["ops"]
    if not workload["user"] and (not isinstance(ops, dict) or not ops):
        raise UsageError(f"{src}: workload.ops must be a table of operation = share, e.g. "
                         "{ insert = 0.8, read = 0.2 }")
    for op, share in ops.items():
        if op not in OP_NAMES and not workload["user"]:
            raise UsageError(f"{src}: workload.ops: unknown operation '{op}' "
                             f"{known_names(op, OP_NAMES, label='one of')}")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or share < 0 or math.isnan(share):
            raise UsageError(f"{src}: workload.ops.{op}: share must be a number ≥ 0, got {share!r}")
    total = sum(ops.values())
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise UsageError(f"{src}: workload.ops: shares must sum to 1, they sum to {total:g}")
    workload["ops"] = {op: float(share) for op, share in ops.items() if share > 0}


def _probe_params(workload: Mapping[str, Any], src: str) -> dict[str, Any]:
    """A probe's parameters, checked by the probe's own declaration (``keyramp.probes``)."""
    name, params = workload["probe"], workload["probe_params"]
    if name == "none":
        if params:
            raise UsageError(f"{src}: workload.probe_params given without workload.probe")
        return {}

    try:
        return probe_params(name, params)
    except UsageError as exc:
        raise UsageError(f"{src}: workload.probe_params: {exc}") from None
