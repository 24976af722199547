"""The stores' list prices, each with its source and the date it was looked up.

The built-in table is put together from the store packages: each store's spec names its price
sheet (``StoreSpec.prices``: ``keyramp/backends/<store>/prices.json``, versioned with the code),
one entry of the table with its locations (regional or multi-region) and their prices: per
100,000 reads, writes and deletes and per GiB-month stored for Firestore and Datastore mode; per
node-hour and per GiB-month by storage type for Bigtable. Every price carries ``source`` (where
the figure was found), ``as_of`` and a ``note`` (how it was read, or why it is unconfirmed). An
entry's ``backends`` are the specs that name its sheet; the table's ``version`` is its newest
``as_of``.

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

from keyramp._errors import UsageError
from keyramp.backends import STORES, StoreSpec
from keyramp.results._cost_doc import LABEL

__all__ = ["BUILTIN", "LABEL", "PRICE_UNITS", "Cited", "IndexBilling", "Location", "Price", "Prices", "StorePrices",
           "builtin_table", "load_prices"]

#: How messages and ``Prices.files`` name the built-in table (its sheets live in the store packages).
BUILTIN = "keyramp price table"
NOTE = ("as_of is the date each figure was looked up in a stored copy of its source; the stored copies carry no date "
        "of their own. Prices change: check the source URL, and override any figure with --prices FILE "
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
                    "locations"})
_PRICE = frozenset({"usd", "source", "as_of", "note"})
_INDEX = frozenset({"billed", "source", "as_of", "note"})


@dataclass(frozen=True, kw_only=True)
class Cited:
    """Where a figure or a billing rule was found, and when it was looked up there."""

    source: str
    as_of: str
    note: str = ""

    def citation(self) -> dict[str, str]:
        return {"source": self.source, "as_of": self.as_of, "note": self.note}


@dataclass(frozen=True, kw_only=True)
class Price(Cited):
    """One list price in USD."""

    usd: float

    def to_json(self) -> dict[str, Any]:
        return {"usd": self.usd, **self.citation()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Price:
        return cls(usd=float(doc["usd"]), source=str(doc["source"]), as_of=str(doc["as_of"]),
                   note=str(doc.get("note") or ""))


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


def _as_of(value: Any, src: str, where: str) -> None:
    try:
        date.fromisoformat(_text(value, src, where))
    except ValueError:
        raise _fail(src, where, f"must be a date YYYY-MM-DD, got {value!r}") from None


def _check_price(value: Any, src: str, where: str) -> None:
    """A price is always complete (a figure without its source is not a price)."""
    doc = _table(value, src, where, _PRICE)
    usd = doc.get("usd")
    if isinstance(usd, bool) or not isinstance(usd, int | float) or not 0 <= usd < float("inf"):
        raise _fail(src, f"{where}.usd", f"must be a number >= 0, got {usd!r}")
    _text(doc.get("source"), src, f"{where}.source")
    _as_of(doc.get("as_of"), src, f"{where}.as_of")
    if "note" in doc and not isinstance(doc["note"], str):
        raise _fail(src, f"{where}.note", "must be a string")


def _check_index(value: Any, src: str, where: str) -> None:
    doc = _table(value, src, where, _INDEX)
    if doc.get("billed") is not False:
        raise _fail(src, f"{where}.billed", f"only false is modelled (billed index entry writes are Firestore "
                                            f"Enterprise edition's write units), got {doc.get('billed')!r}")
    _text(doc.get("source"), src, f"{where}.source")
    _as_of(doc.get("as_of"), src, f"{where}.as_of")


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
                note=str(index.get("note") or "")),
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


def _dates(doc: Mapping[str, Any]) -> list[str]:
    """Every ``as_of`` in a sheet (prices and the index-entry rule)."""
    found = [str(doc["index_entry_writes"]["as_of"])] if "index_entry_writes" in doc else []
    for loc in doc["locations"].values():
        found += [str(price["as_of"]) for name, price in loc.items() if name != "type"]
    return found


def builtin_table(specs: tuple[StoreSpec, ...] | None = None) -> dict[str, Any]:
    """The built-in price table (the ``--prices`` file layout), put together from the price sheets
    ``specs`` name (default: every registered store); a bad sheet names its file and field."""
    stores: dict[str, dict[str, Any]] = {}
    files: dict[str, Path] = {}
    for spec in STORES.specs() if specs is None else specs:
        sheet = spec.prices
        if sheet is None:
            continue
        if sheet.name not in stores:
            doc, src = _read(sheet.file), str(sheet.file)
            if isinstance(doc, Mapping) and "backends" in doc:
                raise _fail(src, "backends", "a price sheet's backends are the stores whose spec names it")
            _check_store(sheet.name, {**_table(doc, src, ""), "backends": [spec.name]}, src, None, partial=False)
            stores[sheet.name], files[sheet.name] = {**doc, "backends": []}, sheet.file
        elif files[sheet.name] != sheet.file:
            raise ValueError(f"{spec.name}: price sheet {sheet.name!r} is {files[sheet.name]} for another store, "
                             f"not {sheet.file}")
        stores[sheet.name]["backends"].append(spec.name)
    version = max((d for s in stores.values() for d in _dates(s)), default="none")
    return {"schema": 1, "version": version, "currency": "USD", "label": LABEL, "note": NOTE, "stores": stores}


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
