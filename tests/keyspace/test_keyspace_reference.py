"""The key range a cell ran against: warm-up inserts belong to it (keyspace/_reference.py)."""

from __future__ import annotations

import numpy as np

from keyramp.keyspace._analyse import analyse_samples
from keyramp.keyspace._load import CellKeys
from keyramp.keyspace._reference import existing_before
from keyramp.profile import Profile
from keyramp.profile._profile import parse_profile
from keyramp.workload._workload import CellWorkload

RECORDS, WARMUP, MEASURED = 500, 2_000, 700


def _profile() -> Profile:
    return parse_profile({"name": "w", "backend": "datastore", "duration": "10s",
                          "workload": {"ops": {"insert": 0.5, "read": 0.5}, "record_count": RECORDS},
                          "keys": {"strategy": "sequential"},
                          "schedule": {"kind": "constant", "rate": 140}})


def _samples(profile: Profile) -> CellKeys:
    """A sequential cell after a warm-up: inserts append, reads are uniform over every existing record."""
    wl = CellWorkload(backend="datastore", strategy="sequential", settings=profile)
    rng = np.random.default_rng(5)
    t = np.linspace(0.0, 10.0, 2 * MEASURED, endpoint=False)
    keys, ops = [], []
    inserted = RECORDS + WARMUP
    for i in range(len(t)):
        if i % 2 == 0:
            keys.append(wl.key_of(inserted))
            inserted += 1
            ops.append(b"insert")
        else:
            keys.append(wl.key_of(int(rng.integers(0, inserted))))
            ops.append(b"read")
    from keyramp.core._types import key_sort_text

    return CellKeys(cell="c", t=t, op=np.array(ops), key=np.array([key_sort_text(k).encode() for k in keys]))


def test_warmup_inserts_are_part_of_the_range() -> None:
    profile = _profile()
    samples = _samples(profile)
    kw = dict(settings=profile, backend="datastore", strategy="sequential", total_count=len(samples),
              time_scale=1.0, rate_fn=None)
    kp0, _, without, _ = analyse_samples(samples, **kw)
    kp1, _, with_warmup, _ = analyse_samples(samples, existing=RECORDS + WARMUP, **kw)
    reads = samples.op == b"read"

    def busiest_read_bucket(pos: np.ndarray) -> float:
        return float(np.bincount((pos[reads] * 100).astype(int), minlength=100).max() / reads.sum())

    # Reads of the 2,000 warm-up records (most reads) had no reference keys of their own and
    # piled into one slot: a fake static hotspot.
    assert busiest_read_bucket(kp0.pos) > 0.5
    assert busiest_read_bucket(kp1.pos) < 0.05  # uniform reads look uniform (1 % each, plus noise)
    assert without["gini"] > with_warmup["gini"] + 0.1
    # The appends (half the ops) stay the one real, moving hotspot.
    assert 0.45 < with_warmup["hottest_1pct_share"] < 0.6
    assert with_warmup["append_points"] == 1


def test_existing_before_counts_or_estimates_the_warmup() -> None:
    profile = _profile()
    cell = profile.cells[0]
    assert existing_before({"warmup_inserts": 123, "warmup_s": 10.0}, profile, cell.schedule) == RECORDS + 123
    # Without the runner's count (older runs, distributed cells): warm-up seconds × start rate × inserts/op.
    assert existing_before({"warmup_s": 10.0}, profile, cell.schedule) == RECORDS + 700
    assert existing_before({}, profile, cell.schedule) == RECORDS


def test_hot_window_is_reported_in_ops_per_s_against_the_capacity_band() -> None:
    profile = _profile()
    samples = _samples(profile)
    _, _, m, _ = analyse_samples(samples, settings=profile, backend="datastore", strategy="sequential",
                                 total_count=1400, time_scale=1.0, rate_fn=None, existing=RECORDS + WARMUP,
                                 duration_s=10.0)
    assert m["hottest_1pct_ops_per_s"] == round(m["hottest_1pct_share"] * 140.0, 1)
    band = m["tablet_capacity_ops_per_s"]
    assert band["modelled"] is True and band["low"] <= band["mid"] <= band["high"] and band["source"].startswith("https://")
    assert m["hot_window_vs_capacity"] == "below the band"  # ~75 ops/s on the hot range at the emulator's rate
