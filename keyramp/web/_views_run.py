"""One run (``/runs/<id>``, ``/runs/<id>.json``), its chart series and key-space files.

The HTML page carries the manifest, summary tables and key-space figures only; each cell's
charts fetch ``/runs/<id>/series/<cell>.json`` once the page is up, so a 1-hour run's page
never waits for its time series to be read. ``/runs/<id>.json`` is the complete twin.

A run in progress: the page polls ``/runs/<id>/live.json`` (current cell and step, finished
cells), re-fetches the series of the running cell (ETag: unchanged data costs a 304) and
swaps in a cell's summary partial (``/runs/<id>/cells/<cell>.html``) and the head partial
(``/runs/<id>/head.html``) when they change — no reload.

A run planned in the background (``_planner``): the page polls ``/runs/<id>/plans.json`` (the
status, ``done`` of ``total`` cells) and swaps in the answer (``/runs/<id>/answer.html``) and
each cell's plan (``/runs/<id>/plans/<cell>.html``) as they arrive.
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
from werkzeug.wrappers import Response as BaseResponse

from keyramp.web._answer import with_plans
from keyramp.web._plans import PLAN_FILE, RunPlans, run_plans

__all__ = ["add_routes", "answered_detail", "run_payload"]


def _plans(run_id: str) -> RunPlans:
    """The run's plans: its own or saved ones (``_plans``; cached until summary.json or plan.json
    change), else the background planner's so far (queued on the first view, never waited for)."""
    store = current_app.extensions["keyramp_store"]
    path = store.run_path(run_id)
    plans: RunPlans | None = store.cache.get(("plans", str(path)),
                                             (path / "manifest.json", path / "summary.json", path / PLAN_FILE),
                                             lambda: run_plans(store.run(run_id)))
    return plans if plans is not None else current_app.extensions["keyramp_planner"].plans(store.run(run_id))


def answered_detail(run_id: str) -> dict[str, Any]:
    """The run's view model with its answer rows and each cell's plan (or how far its planning is)."""
    return with_plans(current_app.extensions["keyramp_store"].detail(run_id), _plans(run_id))


def _cell(run: dict[str, Any], cell: str) -> dict[str, Any]:
    found = next((c for c in run["cells"] if c["id"] == cell), None)
    if found is None:
        abort(404, f"no cell {cell!r} in run {run['run_id']}")
    return found


def run_payload(run_id: str) -> dict[str, Any]:
    """The run page's JSON twin: the view model, and per cell what its charts draw (the series with
    the thresholds on them, the markers, the latency distribution): ``/runs/<id>/series/<cell>.json``."""
    store = current_app.extensions["keyramp_store"]
    charts = {cell: store.cell_chart_doc(run_id, cell) for cell in store.series(run_id)}
    return {"run": answered_detail(run_id), "series": {cell: doc["ops"] for cell, doc in charts.items()},
            "markers": {cell: doc["markers"] for cell, doc in charts.items()},
            "distribution": {cell: doc["distribution"] for cell, doc in charts.items()}}


def add_routes(app: Flask) -> None:
    @app.get("/runs/<run_id>")
    def run_page(run_id: str) -> str:
        store = current_app.extensions["keyramp_store"]
        run = answered_detail(run_id)
        live = store.live(run_id) if run["status"] == "running" else None
        return render_template("run.html", run=run, has_series=store.has_series(run_id), live=live)

    @app.get("/runs/<run_id>.json")
    def run_json(run_id: str) -> Response:
        return jsonify(run_payload(run_id))

    @app.get("/runs/<run_id>/series/<cell>.json")
    def cell_series_json(run_id: str, cell: str) -> BaseResponse:
        store = current_app.extensions["keyramp_store"]
        body, etag = store.cell_series_json(run_id, cell)
        resp = Response(body, mimetype="application/json")
        resp.set_etag(etag)
        # revalidated on every view (a running run's file changes), answered 304 while unchanged
        resp.cache_control.no_cache = True
        return resp.make_conditional(request)

    @app.get("/runs/<run_id>/live.json")
    def run_live_json(run_id: str) -> Response:
        resp = jsonify(current_app.extensions["keyramp_store"].live(run_id))
        resp.cache_control.no_store = True
        return resp

    @app.get("/runs/<run_id>/head.html")
    def run_head_part(run_id: str) -> str:
        store = current_app.extensions["keyramp_store"]
        return render_template("partials/run_head.html", run=answered_detail(run_id), live=store.live(run_id))

    @app.get("/runs/<run_id>/cells/<cell>.html")
    def run_cell_part(run_id: str, cell: str) -> str:
        run = answered_detail(run_id)
        return render_template("partials/cell_summary.html", run=run, cell=_cell(run, cell))

    @app.get("/runs/<run_id>/plans.json")
    def run_plans_json(run_id: str) -> Response:
        resp = jsonify({"run_id": run_id, **_plans(run_id).to_json()})
        resp.cache_control.no_store = True
        return resp

    @app.get("/runs/<run_id>/answer.html")
    def run_answer_part(run_id: str) -> str:
        return render_template("partials/answer.html", run=answered_detail(run_id))

    @app.get("/runs/<run_id>/plans/<cell>.html")
    def run_plan_part(run_id: str, cell: str) -> str:
        run = answered_detail(run_id)
        return render_template("partials/plan.html", run=run, cell=_cell(run, cell))

    @app.get("/runs/<run_id>/keyspace/<cell>.<ext>")
    def keyspace_file(run_id: str, cell: str, ext: str) -> Response:
        store = current_app.extensions["keyramp_store"]
        path = store.keyspace_file(store.run_path(run_id), cell, ext)
        if path is None and ext == "json":  # no `keyramp keyspace` file: computed from the sampled keys
            body = store.keyspace_doc(run_id, cell)
            if body is None:
                abort(404, f"no sampled keys for cell {cell!r}")
            return Response(body, mimetype="application/json")
        if path is None:
            abort(404, f"no key-space {ext} for cell {cell!r}")
        mimetype = "image/png" if ext == "png" else "application/json"
        # conditional=True: browsers revalidate with If-Modified-Since instead of re-downloading
        return send_file(path, mimetype=mimetype, conditional=True, max_age=0)
