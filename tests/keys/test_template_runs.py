"""Issue 17, done-when 2: every best-practice key format, written as a template, runs on its
store (real run, Bigtable emulator), and the key-space analysis sees what the format implies.

The key-space metrics count append points (``keyspace.append_points``: ascending-time runs of
the sampled inserts in key order; None when keys land spread). A second count here reads the
analysis' own key range (``Reference``: the preloaded keys rebuilt from the profile plus the
sampled inserts): in key order, a run of consecutive *new* keys is a range the cell extended
at its end (or start), counted when it holds ≥ 1 % of the sampled inserts. ``timestamp``
extends one, ``shard(8)#timestamp`` eight, hashed keys none (new keys land between old ones).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _runs import assert_append_points, emulator_env, keyramp, load, only_run_dir, write_profile

from keyramp.keys import make_strategy
from keyramp.keys._distributions import zeta
from keyramp.keyspace import load_keys
from keyramp.keyspace._analyse import reference_or_none
from keyramp.keyspace._load import Reference
from keyramp.profile import read_settings

pytestmark = pytest.mark.emulator

FORMATS = ("timestamp", "shard(8)#timestamp", "device#reverse_ts", "hash4(user)#user", "tenant#yyyymmddhh#seq")
INSERT_SHARE = 0.9


@pytest.fixture(scope="module")
def run_dir(bigtable_emulator, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("template-runs")
    profile = write_profile(
        tmp / "p.toml",
        {"name": "templates", "backend": "bigtable", "duration": "3s", "seed": 5},
        workload={"ops": {"insert": INSERT_SHARE, "read": 1 - INSERT_SHARE}, "record_count": 2000,
                  "key_samples_per_s": 5000},
        keys={"strategy": list(FORMATS)},
        # No warm-up: nothing here is a latency, and five cells' warm-ups were 5 s of load.
        schedule={"kind": "constant", "rate": 400, "warmup": "0s"},
    )
    result = keyramp("run", str(profile), "--out", str(tmp / "out"), "--quiet", env=emulator_env(bigtable_emulator))
    assert result.returncode == 0, result.stderr[-2000:]
    return only_run_dir(tmp / "out")


def append_runs(ref: Reference) -> list[int]:
    """Lengths of the runs of consecutive new keys (in key order) holding ≥ 1 % of the new keys."""
    new = np.isfinite(ref.since)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], new.astype(np.int8), [0]])))
    lengths = edges[1::2] - edges[::2]
    return sorted((int(n) for n in lengths if n >= max(2, 0.01 * new.sum())), reverse=True)


@pytest.fixture(scope="module")
def analysed(run_dir: Path) -> dict[str, tuple[dict, list[int]]]:
    summary, manifest = load(run_dir, "summary.json"), load(run_dir, "manifest.json")
    out = {}
    for cell_id, cell in summary["cells"].items():
        ck = load_keys(run_dir, cell=cell_id)[cell_id]
        ref = reference_or_none(settings=read_settings(manifest["profile"]), backend="bigtable",
                                strategy=cell["strategy"], samples=ck, sample_rate=1.0)
        assert ref is not None
        out[cell["strategy"]] = (cell, append_runs(ref))
    return out


def test_every_format_ran_without_errors(analysed: dict[str, tuple[dict, list[int]]]) -> None:
    assert set(analysed) == set(FORMATS)
    for name, (cell, _) in analysed.items():
        ops = cell["operations"]
        assert ops["insert"]["count"] > 500 and ops["read"]["count"] > 30, name
        assert ops["insert"]["errors"] == 0 and ops["read"]["errors"] == 0, name
        assert cell["keyspace"]["range_from"] == "profile", name


def test_append_points_are_what_the_format_implies(analysed: dict[str, tuple[dict, list[int]]]) -> None:
    metric = {name: cell["keyspace"]["append_points"] for name, (cell, _) in analysed.items()}
    assert_append_points(analysed["timestamp"][0], 1)
    assert_append_points(analysed["shard(8)#timestamp"][0], 8)
    assert metric["hash4(user)#user"] is None  # spread: no append point
    # 1,000 devices, each prepending to its own rows: many small points (measured 76 and 102:
    # the metric's runs need a minimum length, so ~1 sampled insert per device merges runs).
    assert metric["device#reverse_ts"] is None or metric["device#reverse_ts"] > 20, metric
    points = {name: len(runs) for name, (_, runs) in analysed.items()}
    assert points["timestamp"] == 1
    assert points["shard(8)#timestamp"] == 8
    assert points["hash4(user)#user"] == 0
    # 1,000 devices: each new row goes in front of its device's rows, 1,000 tiny prepend
    # points, none holding 1 % of the inserts (the plan says 1,000; too many to be a hotspot).
    assert points["device#reverse_ts"] == 0
    assert make_strategy("device#reverse_ts").plan.append_points == 1000  # type: ignore[attr-defined]
    # tenant#…#seq: each tenant's range grows at its end; zipfian tenants make a few of them hot.
    runs = analysed["tenant#yyyymmddhh#seq"][1]
    inserts = analysed["tenant#yyyymmddhh#seq"][0]["operations"]["insert"]["count"]
    assert 3 <= len(runs) <= 40
    assert runs[0] / inserts == pytest.approx(1 / zeta(1000, 0.99), rel=0.35)  # the hottest tenant's share


def test_measured_hotspot_metrics_agree(analysed: dict[str, tuple[dict, list[int]]]) -> None:
    ks = {name: cell["keyspace"] for name, (cell, _) in analysed.items()}
    assert ks["timestamp"]["hottest_1pct_share"] >= 0.8 and ks["timestamp"]["moving_hotspot"] is True
    # Eight ranges share the inserts: the hottest bucket holds far less than one append point's
    # (≈ 0.9) and far more than hashed keys' (≈ 1/1,000). Measured 0.044 (cross-validated within
    # 50-sample time bins, so each shard's ~6 inserts a bin make it lower than 0.9/8).
    shard = ks["shard(8)#timestamp"]["hottest_bucket_share"]
    assert 10 * ks["hash4(user)#user"]["hottest_bucket_share"] < shard < ks["timestamp"]["hottest_bucket_share"] / 4
    assert ks["hash4(user)#user"]["hottest_1pct_share"] <= 0.05
    assert ks["hash4(user)#user"]["moving_hotspot"] is False and ks["device#reverse_ts"]["moving_hotspot"] is False
