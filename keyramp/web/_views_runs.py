"""The runs list (``/``, ``/runs``, ``/runs.json``): filters, sorting, pagination."""

from __future__ import annotations

import math
import re
from typing import Any

from flask import Flask, current_app, jsonify, render_template, request

from keyramp._errors import UsageError

__all__ = ["add_routes", "query_runs", "PAGE_SIZE", "SORT_KEYS"]

PAGE_SIZE = 50
SORT_KEYS = ("started", "run_id", "profile", "status", "cells", "ops_per_s", "p99_ms", "error_rate")
_FILTERS = ("profile", "backend", "strategy", "status", "from", "to")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _sort_value(row: dict[str, Any], key: str) -> tuple[int, Any]:
    value = {
        "started": row["started_at"] or row["run_id"],
        "run_id": row["run_id"],
        "profile": row["profile_name"].lower() if row["profile_name"] else None,
        "status": row["status"],
        "cells": row["cells"],
        "ops_per_s": row["ops_per_s"],
        "p99_ms": row["p99_ms"],
        "error_rate": row["error_rate"],
    }[key]
    # missing values sort last in either direction: the flag is flipped for descending below
    return (0, value) if value is not None else (1, 0)


def query_runs(rows: list[dict[str, Any]], args: dict[str, str]) -> dict[str, Any]:
    """Filter, sort and paginate list rows according to query parameters."""
    filters = {k: (args.get(k) or "").strip() for k in _FILTERS}
    for key in ("from", "to"):
        if filters[key] and not _DATE.match(filters[key]):
            raise UsageError(f"'{key}' must be a date YYYY-MM-DD, got {filters[key]!r}")
    sort = args.get("sort") or "started"
    if sort not in SORT_KEYS:
        raise UsageError(f"unknown sort {sort!r}; choose one of {', '.join(SORT_KEYS)}")
    order = args.get("order") or ("asc" if sort in ("profile", "run_id", "status") else "desc")
    if order not in ("asc", "desc"):
        raise UsageError(f"order must be asc or desc, got {order!r}")
    try:
        page = int(args.get("page") or 1)
    except ValueError:
        raise UsageError(f"page must be a whole number, got {args.get('page')!r}") from None
    if page < 1:
        raise UsageError(f"page must be >= 1, got {page}")

    def keep(row: dict[str, Any]) -> bool:
        if filters["profile"] and row["profile_name"] != filters["profile"]:
            return False
        if filters["backend"] and filters["backend"] not in row["backends"]:
            return False
        if filters["strategy"] and filters["strategy"] not in row["strategies"]:
            return False
        if filters["status"] and row["status"] != filters["status"]:
            return False
        day = (row["started_at"] or "")[:10]
        if filters["from"] and (not day or day < filters["from"]):
            return False
        if filters["to"] and (not day or day > filters["to"]):
            return False
        return True

    facets = {
        "profile": sorted({r["profile_name"] for r in rows if r["profile_name"]}),
        "backend": sorted({b for r in rows for b in r["backends"]}),
        "strategy": sorted({s for r in rows for s in r["strategies"]}),
        "status": sorted({r["status"] for r in rows}),
    }
    kept = [r for r in rows if keep(r)]
    desc = order == "desc"
    present = [r for r in kept if _sort_value(r, sort)[0] == 0]
    missing = [r for r in kept if _sort_value(r, sort)[0] == 1]
    present.sort(key=lambda r: (_sort_value(r, sort)[1], r["run_id"]), reverse=desc)
    kept = present + missing
    pages = max(1, math.ceil(len(kept) / PAGE_SIZE))
    if page > pages:
        raise UsageError(f"page {page} is past the last page ({pages})")
    start = (page - 1) * PAGE_SIZE
    return {
        "runs": kept[start:start + PAGE_SIZE],
        "total": len(kept),
        "total_unfiltered": len(rows),
        "page": page,
        "pages": pages,
        "page_size": PAGE_SIZE,
        "sort": sort,
        "order": order,
        "filters": {k: v for k, v in filters.items() if v},
        "facets": facets,
    }


def add_routes(app: Flask) -> None:
    def _data() -> dict[str, Any]:
        store = current_app.extensions["keyramp_store"]
        return query_runs(store.list_rows(), request.args.to_dict())

    @app.get("/")
    @app.get("/runs")
    def runs() -> str:
        return render_template("runs.html", data=_data(), args=request.args.to_dict())

    @app.get("/runs.json")
    def runs_json():  # type: ignore[no-untyped-def]
        return jsonify(_data())
