"""The forecast sub-document (keyramp/results/_forecast_doc.py): what the forecast writes reads back
typed and byte for byte, older shapes still read, and a misshapen field is named by its path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _synthetic import make_run

from keyramp.forecast import forecast_cell
from keyramp.forecast._text import forecast_line, forecast_short, keys_note
from keyramp.profile._profile import parse_profile
from keyramp.results._catalog import load_run
from keyramp.results._doc import DocError
from keyramp.results._forecast_doc import BandFigures, CellForecast, ParamBounds, as_forecast
from keyramp.results._summary import RunSummary

CELL = "c00-datastore-sequential"


def _profile(launch: dict[str, Any]) -> Any:
    profile = parse_profile({"name": "f", "backend": "firestore", "duration": "10s", "seed": 4,
                             "workload": {"ops": {"insert": 1.0}, "record_count": 500},
                             "keys": {"strategy": "sequential"}, "schedule": {"kind": "constant", "rate": 300},
                             "launch": launch})
    assert profile.launch is not None
    return profile


@pytest.fixture(scope="module")
def written() -> dict[str, dict[str, Any]]:
    """The two shapes the forecast writes: with a band, and without one (nothing to project)."""
    profile = _profile({"kind": "constant", "rate": 3000, "duration": "20m"})
    band = forecast_cell(backend="firestore", strategy="sequential", settings=profile, launch=profile.launch,
                         cell_summary={"operations": {"insert": {"count": 1000}}})
    # the recording contradicts the design and no keys were sampled: a verdict without a band, and why
    measured = {"samples": 3000, "hottest_1pct_share": 0.012, "append_points": None}
    blind = forecast_cell(backend="firestore", strategy="sequential", settings=profile, launch=profile.launch,
                          cell_summary={"operations": {"insert": {"count": 3000}}, "keyspace": measured},
                          cell_schedule=profile.cells[0].schedule, horizon_s=10.0)
    return {"band": band, "blind": blind}


def _summary_with(tmp_path: Path, forecasts: dict[str, dict[str, Any]]) -> Path:
    """A synthetic run whose first cells hold ``forecasts``, in order."""
    run_dir = make_run(tmp_path, seconds=3, seed=6)
    summary = json.loads((run_dir / "summary.json").read_text())
    for cell, fc in zip(summary["cells"].values(), forecasts.values(), strict=False):
        cell["forecast"] = fc
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return run_dir


def test_what_the_forecast_writes_reads_back_typed_and_byte_for_byte(tmp_path: Path,
                                                                       written: dict[str, dict[str, Any]]) -> None:
    band, blind = written["band"], written["blind"]
    assert "timeline" in band and "reason" in blind and "throttled_fraction" not in blind  # both shapes
    run = load_run(_summary_with(tmp_path, written))
    typed = run.summary
    assert typed is not None and run.raw_summary is not None
    assert json.dumps(typed.to_json()["cells"]) == json.dumps(run.raw_summary["cells"])  # keys, order, nulls
    fc = run.cell(CELL).forecast
    assert isinstance(fc, CellForecast) and fc.verdict == band["verdict"] and fc.modelled is True
    assert isinstance(fc.throttled_fraction, BandFigures) and fc.throttled_fraction.mid == band[
        "throttled_fraction"]["mid"]
    assert all(isinstance(p, ParamBounds) and p.low <= p.mid <= p.high for p in fc.params.values())
    assert fc.launch is not None and fc.launch.peak_ops_per_s == 3000 and fc.launch.kind == "constant"
    assert [s.param for s in fc.sensitivity] == [s["param"] for s in band["sensitivity"]]
    assert fc.timeline is not None and len(fc.timeline.t) == len(band["timeline"]["t"]) > 1
    no_band = next(c.forecast for c in typed.cells.values() if c.forecast is not None and c.forecast is not fc)
    assert no_band.throttled_fraction is None and no_band.reason == blind["reason"]
    assert no_band.projection is not None and no_band.projection.keys == "recorded"
    assert no_band.projection.check is not None and no_band.projection.check.agrees is False
    # the readers say the same of the typed document as of the mapping it was read from
    for doc, raw in ((fc, band), (no_band, blind)):
        assert (forecast_short(doc), forecast_line(doc), keys_note(doc)) == (
            forecast_short(raw), forecast_line(raw), keys_note(raw))


def test_an_older_forecast_still_reads_and_says_what_it_can(tmp_path: Path) -> None:
    # before params, timeline and stability (issue 8's writer); a cell without [launch] coverage
    old = {"modelled": True, "verdict": "hotspot", "deciding_param": None,
           "throttled_fraction": {"low": 0.4, "mid": 0.6, "high": 0.8},
           "launch": {"description": "constant 3000 ops/s for 20m"},
           "projection": {"keys": "regenerated", "why": "the design's own keys",
                          "check": {"measured_hottest_1pct_share": 0.9, "regenerated_hottest_1pct_share": 0.8}}}
    nothing = {"verdict": None, "reason": "no [launch] in the profile"}
    run = load_run(_summary_with(tmp_path, {"old": old, "nothing": nothing}))
    typed = run.summary
    assert typed is not None and run.raw_summary is not None
    assert json.dumps(typed.to_json()["cells"]) == json.dumps(run.raw_summary["cells"])
    fc, none = (c.forecast for c in typed.cells.values() if c.forecast is not None)
    assert fc.params == {} and fc.timeline is None and fc.stability is None and fc.sensitivity == []
    assert fc.projection is not None and fc.projection.check is not None and fc.projection.check.agrees is None
    assert forecast_short(fc) == "hotspot 40 %–80 %" and "constant 3000 ops/s for 20m" in forecast_line(fc)
    assert none.verdict is None and forecast_line(none) == "forecast at the launch: no [launch] in the profile"


@pytest.mark.parametrize(("part", "value", "problem"), [
    (("throttled_fraction", "mid"), "60 %", "throttled_fraction.mid: expected a number, got a string"),
    (("sensitivity", 0, "low", "verdict"), 3, "sensitivity[0].low.verdict: expected a string, got a number"),
    (("timeline", "throttled", "mid", 1), None, "timeline.throttled.mid[1]: expected a number, got null"),
    (("launch", "nodes"), "three", "launch.nodes: expected a number, got a string"),
])
def test_a_misshapen_forecast_field_is_named_by_its_path(tmp_path: Path, written: dict[str, dict[str, Any]],
                                                         part: tuple[Any, ...], value: Any, problem: str) -> None:
    doc = json.loads(json.dumps(written["band"]))
    target = doc
    for key in part[:-1]:
        target = target[key]
    target[part[-1]] = value
    with pytest.raises(DocError) as exc:
        as_forecast(doc)
    assert str(exc.value) == f"forecast.{problem}"
    summary = {"schema": 1, "cells": {CELL: {"forecast": doc}}}
    with pytest.raises(DocError, match=f"^RunSummary.{re.escape(f'cells.{CELL}.forecast.{problem}')}$"):
        RunSummary.from_json(summary)
