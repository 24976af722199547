"""Runs written before the Parquet format: ``timeseries.csv`` and ``keys.csv``, read with pyarrow.

They load into the same tables (``_parquet`` schemas) as the Parquet files, so everything
downstream reads one format. ``keyramp migrate`` rewrites such runs as Parquet.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from keyramp.core import UsageError
from keyramp.results._parquet import KEYS_SCHEMA, TIMESERIES_SCHEMA

__all__ = ["KEYS_CSV", "TIMESERIES_CSV", "classes_text", "parse_classes", "read_keys_csv", "read_timeseries_csv"]

TIMESERIES_CSV = "timeseries.csv"
KEYS_CSV = "keys.csv"
_KEYS_HEADER = ["cell", "t", "op", "key"]
_SKIP_TORN: Callable[[Any], str] = lambda row: "skip"  # noqa: E731 - a crash's torn last line


def parse_classes(text: str | None) -> list[tuple[str, int]]:
    """``CLASS:n;CLASS:n`` -> [(class, n)]; unparsable parts are dropped."""
    out = []
    for part in (text or "").split(";"):
        name, _, count = part.rpartition(":")
        try:
            value = float(count)
        except ValueError:
            continue
        if name and math.isfinite(value):
            out.append((name, int(value)))
    return out


def classes_text(pairs: list[tuple[str, int]] | None) -> str:
    """The CSV form of an ``error_classes`` map."""
    return ";".join(f"{k}:{v}" for k, v in sorted(pairs or []))


def _classes_column(texts: pa.ChunkedArray) -> pa.Array:
    # sparse: only seconds with errors have text, so a per-row loop over those is cheap
    values = texts.to_pylist()
    return pa.array([parse_classes(v) if v else [] for v in values], type=TIMESERIES_SCHEMA.field("error_classes").type)


def _number(value: str | None, kind: type) -> int | float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return int(number) if kind is int else number


def read_timeseries_csv(path: Path) -> pa.Table:
    """A legacy ``timeseries.csv`` as a ``TIMESERIES_SCHEMA`` table; never raises.

    A missing or unreadable file is empty; a torn last line, rows with another number of
    fields and hand-edited values that are not numbers are dropped or become null.
    """
    schema = TIMESERIES_SCHEMA
    types = {f.name: (pa.string() if f.name == "error_classes" else f.type) for f in schema}
    parse = pacsv.ParseOptions(invalid_row_handler=_SKIP_TORN)
    # keyramp writes ASCII here (ids, op and gRPC class names): latin-1 never fails to decode a
    # damaged file, where pyarrow would choke on the bytes of a row it is skipping
    read = pacsv.ReadOptions(encoding="latin-1")
    try:
        raw = pacsv.read_csv(path, read_options=read, parse_options=parse,
                             convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=True))
    except FileNotFoundError:
        return schema.empty_table()
    except (pa.ArrowInvalid, OSError):
        # a hand-edited value: every column as text, then number by number
        try:
            raw = pacsv.read_csv(path, read_options=read, parse_options=parse, convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in types}, strings_can_be_null=True))
        except (pa.ArrowInvalid, OSError):
            return schema.empty_table()
        cols = {}
        for name in raw.column_names:
            if name not in schema.names or name in ("cell", "op", "error_classes"):
                cols[name] = raw[name]
                continue
            ftype = schema.field(name).type
            kind = int if pa.types.is_integer(ftype) else float
            cols[name] = pa.array([_number(v, kind) for v in raw[name].to_pylist()], type=ftype)
        raw = pa.table(cols)
    if not {"cell", "op", "second"} <= set(raw.column_names):
        return schema.empty_table()
    raw = raw.filter(pc.and_(pc.is_valid(raw["second"]), pc.greater_equal(raw["second"], 0)))
    raw = raw.filter(pc.and_(pc.is_valid(raw["cell"]), pc.is_valid(raw["op"])))
    arrays = []
    for f in schema:
        if f.name not in raw.column_names:
            arrays.append(pa.nulls(raw.num_rows, f.type))
        elif f.name == "error_classes":
            arrays.append(_classes_column(raw[f.name]))
        else:
            arrays.append(raw[f.name].cast(f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def read_keys_csv(path: Path) -> pa.Table:
    """A legacy ``keys.csv`` (header ``cell,t,op,key``) as a ``KEYS_SCHEMA`` table.

    Bad input is a ``UsageError`` naming the file: a missing file, another header, a row
    whose time is not a number. A torn last line (crash mid-write) is dropped.
    """
    if not path.is_file():
        raise UsageError(f"no sampled keys: {path} does not exist")
    with path.open("rb") as fh:
        head = next(csv.reader([fh.readline().decode("utf-8", "replace")]), [])
    if head != _KEYS_HEADER:  # quoted or not (spreadsheets and pyarrow quote names)
        raise UsageError(f"{path}: expected header cell,t,op,key, got {head}")
    types = {"cell": pa.string(), "t": pa.float64(), "op": pa.string(), "key": pa.string()}
    try:
        raw = pacsv.read_csv(
            path,
            # keys are written by Python's csv module: quoted when they hold commas, quotes or newlines
            parse_options=pacsv.ParseOptions(newlines_in_values=True, invalid_row_handler=_SKIP_TORN),
            convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False),
        )
    except pa.ArrowInvalid as exc:
        raise UsageError(f"{path}: malformed row ({exc})") from None
    if raw.column("t").null_count:
        raise UsageError(f"{path}: malformed row (a sample without a time)")
    t_us = pc.cast(pc.round(pc.multiply(raw["t"], 1e6)), pa.int64())
    n = len(t_us)
    return pa.Table.from_arrays([raw["cell"], t_us, raw["op"], raw["key"], pa.nulls(n, pa.string()),
                                 pa.nulls(n, pa.list_(pa.string())), pa.nulls(n, pa.int16())], schema=KEYS_SCHEMA)
