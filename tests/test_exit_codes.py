"""The README's exit-code table is the contract a CI relies on: each code is keyramp's own
(``keyramp.core._errors``), and each row names tests that exist and exercise it."""

from __future__ import annotations

import re
from pathlib import Path

from keyramp.core._errors import EXIT_CODES, EXIT_INCONCLUSIVE, KeyrampError, RunFailed, UsageError

ROOT = Path(__file__).resolve().parents[1]


def _table() -> dict[int, list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### Exit codes"):]
    rows = re.findall(r"^\| (\d+) \|.*\| (.+) \|$", section.split("\n\n", 3)[2], flags=re.MULTILINE)
    return {int(code): re.findall(r"`(tests/[^`]+)`", tests) for code, tests in rows}


def test_the_readme_lists_every_exit_code_with_the_tests_that_prove_it() -> None:
    from keyramp.run._phases import Interrupted

    table = _table()
    assert sorted(table) == sorted(EXIT_CODES) == [0, 1, 2, 3, 130]  # keyramp.core._errors holds the one table
    assert {KeyrampError.exit_code, RunFailed.exit_code, UsageError.exit_code, Interrupted.exit_code} == {1, 2, 130}
    assert EXIT_INCONCLUSIVE == 3
    for code, tests in table.items():
        assert tests, code
        for node in tests:
            path, _, name = node.partition("::")
            assert re.search(rf"^def {re.escape(name)}\(", (ROOT / path).read_text(), flags=re.MULTILINE), node
