"""Issue #5, done-when 6: hotspot metrics on a REAL run (runner + Locust + Bigtable emulator).

Sequential and timestamp-first keys append past the end of the preloaded range, so
nearly all inserts land in the hottest 1 % of the range that exists when they happen;
random and hashed-prefix keys spread over it. The key range is rebuilt from the profile
(preloaded keys are a pure function of the insert index), so the run's ``summary.json``
and ``keyramp keyspace RUN`` (from the manifest) must agree.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _designs import diagonal_line
from _runs import emulator_env, keyramp, load, only_run_dir, write_profile

from keyramp.keyspace import load_keys, params_for, run_keyspace, simulate
from keyramp.keyspace._analyse import reference_or_none
from keyramp.keyspace._load import key_positions
from keyramp.profile import read_settings

pytestmark = pytest.mark.emulator

MONOTONIC = ("sequential", "timestamp_first")
SPREAD = ("random", "hashed_prefix")
RATE = 400.0  # ops/s: far below a Bigtable tablet's modelled 10,000
INSERT_SHARE = 0.9


@pytest.fixture(scope="module")
def run_dir(bigtable_emulator, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("keyspace-runs")
    profile = write_profile(
        tmp / "p.toml",
        {"name": "hotspots", "backend": "bigtable", "duration": "4s", "seed": 11},
        workload={"ops": {"insert": INSERT_SHARE, "read": 1 - INSERT_SHARE}, "record_count": 3000,
                  "key_samples_per_s": 2000},
        keys={"strategy": [*MONOTONIC, *SPREAD]},
        # No warm-up (the default is 2 s a cell): nothing here is a latency, and the key
        # stream's shape does not depend on a warm emulator.
        schedule={"kind": "constant", "rate": RATE, "warmup": "0s"},
    )
    result = keyramp("run", str(profile), "--out", str(tmp / "out"), "--quiet", env=emulator_env(bigtable_emulator))
    assert result.returncode == 0, result.stderr[-2000:]
    return only_run_dir(tmp / "out")


def _cells(run_dir: Path) -> dict[str, dict]:
    summary = load(run_dir, "summary.json")
    return {cell["strategy"]: {**cell["keyspace"], "id": cell_id} for cell_id, cell in summary["cells"].items()}


def test_monotonic_cells_are_a_moving_hotspot_near_one(run_dir: Path) -> None:
    cells = _cells(run_dir)
    for name in MONOTONIC:
        ks = cells[name]
        assert ks["range_from"] == "profile" and ks["range_keys"] > 3000, (name, ks)
        # Inserts (90 %) sit past the end of the range existing at each time bin's start;
        # the reads (10 %) spread over it: the hottest 1 % takes ≈ 0.9 + 0.1 × 1 %.
        assert ks["hottest_1pct_share"] >= 0.8, (name, ks)
        assert ks["moving_hotspot"] is True and ks["append_fraction"] > 0.5, (name, ks)
        assert ks["gini"] > 0.8, (name, ks)


def test_spread_cells_are_near_uniform(run_dir: Path) -> None:
    cells = _cells(run_dir)
    for name in SPREAD:
        ks = cells[name]
        assert ks["range_from"] == "profile", (name, ks)
        assert ks["hottest_1pct_share"] <= 0.05, (name, ks)
        assert ks["moving_hotspot"] is False and ks["append_fraction"] < 0.05, (name, ks)
        assert ks["entropy_norm"] > 0.9 and ks["gini"] < 0.35, (name, ks)


def test_the_measured_heatmap_draws_key_visualizers_diagonal_line_for_sequential_keys(run_dir: Path) -> None:
    """Key Visualizer's published pattern (a strictly increasing key: one bright diagonal line),
    held against the heatmap of what the emulator run really wrote (docs/keyspace-model.md, validation)."""
    from keyramp.keyspace import cell_heatmap
    from keyramp.results._catalog import load_run

    run, cells = load_run(run_dir), _cells(run_dir)
    line = {name: diagonal_line(cell_heatmap(run, cells[name]["id"], buckets=100, time_bins=8)["counts"])
            for name in ("sequential", "random")}
    assert line["sequential"][0] >= 0.9 and line["sequential"][1] >= 0.8, line
    assert abs(line["random"][0]) < 0.6 and line["random"][1] < 0.3, line


def test_model_at_the_run_rate_predicts_no_throttling(run_dir: Path) -> None:
    # 400 ops/s is below the modelled split threshold (6,000) and capacity (10,000) of one
    # Bigtable tablet: the model must keep one tablet and predict no throttling for every
    # strategy, with the whole load on that tablet.
    for name, ks in _cells(run_dir).items():
        model = ks["model"]
        assert model["modelled"] is True, name
        assert model["max_throttled_fraction"] == 0.0 and model["peak_tablets"] == 1, (name, model)
        assert model["max_tablet_load_ops_per_s"] == pytest.approx(RATE), (name, model)


def test_model_above_capacity_throttles_only_the_monotonic_keys(run_dir: Path) -> None:
    # The same sampled streams at 2,000 writes/s on the serverless parameters (500 ops/s a
    # tablet), stretched to 20 minutes of schedule. Spread keys split to >= 4 tablets and
    # stop throttling; appends keep loading the newest tablet. ~1,500 samples over 20
    # minutes is sparse (a stalled second leaves steps empty, where the model falls back to
    # the long-window shape), so the monotonic bound is loose: measured 0.21-0.57.
    cells = _cells(run_dir)
    manifest = load(run_dir, "manifest.json")
    for name, ks in cells.items():
        ck = load_keys(run_dir, cell=ks["id"])[ks["id"]]
        ref = reference_or_none(settings=read_settings(manifest["profile"]), backend="bigtable", strategy=name,
                                samples=ck, sample_rate=1.0)
        kp = key_positions(ck.key, reference=ref)
        tl = simulate(kp.pos, ck.t, rate_fn=lambda s: 2000.0, time_scale=1200.0 / float(ck.t[-1]),
                      params=params_for("firestore"), duration_s=1200.0)
        late = float(tl.throttled[len(tl.t) // 2 :].mean())
        if name in MONOTONIC:
            assert late > 0.1, (name, tl.throttled.round(2).tolist())
        else:
            assert late < 0.01 and tl.tablets[-1] >= 4, (name, tl.throttled.round(2).tolist())


def test_keyspace_cli_rebuilds_the_same_range_from_the_manifest(run_dir: Path, tmp_path: Path) -> None:
    results = run_keyspace(run_dir, out_dir=tmp_path, png=False)
    cells = _cells(run_dir)
    for name, ks in cells.items():
        doc = results[ks["id"]]
        assert doc["metrics"]["range_from"] == "profile"
        for field in ("hottest_1pct_share", "gini", "append_fraction", "moving_hotspot"):
            assert doc["metrics"][field] == pytest.approx(ks[field]), (name, field)
        counts = np.asarray(doc["counts"])
        if name in MONOTONIC:
            # Heatmap (end-of-cell range): preloaded keys at the top get only reads; the
            # appended tail below them takes the inserts.
            top = counts[:, : int(doc["buckets"] * 0.5)].sum()
            assert top < 0.2 * counts.sum(), name
        labels = doc["bucket_labels"]
        assert labels == sorted(labels, key=lambda s: s.encode()) and len(set(labels)) > 100
    assert json.loads((tmp_path / f"{cells['random']['id']}.json").read_text())["metrics"]["samples"] > 0
