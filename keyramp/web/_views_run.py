"""One run (``/runs/<id>``, ``/runs/<id>.json``) and its key-space files."""

from __future__ import annotations

from typing import Any

from flask import Flask, abort, current_app, jsonify, render_template, send_file

__all__ = ["add_routes", "run_payload"]


def run_payload(run_id: str) -> dict[str, Any]:
    store = current_app.extensions["keyramp_store"]
    detail = store.detail(run_id)
    return {"run": detail, "series": store.series(run_id)}


def add_routes(app: Flask) -> None:
    @app.get("/runs/<run_id>")
    def run_page(run_id: str) -> str:
        payload = run_payload(run_id)
        return render_template("run.html", run=payload["run"], series=payload["series"])

    @app.get("/runs/<run_id>.json")
    def run_json(run_id: str):  # type: ignore[no-untyped-def]
        return jsonify(run_payload(run_id))

    @app.get("/runs/<run_id>/keyspace/<cell>.<ext>")
    def keyspace_file(run_id: str, cell: str, ext: str):  # type: ignore[no-untyped-def]
        store = current_app.extensions["keyramp_store"]
        path = store.keyspace_file(store.run_path(run_id), cell, ext)
        if path is None:
            abort(404, f"no key-space {ext} for cell {cell!r}")
        mimetype = "image/png" if ext == "png" else "application/json"
        # conditional=True: browsers revalidate with If-Modified-Since instead of re-downloading
        return send_file(path, mimetype=mimetype, conditional=True, max_age=0)
