"""The README's sample output is a real run's, rendered by today's table (issue 39: it showed a
``hot 1%*`` column keyramp no longer printed). scripts/readme_sample.py writes the block from the
stored summary (tests/data/readme-sample-summary.json, the sample cells of a real quickstart run)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("readme_sample", ROOT / "scripts" / "readme_sample.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_sample_is_todays_table_of_a_real_run() -> None:
    import json

    script = _script()
    summary = json.loads(script.STORED.read_text(encoding="utf-8"))
    assert list(summary["cells"]) == list(script.CELLS)
    # a real run: what keyramp run wrote (a manifest-less synthetic summary has none of these)
    for cell in summary["cells"].values():
        assert cell["load_cpu"]["processes"] >= 1 and cell["generator"]["reason"] and cell["keyspace"]["samples"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert script.readme_block(readme) == script.block(summary), "run: python scripts/readme_sample.py"
    header = next(line for line in script.render(summary).splitlines() if "cell" in line and "ops/s" in line)
    assert "errors" in header and "key space*" in header and "hot 1%" not in readme
