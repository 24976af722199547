from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
import pytest

from keyramp.cli._keyspace import register
from keyramp.core._errors import UsageError
from keyramp.core._types import key_sort_text
from keyramp.keyspace import run_keyspace

N = 6000


def _write_run(root: Path) -> Path:
    run = root / "20261121T140700123Z-keyspace-1a2b"
    run.mkdir(parents=True)
    cells = [
        {
            "id": "c00-datastore-sequential",
            "backend": "datastore",
            "strategy": "sequential",
            "time_scale": 100.0,
            "duration_s": 30.0,
        },
        {
            "id": "c01-datastore-random",
            "backend": "datastore",
            "strategy": "random",
            "time_scale": 100.0,
            "duration_s": 30.0,
        },
    ]
    (run / "manifest.json").write_text(json.dumps({"schema": 1, "run_id": run.name, "cells": cells}), encoding="utf-8")
    rng = np.random.default_rng(3)
    t = np.linspace(0, 30, N, endpoint=False)
    with (run / "keys.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["cell", "t", "op", "key"])
        for i in range(N):
            w.writerow([cells[0]["id"], f"{t[i]:.4f}", "insert", key_sort_text(i + 1)])
            w.writerow([cells[1]["id"], f"{t[i]:.4f}", "insert", f"{int(rng.integers(0, 2**62)):016x}"])
    # Every operation sampled (200 ops/s for 30 s), scheduled at 2,000 ops/s (time-scaled).
    timeline = [{"t": s, "target": 2000.0, "achieved": 200.0} for s in range(30)]
    summary = {"schema": 1, "run_id": run.name, "status": "complete", "cells": {
        cell["id"]: {"backend": cell["backend"], "strategy": cell["strategy"], "operations": {"insert": {"count": N}},
                     "total": {"count": N}, "target_ops_per_s": timeline} for cell in cells}}
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    run = _write_run(tmp_path_factory.mktemp("results"))
    return run, run_keyspace(run, buckets=200)


def test_writes_json_and_png_per_cell(analysed: tuple[Path, dict]) -> None:
    run, _ = analysed
    for cell in ("c00-datastore-sequential", "c01-datastore-random"):
        doc = json.loads((run / "keyspace" / f"{cell}.json").read_text(encoding="utf-8"))
        counts = np.asarray(doc["counts"])
        assert counts.shape == (30, 200) and counts.sum() == N
        assert len(doc["bucket_labels"]) == len(doc["bucket_edges"]) == 201
        assert doc["model"]["modelled"] is True and len(doc["model"]["timeline"]["t"]) > 10
        png = (run / "keyspace" / f"{cell}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_sequential_vs_random_in_the_json(analysed: tuple[Path, dict]) -> None:
    _, results = analysed
    seq, rnd = results["c00-datastore-sequential"], results["c01-datastore-random"]
    assert seq["bucket_labels"][0] == key_sort_text(1) and seq["bucket_labels"][-1] == key_sort_text(N)
    counts = np.asarray(seq["counts"])
    # A diagonal: each second's ops sit in the bucket band of that second's keys.
    band_lo, band_hi = np.arange(30) * 200 // 30, (np.arange(30) + 1) * 200 // 30 + 1
    hot = counts.argmax(axis=1)
    assert ((hot >= band_lo) & (hot < band_hi)).all()
    assert (counts > 0).sum(axis=1).max() <= 9  # ~6.7 buckets a second, nothing elsewhere
    assert seq["metrics"]["moving_hotspot"] and not rnd["metrics"]["moving_hotspot"]
    # Rates come from summary.json's targets (2,000 ops/s), not the 200 samples/s.
    assert seq["model"]["timeline"]["offered"][5] == pytest.approx(2000.0)
    assert seq["model"]["final_throttled_fraction"] > 0.3  # one append point at 2,000 ops/s
    assert rnd["model"]["final_throttled_fraction"] < 0.05


def test_cli_prints_table_and_respects_out_and_cell(
    analysed: tuple[Path, dict], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = analysed
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(
        ["keyspace", str(run), "--cell", "c01-datastore-random", "--out", str(tmp_path), "--no-png"]
    )
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "c01-datastore-random" in out and "c00-datastore-sequential" not in out and "modelled" in out
    assert [p.name for p in tmp_path.iterdir()] == ["c01-datastore-random.json"]


def test_bad_input_is_a_usage_error(analysed: tuple[Path, dict], tmp_path: Path) -> None:
    run, _ = analysed
    with pytest.raises(UsageError, match="unknown cell"):
        run_keyspace(run, cell="c99-nope")
    with pytest.raises(UsageError, match="buckets"):
        run_keyspace(run, buckets=0)
    with pytest.raises(UsageError, match="no sampled keys"):
        run_keyspace(tmp_path)
