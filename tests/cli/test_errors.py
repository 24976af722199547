"""One prefix for every error line (issue 39): ``keyramp: `` — printed in one place
(``keyramp.cli._output.print_error``), whatever the verb and the kind of bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from keyramp.cli._main import main
from keyramp.cli._output import error_line


def _bad_inputs(tmp_path: Path) -> list[list[str]]:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nbackend = "datastor"\n', encoding="utf-8")
    typo = tmp_path / "typo.toml"
    typo.write_text('name = "x"\nbackend = "datastore"\nduraton = "5s"\n', encoding="utf-8")
    return [
        ["lint", str(bad)],  # lint's own file errors were printed bare
        ["lint", str(typo), str(tmp_path / "missing.toml")],
        ["compare", "20200101T000000000Z-nope-abcd", "--results", str(tmp_path)],
        ["list", "--since", "yesterday", "--results", str(tmp_path)],
        ["forecast", str(tmp_path / "no-run")],
        ["compare", "--bogus-flag"],  # argparse's
    ]


def test_every_error_line_starts_with_the_one_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in _bad_inputs(tmp_path):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse exits itself
            code = int(exc.code or 0)
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and lines, argv
        assert all(line.startswith("keyramp: ") for line in lines), (argv, err)
    assert error_line("keyramp: x") == "keyramp: x" and error_line("x") == "keyramp: x"  # never doubled
