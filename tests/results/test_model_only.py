"""The results model is the only way a run's documents are read (issue 29).

Three properties that break when a reader goes back to dicts: a loaded ``Run`` hands out only
typed documents, and a cell declares its key-space, forecast, plan and probe parts as model
types (their readers: tests/results/test_subdocs.py, test_forecast_doc.py, test_probe_doc.py); outside
``keyramp/results/`` nothing touches the parsed files (``raw_summary``/``raw_manifest``); and
outside ``keyramp/results/`` no function parses JSON while naming one of the run directory's
documents, which is how a reader that bypasses the model looks.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from _synthetic import make_run

from keyramp.results._catalog import load_run
from keyramp.results._doc import JsonDoc
from keyramp.results._summary import CellSummary, RunManifest, RunSummary

PACKAGE = Path(__file__).resolve().parents[2] / "keyramp"
DOCUMENTS = ("summary.json", "manifest.json", "live.json", "plan.json")
RAW = {"raw_summary", "raw_manifest"}


def _outside_results(package: Path) -> list[Path]:
    return [p for p in sorted(package.rglob("*.py")) if package / "results" not in p.parents]


def raw_readers(package: Path = PACKAGE) -> list[str]:
    """module:line of every ``.raw_summary``/``.raw_manifest`` outside results/."""
    found = []
    for path in _outside_results(package):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in RAW:
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}")
    return found


def _parses_json(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("load", "loads")
               and isinstance(n.func.value, ast.Name) and n.func.value.id == "json" for n in ast.walk(node))


def _names_a_document(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in DOCUMENTS
               for n in ast.walk(node))


def dict_readers(package: Path = PACKAGE) -> list[str]:
    """module:function of every function outside results/ that parses JSON and names a run
    document as a path (a message naming one is an f-string part, not a whole constant)."""
    found = []
    for path in _outside_results(package):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _parses_json(node) \
                    and _names_a_document(node):
                found.append(f"{path.relative_to(package.parent)}:{node.name}")
    return found


def test_nothing_outside_results_reads_the_parsed_files() -> None:
    assert raw_readers() == []


def test_nothing_outside_results_parses_a_run_document_itself() -> None:
    assert dict_readers() == []


def test_the_scan_sees_a_reader_that_bypasses_the_model(tmp_path: Path) -> None:
    # The scans above must be able to fail: a module written the old way is found by both.
    package = tmp_path / "keyramp"
    for rel, text in (("web/_bad.py", 'import json\n\ndef cells(run):\n    raw = run.raw_summary\n'
                                      '    return json.loads((run.path / "summary.json").read_text())["cells"]\n'),
                      ("results/_fine.py", 'import json\n\ndef read(run):\n    return run.raw_summary, '
                                           'json.loads("manifest.json")\n')):
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text)
    assert raw_readers(package) == ["keyramp/web/_bad.py:4"]
    assert dict_readers(package) == ["keyramp/web/_bad.py:cells"]


def test_a_cells_sub_documents_are_declared_types() -> None:
    hints = typing.get_type_hints(CellSummary)
    for name in ("keyspace", "forecast", "plan", "probe", "total", "generator", "load_cpu"):
        declared = [t for t in typing.get_args(hints[name]) if t is not type(None)]
        assert len(declared) == 1 and issubclass(declared[0], JsonDoc), (name, hints[name])


def test_a_loaded_run_hands_out_only_typed_documents(tmp_path: Path) -> None:
    run = load_run(make_run(tmp_path, seed=11))
    assert isinstance(run.summary, RunSummary) and isinstance(run.manifest, RunManifest)
    assert run.cells and all(isinstance(c, CellSummary) for c in run.cells.values())
    assert run.cell("no-such-cell") == CellSummary()
    for cell in run.cells.values():
        assert cell.total is not None and all(isinstance(v, JsonDoc) for v in cell.operations.values())
