"""``keyramp ui [--results DIR] [--host H] [--port N]``: serve the web UI (``keyramp.web``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from keyramp.web import close_ui, ui_server

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``keyramp ui [--results DIR] [--host H] [--port N]``."""
    parser = subparsers.add_parser("ui", help="browse runs and comparisons in a local web UI",
                                   description="Serve a read-only web UI over a results directory.")
    parser.add_argument("--results", default="results", help="results directory (default: ./results)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, local only)")
    parser.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0 picks a free one)")
    parser.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    server = ui_server(args.results, host=args.host, port=args.port)
    print(f"keyramp ui: http://{args.host}:{server.server_port}/  (results: {Path(args.results)}; Ctrl-C to stop)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        close_ui(server)
    return 0
