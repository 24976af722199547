"""keyramp's web UI: a small read-only Flask app over a results directory.

Every HTML page has a JSON twin built from the same view model (Datasette's pattern):
``/runs`` + ``/runs.json``, ``/runs/<id>`` + ``/runs/<id>.json``, ``/compare`` +
``/compare.json``. Charts use the vendored uPlot served from ``/static`` (works offline).
Flask is imported lazily so that other ``keyramp`` verbs do not pay for it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from keyramp._errors import UsageError

if TYPE_CHECKING:
    from flask import Flask

__all__ = ["create_app", "register"]


def create_app(results_dir: str | Path) -> Flask:
    """The app for one results directory (read-only)."""
    from keyramp.web._app import create_app as _create

    return _create(results_dir)


def _serve(args: argparse.Namespace) -> int:
    results = Path(args.results)
    if not results.is_dir():
        raise UsageError(f"results directory not found: {results}")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    from werkzeug.serving import make_server

    from keyramp.web._app import warm_up

    app = create_app(results)
    warm_up(app)
    server = make_server(args.host, args.port, app, threaded=True)
    print(f"keyramp ui: http://{args.host}:{server.server_port}/  (results: {results}; Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``keyramp ui [--results DIR] [--host H] [--port N]``."""
    parser = subparsers.add_parser("ui", help="browse runs and comparisons in a local web UI",
                                   description="Serve a read-only web UI over a results directory.")
    parser.add_argument("--results", default="results", help="results directory (default: ./results)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, local only)")
    parser.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0 picks a free one)")
    parser.set_defaults(func=_serve)
