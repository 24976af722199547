"""One cell of a run (``/runs/<id>/cells/<cell>``, its JSON twin ``….json``) and the cell's
recorded data to download (``/runs/<id>/data/<timeseries|keys>/<cell>.<csv|parquet>``).

The cell page answers first (the cell's row of the run's answer: key pattern, forecast, plan,
cost, thresholds, errors), then the charts and the evidence: the same partial the run page shows
for each of its cells, on a page of its own that a link can point at.
"""

from __future__ import annotations

import tempfile
from typing import Any

from flask import Flask, Response, abort, current_app, jsonify, render_template, send_file, url_for

from keyramp.core import UsageError
from keyramp.results import CELL_ID_RE, export_cell
from keyramp.web._views_run import answered_detail

__all__ = ["KINDS", "add_routes", "cell_payload"]

#: What a cell's recorded data can be downloaded as: (kind, format) -> the mimetype.
KINDS = {("timeseries", "csv"): "text/csv", ("timeseries", "parquet"): "application/vnd.apache.parquet",
         ("keys", "csv"): "text/csv", ("keys", "parquet"): "application/vnd.apache.parquet"}
#: Rows written in memory up to this size, then to a temporary file (a killed hour-long cell's keys).
_SPOOL_BYTES = 32 * 1024 * 1024

_RUN_FIELDS = ("run_id", "profile_name", "status", "reason", "started_at", "ended_at")


def _cell_of(run: dict[str, Any], cell: str) -> tuple[dict[str, Any], dict[str, Any]]:
    found = next(((c, a) for c, a in zip(run["cells"], run["answer"], strict=True) if c["id"] == cell), None)
    if found is None:
        abort(404, f"no cell {cell!r} in run {run['run_id']}")
    return found


def downloads(run_id: str, cell: dict[str, Any]) -> list[dict[str, str]]:
    """The cell's data files to download, each with its URL (only the kinds it recorded)."""
    recorded = cell.get("data") or {}
    return [{"kind": kind, "format": fmt, "url": url_for("cell_data", run_id=run_id, cell=cell["id"], kind=kind,
                                                         fmt=fmt)} for kind, fmt in KINDS if recorded.get(kind)]


def cell_payload(run_id: str, cell: str) -> dict[str, Any]:
    """The cell page's JSON twin: the run it belongs to, the cell's answer row and view model, what
    its charts draw (``/runs/<id>/series/<cell>.json``) and its downloads."""
    run = answered_detail(run_id)
    view, answer = _cell_of(run, cell)
    store = current_app.extensions["keyramp_store"]
    charts = store.cell_chart_doc(run_id, cell)
    return {"run": {k: run.get(k) for k in _RUN_FIELDS}, "answer": answer, "cell": view,
            "charts": {k: charts[k] for k in ("ops", "markers", "distribution")}, "downloads": downloads(run_id, view)}


def add_routes(app: Flask) -> None:
    @app.get("/runs/<run_id>/cells/<cell>")
    def cell_page(run_id: str, cell: str) -> str:
        store = current_app.extensions["keyramp_store"]
        run = answered_detail(run_id)
        view, answer = _cell_of(run, cell)
        live = store.live(run_id) if run["status"] == "running" else None
        return render_template("cell.html", run=run, cell=view, answer=answer, live=live,
                               has_series=store.has_series(run_id))

    @app.get("/runs/<run_id>/cells/<cell>.json")
    def cell_json(run_id: str, cell: str) -> Response:
        return jsonify(cell_payload(run_id, cell))

    @app.get("/runs/<run_id>/data/<any(timeseries, keys):kind>/<cell>.<any(csv, parquet):fmt>")
    def cell_data(run_id: str, cell: str, kind: str, fmt: str) -> Response:
        store = current_app.extensions["keyramp_store"]
        if not CELL_ID_RE.match(cell):
            abort(404, f"no cell {cell!r}")
        name = f"{run_id}-{cell}-{kind}.{fmt}"
        spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115 - send_file closes it
        try:
            whole = export_cell(store.run(run_id), cell, kind, fmt, spool)
        except UsageError as exc:
            spool.close()
            abort(404, str(exc))
        if whole is not None:
            spool.close()
            return send_file(whole, mimetype=KINDS[(kind, fmt)], as_attachment=True, download_name=name,
                             conditional=True, max_age=0)
        spool.seek(0)
        return send_file(spool, mimetype=KINDS[(kind, fmt)], as_attachment=True, download_name=name, max_age=0)
