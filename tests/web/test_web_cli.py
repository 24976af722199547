"""`keyramp ui` argument wiring."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from keyramp.cli._ui import register
from keyramp.core._errors import UsageError


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="keyramp")
    register(parser.add_subparsers(dest="verb"))
    return parser.parse_args(["ui", *argv])


def test_defaults_bind_localhost_only() -> None:
    args = _parse()
    assert args.host == "127.0.0.1" and args.results == "results" and callable(args.func)


def test_options() -> None:
    args = _parse("--results", "r", "--host", "0.0.0.0", "--port", "9000")
    assert (args.results, args.host, args.port) == ("r", "0.0.0.0", 9000)


def test_missing_results_dir_is_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="results directory not found"):
        _parse("--results", str(tmp_path / "nope")).func(_parse("--results", str(tmp_path / "nope")))
    with pytest.raises(UsageError, match="--port"):
        args = _parse("--results", str(tmp_path), "--port", "70000")
        args.func(args)


def test_warm_up_compiles_every_template_before_serving(tmp_path: Path) -> None:
    from keyramp.web import create_app
    from keyramp.web._app import warm_up

    app = create_app(tmp_path)
    assert len(app.jinja_env.cache) == 0
    warm_up(app)
    names = {key[1] for key in app.jinja_env.cache}
    assert {"run.html", "runs.html", "compare.html", "partials/latency_table.html"} <= names
