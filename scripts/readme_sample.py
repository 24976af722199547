"""The README's sample output, from a real run: ``keyramp run profiles/quickstart.toml``'s summary.

    python scripts/readme_sample.py RUN_DIR   # keep RUN_DIR's sample cells, then rewrite the README block
    python scripts/readme_sample.py           # rewrite the README block from the stored summary

The sample cells of the real run's summary.json are stored as tests/data/readme-sample-summary.json
(figures as the run recorded them); the README block between its markers is that summary rendered
by the very table ``keyramp run`` prints (``keyramp.run._report.summary_table``).
tests/test_readme_sample.py renders it again and compares, so the README never shows a column
keyramp no longer prints.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
STORED = ROOT / "tests" / "data" / "readme-sample-summary.json"
#: The rows the README shows: a hotspot and a spread design on Datastore and on Bigtable.
CELLS = ("c00-datastore-sequential", "c01-datastore-random", "c09-bigtable-sequential", "c10-bigtable-random")
BEGIN = "<!-- readme-sample: begin (scripts/readme_sample.py; tests/test_readme_sample.py) -->"
END = "<!-- readme-sample: end -->"
WIDTH = 220


def keep(run_dir: Path) -> dict[str, object]:
    """The run's summary.json with only the sample cells (every figure as the run recorded it)."""
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    missing = [c for c in CELLS if c not in summary["cells"]]
    if missing:
        raise SystemExit(f"keyramp: {run_dir}: no cell {', '.join(missing)} (a quickstart run has them)")
    summary["cells"] = {cell: summary["cells"][cell] for cell in CELLS}
    return summary


def render(summary: dict[str, object]) -> str:
    """The table as ``keyramp run`` prints it (every column), up to its caption."""
    from rich.console import Console

    from keyramp.results._summary import RunSummary
    from keyramp.run._report import summary_table

    buffer = io.StringIO()
    Console(file=buffer, width=WIDTH, color_system=None).print(summary_table(RunSummary.from_json(summary)))
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    return "\n".join(lines[:next(i for i, line in enumerate(lines) if line.startswith("└")) + 1])


def block(summary: dict[str, object]) -> str:
    return f"{BEGIN}\n```\n{render(summary)}\n```\n{END}"


def readme_block(text: str) -> str:
    return text[text.index(BEGIN):text.index(END) + len(END)]


def main(argv: list[str]) -> int:
    if argv:
        STORED.write_text(json.dumps(keep(Path(argv[0])), separators=(",", ":"), ensure_ascii=False) + "\n",
                          encoding="utf-8")
    summary = json.loads(STORED.read_text(encoding="utf-8"))
    text = README.read_text(encoding="utf-8")
    README.write_text(text.replace(readme_block(text), block(summary)), encoding="utf-8")
    print(f"README.md: the sample from {summary.get('run_id')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
