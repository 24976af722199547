"""The runs list (``/``, ``/runs``, ``/runs.json``): filters, sorting, pagination, in the catalog's SQL."""

from __future__ import annotations

import math
import re
from typing import Any

from flask import Flask, Response, current_app, jsonify, render_template, request

from keyramp.core import UsageError
from keyramp.forecast import VERDICT_RANK
from keyramp.results import FILTERS, Catalog, RunQuery

__all__ = ["PAGE_SIZE", "add_routes", "forecast_summary", "query_runs"]

PAGE_SIZE = 50
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def query_runs(catalog: Catalog, args: dict[str, str]) -> dict[str, Any]:
    """Filter, sort and paginate the runs in the catalog (SQL) according to query parameters."""
    filters = {k: (args.get(k) or "").strip() for k in FILTERS}
    for key in ("from", "to"):
        if filters[key] and not _DATE.match(filters[key]):
            raise UsageError(f"'{key}' must be a date YYYY-MM-DD, got {filters[key]!r}")
    sort = args.get("sort") or "started"
    RunQuery(sort=sort).order_by()  # an unknown sort is a UsageError before the other parameters are checked
    order = args.get("order") or ("asc" if sort in ("profile", "run_id", "status") else "desc")
    if order not in ("asc", "desc"):
        raise UsageError(f"order must be asc or desc, got {order!r}")
    try:
        page = int(args.get("page") or 1)
    except ValueError:
        raise UsageError(f"page must be a whole number, got {args.get('page')!r}") from None
    if page < 1:
        raise UsageError(f"page must be >= 1, got {page}")
    q = RunQuery(profile=filters["profile"] or None, backend=filters["backend"] or None,
                 strategy=filters["strategy"] or None, status=filters["status"] or None,
                 since=filters["from"] or None, until=filters["to"] or None, sort=sort, descending=order == "desc",
                 limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    rows, total = catalog.query(q)
    pages = max(1, math.ceil(total / PAGE_SIZE))
    if page > pages:
        raise UsageError(f"page {page} is past the last page ({pages})")
    return {
        "runs": rows,
        "total": total,
        "total_unfiltered": catalog.count(),
        "page": page,
        "pages": pages,
        "page_size": PAGE_SIZE,
        "sort": sort,
        "order": order,
        "filters": {k: v for k, v in filters.items() if v},
        "facets": catalog.facets(),
    }


def forecast_summary(counts: dict[str, int] | None) -> dict[str, Any] | None:
    """The runs list's forecast column (modelled): the worst verdict among the run's cells and how
    many cells have it (``hotspot · 3 of 12 cells``), or None for a run without a launch forecast."""
    if not counts:
        return None
    worst = max(counts, key=lambda v: (VERDICT_RANK.get(v, -1), v))
    cells = sum(counts.values())
    text = worst if counts[worst] == cells and cells == 1 else f"{worst} · {counts[worst]} of {cells} cells"
    return {"verdict": worst, "verdict_class": worst if worst in VERDICT_RANK else "none", "text": text,
            "cells": counts[worst], "of": cells}


def add_routes(app: Flask) -> None:
    def _data() -> dict[str, Any]:
        store = current_app.extensions["keyramp_store"]
        data = query_runs(store.catalog, request.args.to_dict())
        # running runs: what they are doing now; every run: its cells' launch forecast in one word
        data["runs"] = [row | {"forecast": forecast_summary(row.get("forecasts"))}
                        for row in store.with_live(data["runs"])]
        return data

    @app.get("/")
    @app.get("/runs")
    def runs() -> str:
        return render_template("runs.html", data=_data(), args=request.args.to_dict())

    @app.get("/runs.json")
    def runs_json() -> Response:
        return jsonify(_data())
