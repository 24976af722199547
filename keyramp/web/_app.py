"""The Flask app: routes, security headers, error pages, template filters."""

from __future__ import annotations

from pathlib import Path

from flask import Flask, Response, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from keyramp.core import UsageError, __version__, fmt, scale_doc
from keyramp.web import _views_cell, _views_compare, _views_run, _views_runs
from keyramp.web._planner import BackgroundPlanner
from keyramp.web._store import RunStore

__all__ = ["CSP", "create_app", "warm_up"]


# No inline script or style anywhere: page JS lives in static/keyramp.js and chart data in
# <script type="application/json"> blocks, which CSP does not execute.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def create_app(results_dir: str | Path) -> Flask:
    """The app for one results directory (read-only)."""
    app = Flask(__name__, static_folder="static", template_folder="templates")
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions["keyramp_store"] = RunStore(Path(results_dir))
    # plans the runs that have a [launch] and no plan, off the request thread (web/_planner.py)
    app.extensions["keyramp_planner"] = BackgroundPlanner()
    app.jinja_env.globals["keyramp_version"] = __version__
    app.jinja_env.globals["heat_scale"] = scale_doc()  # one heatmap colour scale, PNG and canvas
    app.jinja_env.filters.update(_filters())

    _views_runs.add_routes(app)
    _views_run.add_routes(app)
    _views_cell.add_routes(app)
    _views_compare.add_routes(app)

    @app.after_request
    def _headers(resp: Response) -> Response:
        resp.headers["Content-Security-Policy"] = CSP
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["X-Frame-Options"] = "DENY"
        return resp

    @app.errorhandler(UsageError)
    def _usage(exc: UsageError) -> tuple[Response | str, int]:
        return _error(400, str(exc))

    @app.errorhandler(HTTPException)
    def _http(exc: HTTPException) -> tuple[Response | str, int]:
        return _error(exc.code or 500, exc.description or exc.name)

    return app


def warm_up(app: Flask) -> None:
    """Compile every template now (~60 ms) instead of in the first visitor's request;
    ``keyramp ui`` calls this before it starts serving."""
    for name in app.jinja_env.list_templates(extensions=["html"]):
        app.jinja_env.get_template(name)


def _error(code: int, message: str) -> tuple[Response | str, int]:
    if request.path.endswith(".json"):
        return jsonify({"error": message, "status": code}), code
    return render_template("error.html", code=code, message=message), code


def _filters() -> dict[str, object]:
    """Template filters: the one number format (``keyramp.core._format``), so a figure reads the same
    on every page as in the terminal and ``keyramp compare``."""

    # ``digits`` only for templates written before the one format: 0 asks for a whole count,
    # any other value reads as the one format (partials/forecast.html, until it is rewritten)
    def fmt_num(value: object, digits: int | None = None) -> str:
        return fmt.count(value) if digits == 0 else fmt.number(value)

    def fmt_pct(value: object, digits: int | None = None) -> str:
        return fmt.percent(value)

    def fmt_time(value: object) -> str:
        if not isinstance(value, str):
            return fmt.MISSING
        return value.replace("T", " ").rstrip("Z")[:19]

    return {"num": fmt_num, "pct": fmt_pct, "count": fmt.count, "ratio": fmt.ratio, "when": fmt_time, "ms": fmt.ms,
            "ops": fmt.ops_per_s, "duration": fmt.duration, "plural": fmt.plural}
