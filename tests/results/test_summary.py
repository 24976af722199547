"""The results model (keyramp/results/_summary.py): lossless, versioned, every earlier format loads."""

from __future__ import annotations

import copy
import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from _synthetic import make_run

from keyramp.results._catalog import load_run
from keyramp.results._doc import DocError, JsonDoc
from keyramp.results._schema import COMMAND, DOC, render
from keyramp.results._summary import SUMMARY_VERSION, CellSummary, ErrorClass, OpStats, RunManifest, RunSummary

DATA = Path(__file__).parent / "data"
#: Summaries as earlier keyramps wrote them (docs/run-format.md at the time, from git history):
#: ``core`` (d767914, the first writer: ``errors_by_class`` counts alone, thresholds without a verdict,
#: no users/warm-up/namespace), ``issue28`` (workload exceptions, before load CPU and the generator verdict).
EARLIER = ("summary-core.json", "summary-issue28.json")


def _with_summary(tmp_path: Path, summary: dict[str, Any], *, fmt: str = "parquet") -> Path:
    """A real run directory (synthetic data files) whose summary.json is ``summary``."""
    run_dir = make_run(tmp_path / "results", seed=3, fmt=fmt)
    summary = {**summary, "run_id": run_dir.name}
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return run_dir


def test_a_current_summary_reads_back_unchanged_key_for_key(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, seed=1, error_rate=0.05)
    written = json.loads((run_dir / "summary.json").read_text())
    first = RunSummary.from_json(written).to_json()
    # a summary without ``schema_version`` is version 1: it gains the key, right after ``schema``, and nothing else
    assert list(first)[:2] == ["schema", "schema_version"] and first["schema_version"] == SUMMARY_VERSION
    # ... and its ``errors_by_class`` counts (the synthetic runs write them alone, as before issue 28) become objects
    for cell in written["cells"].values():
        for stats in (*cell["operations"].values(), cell["total"]):
            assert stats["errors_by_class"], "the synthetic run has errors"
            stats["errors_by_class"] = {k: {"count": n} for k, n in stats["errors_by_class"].items()}
    assert {k: v for k, v in first.items() if k != "schema_version"} == written
    # the current version is a fixed point, keys in the same order (the runner writes through it)
    assert json.dumps(RunSummary.from_json(first).to_json()) == json.dumps(first)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert json.dumps(RunManifest.from_json(manifest).to_json()) == json.dumps(manifest)


def test_typed_access_agrees_with_the_dict(tmp_path: Path) -> None:
    run = load_run(make_run(tmp_path, seed=2, error_rate=0.1))
    typed = run.summary
    assert run.ok and typed is not None and typed.run_id == run.run_id and run.raw_summary is not None
    for cell_id, cell in run.raw_summary["cells"].items():
        model = typed.cells[cell_id]
        assert model.backend == cell["backend"] and model.total is not None
        assert model.total.count == cell["total"]["count"]
        for op, stats in cell["operations"].items():
            assert model.operations[op].latency_ms is not None
            assert model.operations[op].latency_ms.p99 == stats["latency_ms"]["p99"]
            assert {k: e.count for k, e in model.operations[op].errors_by_class.items()} == {
                k: v for k, v in stats["errors_by_class"].items()}  # counts alone in the synthetic runs


@pytest.mark.parametrize("name", EARLIER)
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_every_earlier_format_loads(tmp_path: Path, name: str, fmt: str) -> None:
    original = json.loads((DATA / name).read_text())
    untouched = copy.deepcopy(original)
    run = load_run(_with_summary(tmp_path, original, fmt=fmt))
    assert run.ok, run.warnings
    typed = run.summary
    assert typed is not None and typed.schema_version == SUMMARY_VERSION
    ((cell_id, cell),) = original["cells"].items()
    model = typed.cells[cell_id]
    for op, stats in cell["operations"].items():
        classes = model.operations[op].errors_by_class
        # counts alone (the core format) and objects (later) read the same way
        assert {k: c.count for k, c in classes.items()} == {
            k: v if isinstance(v, int) else v["count"] for k, v in stats["errors_by_class"].items()}
        assert all(isinstance(c, ErrorClass) for c in classes.values())
    assert model.generator is None and model.load_cpu is None  # not recorded then: unknown, not "fine"
    assert [t.passed for t in model.thresholds] == [t["passed"] for t in cell["thresholds"]]
    # the key-space figures of every earlier format read (and write back as they were)
    assert (None if model.keyspace is None else model.keyspace.to_json()) == cell.get("keyspace")
    # upgraded once, then a fixed point; the caller's document is never edited
    again = RunSummary.from_json(typed.to_json())
    assert again.to_json() == typed.to_json()
    assert original == untouched


def test_a_newer_version_is_refused_by_name(tmp_path: Path) -> None:
    summary = json.loads((DATA / "summary-issue28.json").read_text())
    with pytest.raises(DocError, match=r"schema_version: 99 is newer"):
        RunSummary.from_json({**summary, "schema_version": 99})
    run = load_run(_with_summary(tmp_path, {**summary, "schema_version": 99}))
    assert not run.ok and "schema_version: 99 is newer" in run.unusable_reason


@pytest.mark.parametrize(("path", "value", "needle"), [
    (("operations", "place", "latency_ms", "p99"), "fast", "latency_ms.p99: expected a number, got a string"),
    (("operations", "place", "count"), None, "place.count: expected a number, got null"),
    (("total",), [1], "total: expected an object, got a list"),
    (("thresholds",), {"x": 1}, "thresholds: expected a list, got an object"),
])
def test_a_misshapen_field_is_named(tmp_path: Path, path: tuple[str, ...], value: Any, needle: str) -> None:
    summary = json.loads((DATA / "summary-issue28.json").read_text())
    target = summary["cells"]["c00-firestore-random"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(DocError, match=needle.replace(".", r"\.").replace("[", r"\[")):
        RunSummary.from_json(summary)
    run = load_run(_with_summary(tmp_path, summary))
    assert not run.ok and path[-1] in " ".join(run.warnings)  # the catalog's own check or the model's


def test_unknown_keys_survive_a_round_trip() -> None:
    summary = json.loads((DATA / "summary-issue28.json").read_text())
    summary["cells"]["c00-firestore-random"]["from_the_future"] = {"a": [1, 2]}
    summary["cells"]["c00-firestore-random"]["total"]["latency_ms"]["p9999"] = 20.0
    out = RunSummary.from_json(summary).to_json()
    assert out["cells"]["c00-firestore-random"]["from_the_future"] == {"a": [1, 2]}
    assert out["cells"]["c00-firestore-random"]["total"]["latency_ms"]["p9999"] == 20.0


def test_a_document_built_in_code_writes_only_what_it_holds() -> None:
    cell = CellSummary(backend="bigtable", operations={"read": OpStats(count=3)})
    doc = RunSummary(run_id="r", status="complete", cells={"c00": cell}).to_json()
    assert doc == {"schema": 1, "schema_version": SUMMARY_VERSION, "run_id": "r", "status": "complete",
                   "reason": None, "cells": {"c00": {"backend": "bigtable", "operations": {"read": {"count": 3}}}}}
    assert RunSummary.from_json(doc).cells["c00"].operations["read"].count == 3


def test_a_document_built_in_code_writes_what_it_was_given_in_declaration_order() -> None:
    # as the dict literal it replaces would: a field given (or assigned since) is written, even at its default
    cell = CellSummary(namespace="ns", backend="memory", operations={})
    cell.thresholds = []
    cell.generator_limited = False
    cell.target_ops_per_s = []  # the order is the declaration's, not the assignments'
    assert list(cell.to_json().items()) == [("backend", "memory"), ("namespace", "ns"), ("operations", {}),
                                            ("target_ops_per_s", []), ("generator_limited", False),
                                            ("thresholds", [])]
    assert CellSummary().to_json() == {} and CellSummary(reason=None).to_json() == {"reason": None}
    # a document read keeps its keys: a field assigned is added after them, an absent one stays absent
    read = CellSummary.from_json({"users": 3, "backend": "memory"})
    read.thresholds = []
    assert list(read.to_json()) == ["users", "backend", "thresholds"]
    assert CellSummary.from_json({"users": 3}).to_json() == {"users": 3}


def _docs(root: type[JsonDoc]) -> set[type[JsonDoc]]:
    seen: set[type[JsonDoc]] = set()
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for f in fields(cls):
            text = str(f.type)
            todo += [c for c in JsonDoc.__subclasses__() if c.__name__ in text.replace("[", " ").replace("]", " ")
                     .replace("|", " ").replace(",", " ").split()]
    return seen


def test_the_checked_in_json_schema_is_generated_from_the_model() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), f"{DOC.name} is out of date: run `{COMMAND}`"
    schema = json.loads(render())
    documents = _docs(RunSummary)
    assert {"CellSummary", "OpStats", "Latency", "GeneratorVerdict", "LoadCpu", "ThresholdRow"} <= {
        c.__name__ for c in documents}
    for cls in documents:
        props = schema["properties"] if cls is RunSummary else schema["$defs"][cls.__name__]["properties"]
        assert set(props) == {f.name for f in fields(cls) if f.name not in ("extra", "_keys")}, cls.__name__


def test_a_missing_required_field_is_named() -> None:
    summary = json.loads((DATA / "summary-core.json").read_text())
    del summary["cells"]["c00-datastore-sequential"]["thresholds"][0]["passed"]
    with pytest.raises(DocError, match=r"c00-datastore-sequential\.thresholds\[0\]: missing passed"):
        RunSummary.from_json(summary)


def test_a_copy_tracks_its_own_assignments() -> None:
    # what a document built in code writes is per document: assigning on a copy leaves the original alone
    original = CellSummary(backend="x")
    twin = copy.copy(original)
    twin.reason = None
    assert original.to_json() == {"backend": "x"} and twin.to_json() == {"backend": "x", "reason": None}
    read = CellSummary.from_json({"backend": "y"})
    read.status = None  # a read document writes an assignment after its own keys
    assert read.to_json() == {"backend": "y", "status": None}
