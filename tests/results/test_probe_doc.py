"""The probe sub-document (``CellSummary.probe``) through the results model: every probe's
result reads into its own part and writes back key for key; a wrong shape names the field."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from _memory import MemoryStore, memory_spec

from keyramp.backends import BACKENDS, Target, registered
from keyramp.probes import PROBES, run_probe
from keyramp.results._doc import DocError
from keyramp.results._probe_doc import (
    PROBE_PARTS,
    ContentionFigures,
    HygieneFigures,
    ProbeFigures,
    ProbeResult,
)
from keyramp.results._summary import RunSummary

#: One result per probe, shaped as each probe returns it (keyramp/probes/*).
RESULTS: dict[str, dict[str, Any]] = {
    "consistency": {"attempts": 100, "emulator_consistency": 0.5, "expected_stale_rate": 0.5, "global_stale": 50,
                    "global_stale_rate": 0.5, "ancestor_stale_rate": None, "lookup_stale_rate": 0.0,
                    "queries_until_visible": {"mean": 1.9, "max": 7, "never_within_cap": 0}},
    "contention": {"threads": 8, "keys": 1, "assign": "per-thread", "same_group": False, "op": "transaction",
                   "seconds": 2.0, "attempts": 60, "committed": 10, "committed_per_s": 5.0, "aborted": 50,
                   "abort_rate": 0.8333, "errors": {"ABORTED": 50},
                   "error_samples": {"ABORTED": {"class": "ABORTED", "type": "Aborted", "message": "contention"}},
                   "latency_ms": {"p50": 1.0, "p99": None}},
    "offset_cursor": {"entities": 1000, "page": 10, "page_size": 20, "offset": 200, "offset_ms": 12.5,
                      "cursor_ms": 3.0, "offset_median_ms": 13.0, "cursor_median_ms": 3.5, "trials": 2,
                      "offset_trials_ms": [12.5, 13], "cursor_trials_ms": [3.0, 3.5], "cursor_page_rows": 20,
                      "ratio": 4.17},
    "projection": {"entities": 300, "payload_bytes": 4000, "full_ms": 40.0, "keys_only_ms": 10.0,
                   "projection_ms": 12.0, "full_vs_keys_only": 4.0, "full_vs_projection": 3.33},
    "deleted_range": {"entities": 600, "deleted": 500, "head_query_ms": 5.0, "stored_start_ms": 4.8, "ratio": 1.04},
    "batch": {"entities": 200, "batch_size": 50, "single_write_per_s": 100.0, "batch_write_per_s": 900.0,
              "single_read_per_s": 200.0, "batch_read_per_s": 1500.0, "write_speedup": 9.0, "read_speedup": 7.5},
    "fanout": {"properties": 40, "writes": 20, "one_property_ms": 1.0, "indexed_ms": 5.0, "unindexed_ms": 1.5,
               "indexed_vs_unindexed": 3.33},
    "hygiene": {"cases": [{"case": "valid key (control)", "accepted": True},
                          {"case": "key name '..'", "accepted": False, "class": "INVALID_ARGUMENT",
                           "type": "InvalidArgument", "message": "bad name"}], "rejected": 1},
}


def test_every_probe_has_its_part() -> None:
    assert set(PROBE_PARTS) == set(PROBES) == set(RESULTS)


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_each_probe_reads_into_its_part_and_back_key_for_key(name: str) -> None:
    doc = {"name": name, "backend": "datastore", "params": {"max_s": 5.0}, "result": RESULTS[name], "later": 1}
    before = copy.deepcopy(doc)
    probe = ProbeResult.from_json(doc)
    assert type(probe.result) is PROBE_PARTS[name]
    assert not probe.result.extra  # the part declares every figure its probe writes
    assert json.dumps(probe.to_json()) == json.dumps(before) and doc == before  # order kept, input untouched


#: Small parameters: each probe on the in-memory test store in milliseconds (contention: 0.1 s).
_SMALL: dict[str, dict[str, Any]] = {
    "consistency": {"attempts": 5, "max_requery": 2}, "contention": {"threads": 2, "max_s": 0.1, "op": "increment"},
    "projection": {"entities": 20, "payload_bytes": 64, "repeat": 2},
    "deleted_range": {"entities": 30, "deleted": 20, "limit": 5, "repeat": 2},
    "batch": {"entities": 20, "batch_size": 5}, "fanout": {}, "hygiene": {},
}


def test_what_each_probe_really_returns_is_declared_and_written_back_unchanged() -> None:
    """The probes' own output (not a hand-written copy of it), as the runner reads it: a figure
    a probe adds without declaring it in its part fails here (it would land in ``extra``)."""
    with registered(memory_spec(MemoryStore())):
        for name, params in _SMALL.items():
            target = Target(backend="memory", project="p", endpoint="mem", namespace=f"ns-{name}", timeout_s=5.0)
            out = run_probe(name, backend_class=BACKENDS["memory"], target=target, params=params, budget_s=5)
            probe = ProbeResult.from_json(out)
            assert probe.to_json() == out, name
            if name == "fanout":  # the test store has no secondary indexes: the probe says why
                assert probe.result is None and probe.unsupported
                continue
            assert type(probe.result) is PROBE_PARTS[name] and not probe.result.extra, (name, out)


def test_typed_figures_and_errors() -> None:
    contention = ProbeResult.from_json({"name": "contention", "result": RESULTS["contention"]}).result
    assert isinstance(contention, ContentionFigures)
    assert contention.latency_ms is not None and contention.latency_ms.p99 is None
    assert contention.error_samples["ABORTED"].error_class == "ABORTED"
    hygiene = ProbeResult.from_json({"name": "hygiene", "result": RESULTS["hygiene"]}).result
    assert isinstance(hygiene, HygieneFigures)
    assert [(c.accepted, c.error_class) for c in hygiene.cases] == [(True, None), (False, "INVALID_ARGUMENT")]


def test_an_unknown_probe_and_an_unsupported_one_keep_what_they_hold() -> None:
    unknown = {"name": "newer", "result": {"b": 1, "a": [1, 2]}}
    probe = ProbeResult.from_json(unknown)
    assert type(probe.result) is ProbeFigures and probe.result.extra == {"b": 1, "a": [1, 2]}
    assert probe.to_json() == unknown
    unsupported = {"name": "fanout", "backend": "bigtable", "unsupported": "no secondary indexes"}
    probe = ProbeResult.from_json(unsupported)
    assert probe.result is None and probe.unsupported == "no secondary indexes" and probe.to_json() == unsupported
    assert ProbeResult.from_json({"name": "batch", "result": None}).to_json() == {"name": "batch", "result": None}


@pytest.mark.parametrize(("probe", "message"), [
    ({"name": "contention", "result": {**RESULTS["contention"], "latency_ms": {"p50": "fast"}}},
     "cells.c00.probe.result.latency_ms.p50: expected a number, got a string"),
    ({"name": "hygiene", "result": {"cases": [{"case": "x", "accepted": "yes"}]}},
     "cells.c00.probe.result.cases[0].accepted: expected a boolean, got a string"),
    ({"name": "batch", "result": [1, 2]}, "cells.c00.probe.result: expected an object, got a list"),
    ({"result": {}}, "cells.c00.probe: missing name"),
])
def test_a_misshapen_probe_is_named_in_the_summary(probe: dict[str, Any], message: str) -> None:
    with pytest.raises(DocError) as err:
        RunSummary.from_json({"cells": {"c00": {"probe": probe}}}, where="")
    assert str(err.value).endswith(message)
