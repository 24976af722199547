"""A bad ``scale`` or ``time_scale`` of the store-like target (keyramp/cli/_args.py, the profile's
``[emulator]``): one line naming the file and field (or the flag), exit 2, before any load — no
emulator or proxy started, no run directory written. 0 is refused, never read as "the default"."""

from __future__ import annotations

from pathlib import Path

import pytest

from keyramp.cli._main import main
from tests._runs import keyramp_each

BAD_NUMBERS = ("0", "-1", "inf", "nan", "abc")


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse exits itself
        return int(exc.code or 0)


@pytest.mark.parametrize("argv", [
    *(["emulators", "up", "--fidelity", "store", "--scale", v] for v in BAD_NUMBERS),
    *(["emulators", "up", "--fidelity", "store", "--time-scale", v] for v in BAD_NUMBERS),
    ["emulators", "up", "--fidelity", "store", "--nodes", "0"],
    *(["plan", "no-such-run", "--verify", "--scale", v] for v in ("0", "inf")),
    *(["plan", "no-such-run", "--verify", "--time-scale", v] for v in ("-3", "nan")),
], ids=lambda argv: " ".join(argv[:1] + argv[-2:]))
def test_a_bad_flag_is_one_line_naming_it_and_exit_2_before_anything_starts(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state"
    extra = ["--state-dir", str(state)] if argv[0] == "emulators" else ["--results", str(tmp_path)]
    assert _exit([*argv, *extra]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and f"argument {argv[-2]}: " in err[0] and argv[-1] in err[0], err
    assert not state.exists() and list(tmp_path.iterdir()) == []  # nothing started, nothing recorded


PROFILE = """name = "bad-model"
backend = "firestore"
duration = "2s"

[schedule]
kind = "constant"
rate = 10

[emulator]
fidelity = "store"
{field} = {value}
"""


BAD_FIELDS = [("scale", "0"), ("scale", "-2"), ("scale", "inf"), ("scale", "nan"), ("scale", '"x"'),
              ("time_scale", "0"), ("time_scale", "-1"), ("time_scale", "inf"), ("time_scale", '"fast"')]


def test_a_bad_scale_in_a_profile_is_one_line_naming_the_file_and_field_and_exit_2_before_any_load(
        tmp_path: Path) -> None:
    """``keyramp run`` on each bad profile (one fresh interpreter for all: ``run`` imports Locust, which
    patches ``ssl``, so it cannot run inside a test process that already has)."""
    profiles = []
    for n, (field, value) in enumerate(BAD_FIELDS):
        profile = tmp_path / f"bad-{n}.toml"
        profile.write_text(PROFILE.format(field=field, value=value), encoding="utf-8")
        profiles.append(profile)
    out = tmp_path / "runs"
    done = keyramp_each([["run", str(p), "--out", str(out), "--quiet"] for p in profiles])
    for profile, (field, _), result in zip(profiles, BAD_FIELDS, done, strict=True):
        err = [line for line in result["stderr"].splitlines() if line.strip()]
        assert result["code"] == 2 and len(err) == 1, (field, result)
        assert str(profile) in err[0] and f"emulator.{field}" in err[0], err
    assert not out.exists() or list(out.iterdir()) == []  # before any load: no run directory
