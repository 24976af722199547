"""keyramp's web UI: a small read-only Flask app over a results directory.

Every HTML page has a JSON twin built from the same view model (Datasette's pattern):
``/runs`` + ``/runs.json``, ``/runs/<id>`` + ``/runs/<id>.json``, ``/compare`` +
``/compare.json``. Charts use the vendored uPlot served from ``/static`` (works offline).
Flask is imported lazily so that other ``keyramp`` verbs do not pay for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from keyramp.core import UsageError

if TYPE_CHECKING:
    from flask import Flask
    from werkzeug.serving import BaseWSGIServer


def create_app(results_dir: str | Path) -> Flask:
    """The app for one results directory (read-only)."""
    from keyramp.web._app import create_app as _create  # deferred: start-up cost (flask)

    return _create(results_dir)


def ui_server(results_dir: str | Path, *, host: str = "127.0.0.1", port: int = 8765) -> BaseWSGIServer:
    """The UI's HTTP server over ``results_dir``, bound (port 0: a free one) with every template
    compiled; the caller runs ``serve_forever()`` and closes it (``keyramp ui``)."""
    results = Path(results_dir)
    if not results.is_dir():
        raise UsageError(f"results directory not found: {results}")
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {port}")
    from werkzeug.serving import make_server  # deferred: start-up cost (werkzeug)

    from keyramp.web._app import warm_up  # deferred: start-up cost (flask)

    app = create_app(results)
    warm_up(app)
    return make_server(host, port, app, threaded=True)


def close_ui(server: BaseWSGIServer) -> None:
    """Close ``ui_server``'s socket and stop its app's background planning (between two cells: the
    planner's thread is a daemon, so nothing outlives the process either way)."""
    server.server_close()
    planner = getattr(server.app, "extensions", {}).get("keyramp_planner")
    if planner is not None:
        planner.close()


if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
