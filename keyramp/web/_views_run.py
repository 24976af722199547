"""One run (``/runs/<id>``, ``/runs/<id>.json``), its chart series and key-space files.

The HTML page carries the manifest, summary tables and key-space figures only; each cell's
charts fetch ``/runs/<id>/series/<cell>.json`` once the page is up, so a 1-hour run's page
never waits for its time series to be read. ``/runs/<id>.json`` is the complete twin.
"""

from __future__ import annotations

from typing import Any

from flask import (
    Flask,
    Response,
    abort,
    current_app,
    jsonify,
    render_template,
    request,
    send_file,
)

__all__ = ["add_routes", "run_payload"]


def run_payload(run_id: str) -> dict[str, Any]:
    store = current_app.extensions["keyramp_store"]
    detail = store.detail(run_id)
    return {"run": detail, "series": store.series(run_id)}


def add_routes(app: Flask) -> None:
    @app.get("/runs/<run_id>")
    def run_page(run_id: str) -> str:
        store = current_app.extensions["keyramp_store"]
        return render_template("run.html", run=store.detail(run_id), has_series=store.has_series(run_id))

    @app.get("/runs/<run_id>.json")
    def run_json(run_id: str):  # type: ignore[no-untyped-def]
        return jsonify(run_payload(run_id))

    @app.get("/runs/<run_id>/series/<cell>.json")
    def cell_series_json(run_id: str, cell: str) -> Response:
        store = current_app.extensions["keyramp_store"]
        body, etag = store.cell_series_json(run_id, cell)
        resp = Response(body, mimetype="application/json")
        resp.set_etag(etag)
        # revalidated on every view (a running run's file changes), answered 304 while unchanged
        resp.cache_control.no_cache = True
        return resp.make_conditional(request)

    @app.get("/runs/<run_id>/keyspace/<cell>.<ext>")
    def keyspace_file(run_id: str, cell: str, ext: str):  # type: ignore[no-untyped-def]
        store = current_app.extensions["keyramp_store"]
        path = store.keyspace_file(store.run_path(run_id), cell, ext)
        if path is None:
            abort(404, f"no key-space {ext} for cell {cell!r}")
        mimetype = "image/png" if ext == "png" else "application/json"
        # conditional=True: browsers revalidate with If-Modified-Since instead of re-downloading
        return send_file(path, mimetype=mimetype, conditional=True, max_age=0)
