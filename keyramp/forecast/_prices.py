"""The stores' list prices, each with its source and the date that source carries.

The built-in table is put together from the store packages: each store's spec names its price
sheet (``StoreSpec.prices``: ``keyramp/backends/<store>/prices.json``, versioned with the code),
one entry of the table — its locations (regional or multi-region) and their prices: per 100,000
reads, writes and deletes and per GiB-month stored for Firestore and Datastore mode; per
node-hour and per GiB-month by storage type for Bigtable; and how a store bills an operation
where that differs from the rows the forecast counts (``billed_as``: a Firestore ``increment`` is
one write) — plus the sheet's ``version``, the date its figures were read. Every figure carries
``source`` (where it was found), ``as_of`` (the date that source carries, or ``undated`` with
``why_undated``) and a ``note`` (how it was read, or why it is unconfirmed). An entry's
``backends`` are the specs that name its sheet; the table's ``version`` is its newest sheet's.

``--prices FILE`` overlays a file of the same layout: what it names replaces the built-in
value — a price always as a whole, with its own ``source`` and ``as_of`` — and everything
else is kept (as ``--params`` does for the model's parameters). A bad file is one
``UsageError`` naming the file and the field (exit 2).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from keyramp.backends import STORES, StoreSpec
from keyramp.core import UsageError
from keyramp.results import LABEL

__all__ = ["BILLED_OPS", "BUILTIN", "LABEL", "PRICE_UNITS", "UNDATED", "Cited", "IndexBilling", "Location",
           "OpBilling", "Price", "Prices", "StorePrices", "as_of_text", "builtin_table", "load_prices"]

#: How messages and ``Prices.files`` name the built-in table (its sheets live in the store packages).
BUILTIN = "keyramp price table"
NOTE = ("as_of is the date the source itself carries; none of these sources carried one in the stored copies the "
        "figures were read from (each sheet's version: the table's is the newest), so every figure says 'undated' "
        "and why (why_undated). Prices change: check the source URL, and override any figure with --prices FILE "
        "(docs/plan.md).")
#: price name -> (what it prices, how many of them the price is for)
PRICE_UNITS: Mapping[str, tuple[str, float]] = {
    "reads_per_100k": ("reads", 100_000.0),
    "writes_per_100k": ("writes", 100_000.0),
    "deletes_per_100k": ("deletes", 100_000.0),
    "storage_gib_month": ("GiB-months", 1.0),
    "node_hour_ssd": ("node-hours", 1.0),
    "node_hour_hdd": ("node-hours", 1.0),
    "storage_gib_month_ssd": ("GiB-months", 1.0),
    "storage_gib_month_hdd": ("GiB-months", 1.0),
}
#: The prices a location of each billing kind must have.
BILLING: Mapping[str, tuple[str, ...]] = {
    "operations": ("reads_per_100k", "writes_per_100k", "deletes_per_100k", "storage_gib_month"),
    "nodes": ("node_hour_ssd", "node_hour_hdd", "storage_gib_month_ssd", "storage_gib_month_hdd"),
}
LOCATION_TYPES = ("regional", "multi-region")
_TOP = frozenset({"schema", "version", "currency", "label", "note", "stores"})
_STORE = frozenset({"title", "backends", "billing", "default_location", "index_entry_writes", "billing_note",
                    "billed_as", "locations"})
_CITED = frozenset({"source", "as_of", "note", "why_undated"})
_PRICE = _CITED | {"usd"}
_INDEX = _CITED | {"billed"}
_BILLED = _CITED | {"reads", "writes"}
#: ``as_of`` of a figure whose source carries no date (``why_undated`` says why).
UNDATED = "undated"
#: The operations a store's ``billed_as`` may state (those whose rows do not depend on workload fields).
BILLED_OPS = ("increment",)


@dataclass(frozen=True, kw_only=True)
class Cited:
    """Where a figure or a billing rule was found, and the date its source carries (``UNDATED``: none,
    and ``why_undated`` says why)."""

    source: str
    as_of: str
    note: str = ""
    why_undated: str = ""

    @property
    def dated(self) -> bool:
        return self.as_of != UNDATED

    def citation(self) -> dict[str, str]:
        doc = {"source": self.source, "as_of": self.as_of, "note": self.note}
        return doc | ({} if self.dated else {"why_undated": self.why_undated})


@dataclass(frozen=True, kw_only=True)
class Price(Cited):
    """One list price in USD."""

    usd: float

    def to_json(self) -> dict[str, Any]:
        return {"usd": self.usd, **self.citation()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Price:
        return cls(usd=float(doc["usd"]), source=str(doc["source"]), as_of=str(doc["as_of"]),
                   note=str(doc.get("note") or ""), why_undated=str(doc.get("why_undated") or ""))


@dataclass(frozen=True, kw_only=True)
class OpBilling(Cited):
    """How a store bills one of keyramp's operations, where that differs from the rows the forecast counts
    (``_project.op_mix``): an ``increment`` is one write on Firestore (a field transform), for instance."""

    reads: float
    writes: float

    def to_json(self) -> dict[str, Any]:
        return {"reads": self.reads, "writes": self.writes, **self.citation()}


@dataclass(frozen=True, kw_only=True)
class IndexBilling(Cited):
    """Whether writing an index entry is billed apart from the document write."""

    billed: bool

    def to_json(self) -> dict[str, Any]:
        return {"billed": self.billed, **self.citation()}


@dataclass(frozen=True, kw_only=True)
class Location:
    name: str
    type: str  # "regional" | "multi-region"
    prices: Mapping[str, Price]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **{k: p.to_json() for k, p in self.prices.items()}}


@dataclass(frozen=True, kw_only=True)
class StorePrices:
    """One store's prices: which backends they apply to, how it bills, by location."""

    name: str
    title: str
    backends: tuple[str, ...]
    billing: str  # "operations" | "nodes"
    default_location: str
    locations: Mapping[str, Location]
    index_entry_writes: IndexBilling | None = None
    billing_note: str = ""
    #: op -> how the store bills it (only ops whose bill differs from, or must be stated beside, op_mix's rows).
    billed_as: Mapping[str, OpBilling] = field(default_factory=dict)

    def location(self, name: str | None = None, *, src: str = "prices") -> Location:
        """The named location (the store's default when None); ``UsageError`` naming the ones there are."""
        key = name or self.default_location
        if key not in self.locations:
            raise UsageError(f"{src}: stores.{self.name}.locations: no prices for location {key!r} "
                             f"(known: {', '.join(self.locations)}; add it with --prices FILE)")
        return self.locations[key]

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"title": self.title, "backends": list(self.backends), "billing": self.billing,
                               "default_location": self.default_location}
        if self.index_entry_writes is not None:
            doc["index_entry_writes"] = self.index_entry_writes.to_json()
        if self.billing_note:
            doc["billing_note"] = self.billing_note
        if self.billed_as:
            doc["billed_as"] = {op: b.to_json() for op, b in self.billed_as.items()}
        doc["locations"] = {name: loc.to_json() for name, loc in self.locations.items()}
        return doc


@dataclass(frozen=True, kw_only=True)
class Prices:
    """The price table in force: the built-in one, with ``--prices`` overrides when given."""

    version: str
    label: str
    stores: Mapping[str, StorePrices]
    #: Where it was read from: the built-in table (``BUILTIN``), then the override file.
    files: tuple[str, ...] = field(default_factory=tuple)
    currency: str = "USD"
    note: str = ""

    @property
    def source(self) -> str:
        """Where these prices come from, in one line (``prices.source`` of a cost)."""
        base = f"{BUILTIN} {self.version}"
        return base + "".join(f" + {f}" for f in self.files[1:])

    def for_backend(self, backend: str) -> StorePrices:
        for store in self.stores.values():
            if backend in store.backends:
                return store
        raise UsageError(f"{self.files[-1] if self.files else 'prices'}: no prices for backend {backend!r} "
                         f"(priced: {', '.join(b for s in self.stores.values() for b in s.backends)})")

    def to_json(self) -> dict[str, Any]:
        return {"schema": 1, "version": self.version, "currency": self.currency, "label": self.label,
                "note": self.note, "stores": {name: s.to_json() for name, s in self.stores.items()}}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], *, src: str = "prices") -> Prices:
        """A complete table (validated: ``UsageError`` naming ``src`` and the field)."""
        _check(doc, src, partial=False)
        return _build(doc, files=(src,))


def as_of_text(as_of: str) -> str:
    """``prices as of 2026-01-31``, or that the prices' sources carry no date."""
    return "prices undated (their sources carry no date: docs/plan.md)" if as_of == UNDATED else f"prices as of {as_of}"


# -- validation ---------------------------------------------------------------------------------
def _fail(src: str, where: str, message: str) -> UsageError:
    return UsageError(f"{src}: {where}: {message}")


def _table(value: Any, src: str, where: str, allowed: frozenset[str] | None = None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(src, where, f"must be a table, got {type(value).__name__}")
    for key in value:
        if allowed is not None and key not in allowed:
            raise _fail(src, f"{where}.{key}" if where else str(key),
                        f"unknown field (allowed: {', '.join(sorted(allowed))})")
    return value


def _text(value: Any, src: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(src, where, f"must be a non-empty string, got {value!r}")
    return value


def _cited(doc: Mapping[str, Any], src: str, where: str) -> None:
    """``source``, and ``as_of``: the date on the source, or ``undated`` with ``why_undated``."""
    _text(doc.get("source"), src, f"{where}.source")
    value = doc.get("as_of")
    if value == UNDATED:
        _text(doc.get("why_undated"), src, f"{where}.why_undated")
        return
    try:
        date.fromisoformat(_text(value, src, f"{where}.as_of"))
    except ValueError:
        raise _fail(src, f"{where}.as_of", f"must be the date on the source (YYYY-MM-DD), or {UNDATED!r} with "
                                           f"why_undated, got {value!r}") from None
    if "why_undated" in doc:
        raise _fail(src, f"{where}.why_undated", f"only with as_of = {UNDATED!r}")


def _check_price(value: Any, src: str, where: str) -> None:
    """A price is always complete (a figure without its source is not a price)."""
    doc = _table(value, src, where, _PRICE)
    usd = doc.get("usd")
    if isinstance(usd, bool) or not isinstance(usd, int | float) or not 0 <= usd < float("inf"):
        raise _fail(src, f"{where}.usd", f"must be a number >= 0, got {usd!r}")
    _cited(doc, src, where)
    if "note" in doc and not isinstance(doc["note"], str):
        raise _fail(src, f"{where}.note", "must be a string")


def _check_index(value: Any, src: str, where: str) -> None:
    doc = _table(value, src, where, _INDEX)
    if doc.get("billed") is not False:
        raise _fail(src, f"{where}.billed", f"only false is modelled (billed index entry writes are Firestore "
                                            f"Enterprise edition's write units), got {doc.get('billed')!r}")
    _cited(doc, src, where)


def _check_billed(value: Any, src: str, where: str) -> None:
    for op, spec in _table(value, src, where).items():
        if op not in BILLED_OPS:
            raise _fail(src, f"{where}.{op}", f"not an operation whose billing can be stated (one of: "
                                              f"{', '.join(BILLED_OPS)})")
        doc = _table(spec, src, f"{where}.{op}", _BILLED)
        for key in ("reads", "writes"):
            n = doc.get(key)
            if isinstance(n, bool) or not isinstance(n, int | float) or not 0 <= n < float("inf"):
                raise _fail(src, f"{where}.{op}.{key}", f"must be a number >= 0 (rows billed per operation), "
                                                        f"got {n!r}")
        _cited(doc, src, f"{where}.{op}")


def _check_location(value: Any, src: str, where: str, billing: str | None, partial: bool) -> None:
    names = BILLING.get(billing or "", tuple(PRICE_UNITS))
    doc = _table(value, src, where, frozenset({"type", *names}))
    if ("type" in doc or not partial) and doc.get("type") not in LOCATION_TYPES:
        raise _fail(src, f"{where}.type", f"one of {', '.join(LOCATION_TYPES)}, got {doc.get('type')!r}")
    for name in names:
        if name in doc:
            _check_price(doc[name], src, f"{where}.{name}")
        elif not partial:
            raise _fail(src, f"{where}.{name}", "missing (every location of this store needs it)")


def _check_store(name: str, value: Any, src: str, base: Mapping[str, Any] | None, partial: bool) -> None:
    where = f"stores.{name}"
    doc = _table(value, src, where, _STORE)
    billing = doc.get("billing", (base or {}).get("billing"))
    if billing not in BILLING:
        raise _fail(src, f"{where}.billing", f"one of {', '.join(BILLING)}, got {billing!r}")
    backends = doc.get("backends", (base or {}).get("backends"))
    if not isinstance(backends, list) or not backends or not all(isinstance(b, str) and b for b in backends):
        raise _fail(src, f"{where}.backends", f"must be a non-empty list of backend names, got {backends!r}")
    for key in ("title", "default_location"):
        if key in doc or not partial:
            _text(doc.get(key), src, f"{where}.{key}")
    if "billing_note" in doc and not isinstance(doc["billing_note"], str):
        raise _fail(src, f"{where}.billing_note", "must be a string")
    if "index_entry_writes" in doc:
        _check_index(doc["index_entry_writes"], src, f"{where}.index_entry_writes")
    if "billed_as" in doc:
        if billing != "operations":
            raise _fail(src, f"{where}.billed_as", "only a store billed per operation bills operations")
        _check_billed(doc["billed_as"], src, f"{where}.billed_as")
    locations = _table(doc.get("locations", {}), src, f"{where}.locations")
    if not partial and not locations:
        raise _fail(src, f"{where}.locations", "needs at least one location")
    known = (base or {}).get("locations", {})
    for loc, spec in locations.items():
        # A location the built-in table lacks must be complete; a known one may name a few prices.
        _check_location(spec, src, f"{where}.locations.{loc}", billing, partial and loc in known)
    default = doc.get("default_location", (base or {}).get("default_location"))
    if default not in {**known, **locations}:
        raise _fail(src, f"{where}.default_location", f"{default!r} has no prices in locations")


def _check(doc: Any, src: str, *, partial: bool, base: Mapping[str, Any] | None = None) -> None:
    """Validate a complete table, or (``partial``) an override of ``base``; raise on the first problem."""
    top = _table(doc, src, "", _TOP)
    if top.get("schema", 1 if partial else None) != 1:
        raise _fail(src, "schema", f"must be 1, got {top.get('schema')!r}")
    if top.get("currency", "USD") != "USD":
        raise _fail(src, "currency", f"only USD prices are modelled, got {top.get('currency')!r}")
    for key in ("version", "label"):
        if key in top or not partial:
            _text(top.get(key), src, key)
    stores = _table(top.get("stores", {}), src, "stores")
    known = (base or {}).get("stores", {})
    if not partial and not stores:
        raise _fail(src, "stores", "needs at least one store")
    for name, spec in stores.items():
        if partial and name not in known:
            raise _fail(src, f"stores.{name}", f"unknown store (known: {', '.join(known)})")
        _check_store(name, spec, src, known.get(name), partial)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """``over`` laid on ``base``: tables merge down to a location; a price replaces whole."""
    out = dict(base)
    for key, value in over.items():
        # depth 0 top, 1 stores, 2 a store, 3 locations, 4 a location: its entries are prices.
        if isinstance(value, Mapping) and isinstance(base.get(key), Mapping) and depth < 4:
            out[key] = _merge(base[key], value, depth + 1)
        else:
            out[key] = value
    return out


def _build(doc: Mapping[str, Any], *, files: tuple[str, ...]) -> Prices:
    stores = {}
    for name, s in doc["stores"].items():
        index = s.get("index_entry_writes")
        locations = {
            loc: Location(name=loc, type=spec["type"],
                          prices={k: Price.from_json(v) for k, v in spec.items() if k != "type"})
            for loc, spec in s["locations"].items()
        }
        stores[name] = StorePrices(
            name=name, title=s["title"], backends=tuple(s["backends"]), billing=s["billing"],
            default_location=s["default_location"], locations=locations, billing_note=s.get("billing_note", ""),
            index_entry_writes=None if index is None else IndexBilling(
                billed=bool(index["billed"]), source=index["source"], as_of=index["as_of"],
                note=str(index.get("note") or ""), why_undated=str(index.get("why_undated") or "")),
            billed_as={op: OpBilling(reads=float(b["reads"]), writes=float(b["writes"]), source=b["source"],
                                     as_of=b["as_of"], note=str(b.get("note") or ""),
                                     why_undated=str(b.get("why_undated") or ""))
                       for op, b in (s.get("billed_as") or {}).items()},
        )
    return Prices(version=str(doc["version"]), label=str(doc["label"]), currency=str(doc.get("currency", "USD")),
                  note=str(doc.get("note") or ""), stores=stores, files=files)


def _read(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such prices file") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read prices file: {' '.join(str(exc).split())}") from None


def builtin_table(specs: tuple[StoreSpec, ...] | None = None) -> dict[str, Any]:
    """The built-in price table (the ``--prices`` file layout), put together from the price sheets
    ``specs`` name (default: every registered store); a bad sheet names its file and field."""
    stores: dict[str, dict[str, Any]] = {}
    files: dict[str, Path] = {}
    versions: list[str] = []
    for spec in STORES.specs() if specs is None else specs:
        sheet = spec.prices
        if sheet is None:
            continue
        if sheet.name not in stores:
            src = str(sheet.file)
            doc = dict(_table(_read(sheet.file), src, ""))
            if "backends" in doc:
                raise _fail(src, "backends", "a price sheet's backends are the stores whose spec names it")
            version = doc.pop("version", None)
            try:
                date.fromisoformat(_text(version, src, "version"))
            except ValueError:
                raise _fail(src, "version", f"the date the sheet's figures were read (YYYY-MM-DD), got {version!r}") \
                    from None
            _check_store(sheet.name, {**doc, "backends": [spec.name]}, src, None, partial=False)
            stores[sheet.name], files[sheet.name] = {**doc, "backends": []}, sheet.file
            versions.append(str(version))
        elif files[sheet.name] != sheet.file:
            raise ValueError(f"{spec.name}: price sheet {sheet.name!r} is {files[sheet.name]} for another store, "
                             f"not {sheet.file}")
        stores[sheet.name]["backends"].append(spec.name)
    return {"schema": 1, "version": max(versions, default="none"), "currency": "USD", "label": LABEL, "note": NOTE,
            "stores": stores}


def load_prices(override: Path | str | None = None) -> Prices:
    """The built-in price table, with ``override`` (``--prices FILE``) laid over it when given."""
    base = builtin_table()
    _check(base, BUILTIN, partial=False)
    if override is None:
        return _build(base, files=(BUILTIN,))
    over = _read(Path(override))
    _check(over, str(override), partial=True, base=base)
    merged = _merge(base, over)
    _check(merged, str(override), partial=False)  # what the override made incomplete names its file
    return _build(merged, files=(BUILTIN, str(override)))
