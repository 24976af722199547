"""The flags of keyramp's own subprocess entry points (``keyramp/core/_flags.py``): ``python -m
keyramp.run.worker`` and ``python -m keyramp.targets.netem`` live below the CLI, so they read
their command line without argparse; a bad one is one line naming the program and flag, exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from keyramp.core._errors import UsageError
from keyramp.core._flags import endpoint, parse_flags

_VALUES = {"target": endpoint, "delay-ms": float}


def test_values_switches_and_defaults() -> None:
    flags = parse_flags(["--delay-ms", "2.5", "--target", "127.0.0.1:8086", "--quiet"], prog="p", values=_VALUES,
                        switches=frozenset({"quiet", "loud"}), required=frozenset({"target"}))
    assert flags == {"delay_ms": 2.5, "target": ("127.0.0.1", 8086), "quiet": True, "loud": False}


@pytest.mark.parametrize(("argv", "message"), [
    (["--delay-ms", "1"], "p: --target is required"),
    (["--target"], "p: --target needs a value"),
    (["--target", "nowhere"], "p: --target: expected HOST:PORT, got 'nowhere'"),
    (["--target", "h:1", "--delay-ms", "soon"], "p: --delay-ms: could not convert string to float: 'soon'"),
    (["--target", "h:1", "extra"], "p: unknown argument 'extra' (flags: --target, --delay-ms)"),
    (["--verbose"], "p: unknown argument '--verbose' (flags: --target, --delay-ms)"),
])
def test_a_bad_command_line_is_one_usage_error(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse_flags(argv, prog="p", values=_VALUES, required=frozenset({"target"}))
    assert str(exc.value) == message


def test_the_entry_points_refuse_in_one_line_with_exit_2() -> None:
    for module, argv, message in (
        ("keyramp.targets.netem", ["--delay-ms", "-1"], "--delay-ms: must be >= 0 ms, got -1"),
        ("keyramp.run.worker", ["--master-host", "h"], "--master-port is required"),
    ):
        out = subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, timeout=60,
                             check=False)
        assert out.returncode == 2, out.stderr
        assert out.stderr == f"keyramp: python -m {module}: {message}\n"
