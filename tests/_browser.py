"""Helpers of the browser tests (fixtures: tests/web/conftest.py): Debian's chromium, the UI
served from a thread, screenshots into test-artifacts/ (git-ignored)."""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["ARTIFACTS", "CHROMIUM", "serve_ui", "shot"]

CHROMIUM = shutil.which("chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


@contextlib.contextmanager
def serve_ui(results: Path) -> Iterator[str]:
    """``keyramp ui`` over ``results`` on a free loopback port (a thread of this process)."""
    from werkzeug.serving import make_server

    from keyramp.web import create_app

    server = make_server("127.0.0.1", 0, create_app(results), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
